"""A live agent for the live-route and microphone tests: a `ScriptedLiveModel` that

- echoes a text turn (`you said: …`);
- calls `weather` for a text turn mentioning the weather and answers `it is <sky>`;
- calls `pay` (which needs confirmation) for `pay <n>` and answers `paid <n>` once it ran;
- answers speech — the audio received before an `activity_end` / `audio_stream_end` — as a
  voice model does: the user's words as an input transcription, a `weather` call, then its
  answer as an output transcription and a chunk of audio, `It is clear. I heard <n> bytes.`
"""

from typing import Any

from rondo import Agent, FunctionTool
from rondo.models.live import LiveRequest, LiveResponse, Transcription
from rondo.testing import ScriptedLiveModel
from rondo.types import Blob, Content, FunctionCall, Part

HEARD = "what is the weather in Oslo"
_audio: list[int] = []
_spoken: list[int] = []  # the bytes heard by the voice turn waiting for its tool's answer


def _answer(request: LiveRequest) -> Any:
    content = request.content
    if content is None:  # the end of speech: answer the audio heard since the last one
        _spoken.append(sum(_audio))
        _audio.clear()
        return [
            LiveResponse(input_transcription=Transcription(text=HEARD, finished=True)),
            FunctionCall(name="weather", args={"city": "Oslo"}),
        ]
    answered = [p.function_response for p in content.parts if p.function_response]
    if answered:
        response = answered[0]
        if response.name == "pay":
            return f"paid: {response.response['result']}"
        if _spoken:
            words = f"It is {response.response['sky']}. I heard {_spoken.pop()} bytes."
            voice = Blob(mime_type="audio/pcm;rate=24000", data=bytes(480))
            return [
                LiveResponse(output_transcription=Transcription(text=words, finished=True)),
                LiveResponse(content=Content(role="model", parts=[Part(inline_data=voice)])),
            ]
        return f"it is {response.response['sky']}"
    if "weather" in content.text:
        return FunctionCall(name="weather", args={"city": "Oslo"})
    if content.text.startswith("pay "):
        return FunctionCall(name="pay", args={"amount": int(content.text.split()[1])})
    return f"you said: {content.text}"


class _Model(ScriptedLiveModel):
    def __init__(self) -> None:
        super().__init__([_answer] * 10_000, name="talk-live")
        self.received = _Counting()


class _Counting(list[LiveRequest]):
    """Counts the audio bytes each request brings, for `I heard <n> bytes`."""

    def append(self, request: LiveRequest) -> None:
        if request.blob is not None:
            _audio.append(len(request.blob.data))
        super().append(request)


def weather(city: str) -> dict[str, str]:
    """The sky over `city`."""
    return {"city": city, "sky": "clear"}


def pay(amount: int) -> str:
    """Pay `amount` (asks the user first)."""
    return f"{amount} paid"


root_agent = Agent(
    name="talker",
    model=_Model(),
    instruction="Talk.",
    tools=[weather, FunctionTool(pay, require_confirmation=True)],
)
