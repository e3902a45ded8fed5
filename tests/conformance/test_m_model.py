"""SPEC M — the model boundary (M1–M5)."""

from __future__ import annotations

from typing import Any

import pytest

import rondo
from rondo import Agent, Content, FunctionCall, Part, Plugin, RunConfig, Runner
from rondo.context import CallbackContext
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel

from ._support import APP, StreamModel, chunk, collect, stored


def lookup(city: str) -> dict[str, Any]:
    return {"city": city}


class Recorder(Plugin):
    """Logs every model hook; returns what `answers` says for a hook (default None)."""

    def __init__(self, log: list[str], answers: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.log = log
        self.answers = answers or {}

    async def before_model(
        self, ctx: CallbackContext, request: ModelRequest
    ) -> ModelResponse | None:
        self.log.append("plugin.before_model")
        return self._answer("before_model")

    async def after_model(
        self, ctx: CallbackContext, response: ModelResponse
    ) -> ModelResponse | None:
        self.log.append("plugin.after_model")
        return self._answer("after_model")

    async def on_model_error(
        self, ctx: CallbackContext, request: ModelRequest, error: Exception
    ) -> ModelResponse | None:
        self.log.append(f"plugin.on_model_error {error}")
        return self._answer("on_model_error")

    def _answer(self, hook: str) -> Any:
        value = self.answers.get(hook)
        if isinstance(value, BaseException):
            raise value
        return value


def _callbacks(log: list[str], answers: dict[str, Any] | None = None) -> dict[str, Any]:
    answers = answers or {}

    def answer(hook: str) -> Any:
        value = answers.get(hook)
        if isinstance(value, BaseException):
            raise value
        return value

    def before_model(ctx: CallbackContext, request: ModelRequest) -> Any:
        log.append("agent.before_model")
        return answer("before_model")

    async def after_model(ctx: CallbackContext, response: ModelResponse) -> Any:
        log.append("agent.after_model")
        return answer("after_model")

    def on_model_error(ctx: CallbackContext, request: ModelRequest, error: Exception) -> Any:
        log.append(f"agent.on_model_error {error}")
        return answer("on_model_error")

    return {
        "before_model_callback": before_model,
        "after_model_callback": after_model,
        "on_model_error_callback": on_model_error,
    }


def _logging_model(log: list[str], items: list[Any]) -> ScriptedModel:
    def wrap(item: Any) -> Any:
        def answer(request: ModelRequest) -> Any:
            log.append("model")
            return item

        return answer

    return ScriptedModel([wrap(i) for i in items])


# -- M1 --------------------------------------------------------------------------------------


async def test_m1_hook_order_around_a_successful_call():
    log: list[str] = []
    agent = Agent(name="helper", model=_logging_model(log, ["hi"]), **_callbacks(log))
    runner = Runner(agent=agent, app_name=APP, plugins=[Recorder(log)])
    events = await collect(runner, "go")
    assert log == [
        "plugin.before_model",
        "agent.before_model",
        "model",
        "plugin.after_model",
        "agent.after_model",
    ]
    assert events[0].text == "hi"


async def test_m1_hook_order_around_a_failed_call():
    log: list[str] = []
    agent = Agent(
        name="helper",
        model=_logging_model(log, [RuntimeError("boom")]),
        **_callbacks(log, {"on_model_error": ModelResponse(content=Content.model("recovered"))}),
    )
    runner = Runner(agent=agent, app_name=APP, plugins=[Recorder(log)])
    events = await collect(runner, "go")
    assert log == [
        "plugin.before_model",
        "agent.before_model",
        "model",
        "plugin.on_model_error boom",
        "agent.on_model_error boom",
        "plugin.after_model",
        "agent.after_model",
    ]
    assert events[0].text == "recovered"


async def test_m1_client_call_ids_are_assigned_before_after_model():
    seen: list[Any] = []

    def after(ctx: CallbackContext, response: ModelResponse) -> None:
        assert response.content is not None
        seen.extend(p.function_call.id for p in response.content.parts if p.function_call)

    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"}), "done"])
    agent = Agent(name="helper", model=model, tools=[lookup], after_model_callback=after)
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert len(seen) == 1
    assert isinstance(seen[0], str)
    assert seen[0].startswith("rondo-")
    assert events[0].get_function_calls()[0].id == seen[0]


async def test_m1_a_plugin_before_model_response_short_circuits_the_rest():
    log: list[str] = []
    cached = ModelResponse(content=Content.model("from cache"))
    model = _logging_model(log, ["never"])
    agent = Agent(name="helper", model=model, **_callbacks(log))
    runner = Runner(agent=agent, app_name=APP, plugins=[Recorder(log, {"before_model": cached})])
    events = await collect(runner, "go")
    assert log == ["plugin.before_model"]
    assert model.calls == 0
    assert events[0].text == "from cache"


async def test_m1_the_first_agent_callback_with_a_result_ends_the_list():
    log: list[str] = []

    def first(ctx: CallbackContext, request: ModelRequest) -> ModelResponse:
        log.append("first")
        return ModelResponse(content=Content.model("first wins"))

    def second(ctx: CallbackContext, request: ModelRequest) -> None:
        log.append("second")

    def after_one(ctx: CallbackContext, response: ModelResponse) -> ModelResponse:
        log.append("after_one")
        return ModelResponse(content=Content.model("after one wins"))

    def after_two(ctx: CallbackContext, response: ModelResponse) -> None:
        log.append("after_two")

    model = ScriptedModel(["model text"])
    for callbacks, expected_log, expected_text in (
        ({"before_model_callback": [first, second]}, ["first"], "first wins"),
        ({"after_model_callback": [after_one, after_two]}, ["after_one"], "after one wins"),
    ):
        log.clear()
        agent = Agent(name="helper", model=model, **callbacks)
        events = await collect(Runner(agent=agent, app_name=APP), "go")
        assert log == expected_log
        assert events[0].text == expected_text


async def test_m1_a_plugin_after_model_or_on_model_error_result_short_circuits_the_agent():
    log: list[str] = []
    agent = Agent(name="helper", model=_logging_model(log, ["original"]), **_callbacks(log))
    replaced = ModelResponse(content=Content.model("plugin version"))
    runner = Runner(agent=agent, app_name=APP, plugins=[Recorder(log, {"after_model": replaced})])
    events = await collect(runner, "go")
    assert log == ["plugin.before_model", "agent.before_model", "model", "plugin.after_model"]
    assert events[0].text == "plugin version"

    log.clear()
    agent = Agent(
        name="helper", model=_logging_model(log, [RuntimeError("down")]), **_callbacks(log)
    )
    recovered = ModelResponse(content=Content.model("plugin recovered"))
    runner = Runner(
        agent=agent, app_name=APP, plugins=[Recorder(log, {"on_model_error": recovered})]
    )
    events = await collect(runner, "go")
    assert log == [
        "plugin.before_model",
        "agent.before_model",
        "model",
        "plugin.on_model_error down",
        "plugin.after_model",
        "agent.after_model",
    ]
    assert events[0].text == "plugin recovered"


async def test_m1_a_hook_raising_an_error_short_circuits_and_ends_the_run():
    log: list[str] = []
    model = _logging_model(log, ["never"])
    agent = Agent(name="helper", model=model, **_callbacks(log))
    runner = Runner(
        agent=agent,
        app_name=APP,
        plugins=[Recorder(log, {"before_model": PermissionError("policy says no")})],
    )
    with pytest.raises(PermissionError, match="policy says no"):
        await collect(runner, "go")
    assert log == ["plugin.before_model"]
    assert model.calls == 0

    log.clear()
    agent = Agent(
        name="helper",
        model=_logging_model(log, ["text"]),
        **_callbacks(log, {"after_model": ValueError("bad response")}),
    )
    with pytest.raises(ValueError, match="bad response"):
        await collect(Runner(agent=agent, app_name=APP), "go")
    assert log == ["agent.before_model", "model", "agent.after_model"]


# -- M2 --------------------------------------------------------------------------------------


async def test_m2_before_model_may_mutate_the_request_and_continue():
    def tune(ctx: CallbackContext, request: ModelRequest) -> None:
        request.config.max_output_tokens = 1024
        request.append_instruction("EXTRA-RULE")
        request.contents = [*request.contents, Content.user("injected")]

    model = ScriptedModel(["ok"])
    agent = Agent(name="helper", model=model, before_model_callback=tune)
    await collect(Runner(agent=agent, app_name=APP), "go")
    request = model.requests[0]
    assert request.config.max_output_tokens == 1024
    assert request.config.system_instruction is not None
    assert request.config.system_instruction.endswith("EXTRA-RULE")
    assert [c.text for c in request.contents] == ["go", "injected"]


async def test_m2_a_before_model_response_skips_model_and_after_model_but_not_the_step():
    after_seen: list[str] = []
    tool_runs: list[str] = []
    replaced: list[bool] = []

    def replay(ctx: CallbackContext, request: ModelRequest) -> ModelResponse | None:
        if replaced:
            return None
        replaced.append(True)
        return ModelResponse(
            content=Content(
                role="model",
                parts=[Part(function_call=FunctionCall(name="track", args={"city": "Oslo"}))],
            )
        )

    def after(ctx: CallbackContext, response: ModelResponse) -> None:
        after_seen.append(response.content.text if response.content else "")

    def track(city: str) -> dict[str, Any]:
        tool_runs.append(city)
        return {"city": city}

    model = ScriptedModel(["the real model"])
    agent = Agent(
        name="helper",
        model=model,
        tools=[track],
        before_model_callback=replay,
        after_model_callback=after,
    )
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    # The replaced response became an event (with a client call id) and its call ran.
    call = events[0].get_function_calls()[0]
    assert call.name == "track"
    assert call.id is not None
    assert events[0].author == "helper"
    assert tool_runs == ["Oslo"]
    assert events[1].get_function_responses()[0].id == call.id
    # The model ran once (the second step), after_model only for the real response.
    assert model.calls == 1
    assert after_seen == ["the real model"]
    assert events[2].text == "the real model"


# -- M3 --------------------------------------------------------------------------------------


async def test_m3_on_model_error_may_return_a_replacement():
    def recover(ctx: CallbackContext, request: ModelRequest, error: Exception) -> ModelResponse:
        return ModelResponse(content=Content.model(f"sorry: {error}"))

    model = ScriptedModel([TimeoutError("slow provider")])
    agent = Agent(name="helper", model=model, on_model_error_callback=recover)
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert [e.text for e in events] == ["sorry: slow provider"]
    assert events[0].error_code is None


async def test_m3_none_keeps_the_original_error():
    original = TimeoutError("slow provider")
    seen: list[Exception] = []

    def observe(ctx: CallbackContext, request: ModelRequest, error: Exception) -> None:
        seen.append(error)

    agent = Agent(name="helper", model=ScriptedModel([original]), on_model_error_callback=observe)
    runner = Runner(agent=agent, app_name=APP)
    with pytest.raises(TimeoutError) as info:
        await collect(runner, "go")
    assert info.value is original
    assert seen == [original]
    session = await stored(runner)
    assert [(e.author, e.error_code, e.error_message) for e in session.events] == [
        ("user", None, None),
        # Not a rondo error: its text is not kept (it may hold paths or hosts), its type is.
        (
            "helper",
            "TimeoutError",
            "the run failed with TimeoutError (the application's log has the details)",
        ),
    ]


async def test_m3_an_error_from_the_hook_replaces_the_original():
    def raising(ctx: CallbackContext, request: ModelRequest, error: Exception) -> None:
        raise rondo.ModelError(f"wrapped: {error}") from error

    def returning(ctx: CallbackContext, request: ModelRequest, error: Exception) -> Any:
        return LookupError(f"translated: {error}")

    for hook, expected, text in (
        (raising, rondo.ModelError, "wrapped: provider 500"),
        (returning, LookupError, "translated: provider 500"),
    ):
        model = ScriptedModel([RuntimeError("provider 500")])
        agent = Agent(name="helper", model=model, on_model_error_callback=hook)
        with pytest.raises(expected, match=text):
            await collect(Runner(agent=agent, app_name=APP), "go")


async def test_m3_scripted_model_run_past_its_script_fails_with_a_clear_error():
    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"})], name="tiny")
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    with pytest.raises(rondo.ScriptExhaustedError) as info:
        await collect(runner, "go")
    message = str(info.value)
    assert "'tiny'" in message
    assert "called 2 times" in message
    assert "only 1 items" in message
    assert isinstance(info.value, rondo.RondoError)


# -- M4 --------------------------------------------------------------------------------------


async def test_m4_after_model_runs_for_every_streamed_response():
    seen: list[tuple[bool, str]] = []

    def after(ctx: CallbackContext, response: ModelResponse) -> None:
        seen.append((response.partial, response.content.text if response.content else ""))

    model = ScriptedModel([[chunk("Hel"), chunk("lo")]])
    agent = Agent(name="helper", model=model, after_model_callback=after)
    events = await collect(
        Runner(agent=agent, app_name=APP), "go", run_config=RunConfig(streaming_mode="sse")
    )
    assert seen == [(True, "Hel"), (True, "lo"), (False, "Hello")]
    assert [(e.partial, e.text) for e in events] == seen


async def test_m4_after_model_sees_recovered_responses_too():
    seen: list[tuple[bool, str]] = []

    async def stream_then_fail(request: ModelRequest, stream: bool):
        yield chunk("partial text")
        raise ConnectionResetError("stream broke")

    def after(ctx: CallbackContext, response: ModelResponse) -> None:
        seen.append((response.partial, response.content.text if response.content else ""))

    def recover(ctx: CallbackContext, request: ModelRequest, error: Exception) -> ModelResponse:
        return ModelResponse(content=Content.model("recovered answer"))

    agent = Agent(
        name="helper",
        model=StreamModel(stream_then_fail),
        after_model_callback=after,
        on_model_error_callback=recover,
    )
    events = await collect(
        Runner(agent=agent, app_name=APP), "go", run_config=RunConfig(streaming_mode="sse")
    )
    assert seen == [(True, "partial text"), (False, "recovered answer")]
    assert [(e.partial, e.text) for e in events] == seen


# -- M5 --------------------------------------------------------------------------------------


async def test_m5_provider_error_codes_are_not_exceptions():
    hooks: list[str] = []

    def on_error(ctx: CallbackContext, request: ModelRequest, error: Exception) -> None:
        hooks.append("on_model_error")

    def after(ctx: CallbackContext, response: ModelResponse) -> None:
        hooks.append(f"after_model {response.error_code}")

    model = ScriptedModel(
        [ModelResponse(error_code="SAFETY", error_message="blocked by the provider's filter")]
    )
    agent = Agent(
        name="helper", model=model, on_model_error_callback=on_error, after_model_callback=after
    )
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner, "go")
    # A response carrying an error code is a record, not a raised error.
    assert hooks == ["after_model SAFETY"]
    assert len(events) == 1
    assert events[0].content is None
    assert events[0].error_code == "SAFETY"
    assert events[0].error_message == "blocked by the provider's filter"
    assert events[0].is_final_response()
    session = await stored(runner)
    assert session.events[-1].error_code == "SAFETY"


async def test_m5_raised_exceptions_go_through_on_model_error():
    hooks: list[str] = []

    def on_error(ctx: CallbackContext, request: ModelRequest, error: Exception) -> None:
        hooks.append(f"on_model_error {type(error).__name__}")

    model = ScriptedModel([ConnectionError("network down")])
    agent = Agent(name="helper", model=model, on_model_error_callback=on_error)
    with pytest.raises(ConnectionError, match="network down"):
        await collect(Runner(agent=agent, app_name=APP), "go")
    assert hooks == ["on_model_error ConnectionError"]
