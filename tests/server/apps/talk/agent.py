"""A live agent for the live-route tests: a `ScriptedLiveModel` that echoes each text turn
(`you said: …`), calls `weather` for a turn mentioning the weather and answers its result,
and answers `heard <n> bytes` to the audio received before an `activity_end`."""

from typing import Any

from rondo import Agent
from rondo.models.live import LiveRequest, LiveResponse, Transcription
from rondo.testing import ScriptedLiveModel
from rondo.types import FunctionCall

_audio: list[int] = []


def _answer(request: LiveRequest) -> Any:
    content = request.content
    if content is None:  # activity_end: answer the audio heard since the last one
        heard = sum(_audio)
        _audio.clear()
        return [
            LiveResponse(input_transcription=Transcription(text="hello", finished=True)),
            f"heard {heard} bytes",
        ]
    answered = [p.function_response for p in content.parts if p.function_response]
    if answered:
        return f"it is {answered[0].response['sky']}"
    if "weather" in content.text:
        return FunctionCall(name="weather", args={"city": "Oslo"})
    return f"you said: {content.text}"


class _Model(ScriptedLiveModel):
    def __init__(self) -> None:
        super().__init__([_answer] * 10_000, name="talk-live")
        self.received = _Counting()


class _Counting(list[LiveRequest]):
    """Counts the audio bytes each request brings, for `heard <n> bytes`."""

    def append(self, request: LiveRequest) -> None:
        if request.blob is not None:
            _audio.append(len(request.blob.data))
        super().append(request)


def weather(city: str) -> dict[str, str]:
    """The sky over `city`."""
    return {"city": city, "sky": "clear"}


root_agent = Agent(name="talker", model=_Model(), instruction="Talk.", tools=[weather])
