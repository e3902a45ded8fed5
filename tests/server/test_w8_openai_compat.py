"""SPEC W8 / issue 22 item 4: an OpenAI-compatible chat route, driven by the `openai` SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._require import require_module

openai = require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def sdk(client: httpx.Client) -> Iterator[Any]:
    with openai.OpenAI(base_url=f"{client.base_url}/v1", api_key="unused", max_retries=0) as opened:
        yield opened


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _events(client: httpx.Client, app: str, session: str) -> list[dict[str, Any]]:
    answer = client.get(f"/apps/{app}/users/user/sessions/{session}")
    assert answer.status_code == 200, answer.text
    return answer.json()["events"]


def test_w8_openai_models_are_the_apps(sdk: Any) -> None:
    ids = [m.id for m in sdk.models.list()]
    assert {"helper", "chat", "bank"} <= set(ids)
    assert ids == sorted(ids)


def test_w8_openai_completion_is_the_agents_answer(sdk: Any, client: httpx.Client) -> None:
    answer = sdk.chat.completions.create(
        model="helper", messages=[_user("ham")], metadata={"session_id": "s1"}
    )
    assert answer.object == "chat.completion"
    assert answer.model == "helper"
    (choice,) = answer.choices
    assert choice.message.role == "assistant"
    assert choice.message.content == 'Done: {"note": "ham"}'
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None  # the agent's calls are rondo's own: hidden
    # The session holds the history: the next request's new turn is all that is added.
    history = [_user("ham"), {"role": "assistant", "content": "x"}, _user("jam")]
    sdk.chat.completions.create(model="helper", messages=history, metadata={"session_id": "s1"})
    said = [
        e["content"]["parts"][0]["text"]
        for e in _events(client, "helper", "s1")
        if e["author"] == "user"
    ]
    assert said == ["ham", "jam"]


def test_w8_openai_stream_is_chunks_then_done(sdk: Any) -> None:
    stream = sdk.chat.completions.create(
        model="helper",
        messages=[_user("ham")],
        stream=True,
        stream_options={"include_usage": True},
        user="streamer",
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == 'Done: {"note": "ham"}'
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["stop"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None


def test_w8_openai_without_a_session_each_request_is_new_with_its_history(
    sdk: Any, client: httpx.Client
) -> None:
    messages = [_user("a"), {"role": "assistant", "content": "b"}, _user("c")]
    answer = sdk.chat.completions.create(model="helper", messages=messages)
    assert answer.choices[0].message.content == 'Done: {"note": "c"}'
    sessions = client.get("/apps/helper/users/user/sessions").json()
    (seeded,) = sessions
    events = _events(client, "helper", seeded["id"])
    assert [(e["author"], e["content"]["parts"][0].get("text")) for e in events[:3]] == [
        ("user", "a"),
        ("helper", "b"),
        ("user", "c"),
    ]


def test_w8_openai_tool_calls_as_text_on_request(sdk: Any) -> None:
    answer = sdk.chat.completions.create(
        model="helper", messages=[_user("ham")], metadata={"tool_calls": "text"}
    )
    content = answer.choices[0].message.content
    assert content.startswith('[remember({"note": "ham"}) → {"note": "ham"}]\n')
    assert content.endswith('Done: {"note": "ham"}')


def test_w8_openai_pending_confirmation_says_how_to_answer(sdk: Any, client: httpx.Client) -> None:
    answer = sdk.chat.completions.create(model="bank", messages=[_user("100")], user="payer")
    (pending,) = client.get("/apps/bank/users/user/sessions/payer/pending").json()
    content = answer.choices[0].message.content
    assert f"/apps/bank/users/user/sessions/payer/pending/{pending['callId']}" in content


def test_w8_openai_errors_have_openais_shape(sdk: Any, client: httpx.Client) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        sdk.chat.completions.create(model="nope", messages=[_user("x")])
    assert missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as empty:
        sdk.chat.completions.create(model="helper", messages=[])
    assert empty.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as nothing:
        sdk.chat.completions.create(
            model="helper", messages=[{"role": "assistant", "content": "x"}]
        )
    assert "nothing to run" in nothing.value.body["message"]
    raw = client.post("/v1/chat/completions", content=b"{not json")
    assert raw.status_code == 400
    assert set(raw.json()["error"]) == {"message", "type", "param", "code"}
    # A run that fails: an error the SDK raises, in OpenAI's shape, with no server detail.
    with pytest.raises(openai.APIError) as failed:
        sdk.chat.completions.create(model="flaky", messages=[_user("x")])
    assert "/secret/path" not in str(failed.value)
    with pytest.raises(openai.APIError):
        list(sdk.chat.completions.create(model="flaky", messages=[_user("x")], stream=True))


def test_w8_openai_needs_the_token(launch: Any) -> None:
    with launch(auth_tokens={"tok": "alice"}) as http:
        base = f"{http.base_url}/v1"
        with (
            openai.OpenAI(base_url=base, api_key="wrong", max_retries=0) as anonymous,
            pytest.raises(openai.AuthenticationError),
        ):
            anonymous.chat.completions.create(model="helper", messages=[_user("x")])
        with openai.OpenAI(base_url=base, api_key="tok", max_retries=0) as alice:
            answer = alice.chat.completions.create(model="helper", messages=[_user("x")], user="s")
        assert answer.choices[0].message.content == 'Done: {"note": "x"}'
        assert (
            http.get(
                "/apps/helper/users/alice/sessions/s", headers={"Authorization": "Bearer tok"}
            ).status_code
            == 200
        )


def test_w8_openai_golden_frames_of_a_recorded_run(client: httpx.Client) -> None:
    body = {"model": "helper", "messages": [_user("ham")], "stream": True}
    answer = client.post("/v1/chat/completions", json=body)
    frames = answer.text.split("\n\n")
    assert frames[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(f.removeprefix("data: ")) for f in frames[:-2]]
    for chunk in chunks:
        chunk.pop("id")
        chunk.pop("created")
    assert chunks == json.loads((GOLDEN / "openai_helper.json").read_text())
