"""Issue 23 item 5: a run that fails (a model error nobody recovered, a raising hook) ends on a
stored record that names the error, so the failure survives a reload of the session — the web
UI rebuilds its conversation from the log, and the run reads `failed` there."""

from __future__ import annotations

import pytest

from rondo import Agent, Runner
from rondo.errors import ModelServerError
from rondo.sessions.run_log import runs_of
from rondo.testing import ScriptedModel
from tests.conformance._support import APP, SESSION, USER, collect


async def _session(runner: Runner):
    session = await runner.session_service.get_session(
        app_name=APP, user_id=USER, session_id=SESSION
    )
    assert session is not None
    return session


async def test_w4_a_model_error_is_stored_with_its_message() -> None:
    model = ScriptedModel([ModelServerError("the provider answered 503: overloaded"), "fine now"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    await runner.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    with pytest.raises(ModelServerError):
        await collect(runner, "hello")
    session = await _session(runner)
    last = session.events[-1]
    assert last.author == "helper"
    assert last.error_code == "ModelServerError"
    assert last.error_message == "the provider answered 503: overloaded"
    assert last.content is None
    assert last.invocation_id == session.events[0].invocation_id
    assert runs_of(session.events, session.pending)[0].status == "failed"
    # The next message runs as usual, and the error record is not sent to the model.
    events = await collect(runner, "again")
    assert events[-1].text == "fine now"
    sent = model.requests[-1].contents
    assert [c.text for c in sent] == ["hello", "again"]


async def test_w4_a_failure_is_recorded_once() -> None:
    """One record per failure, whatever raised it."""

    def boom(callback_context: object, llm_request: object) -> None:
        raise RuntimeError("a hook broke")

    agent = Agent(name="helper", model=ScriptedModel(["never"]), before_model_callback=boom)
    runner = Runner(agent=agent, app_name=APP)
    await runner.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    with pytest.raises(RuntimeError, match="a hook broke"):
        await collect(runner, "hello")
    session = await _session(runner)
    errors = [e for e in session.events if e.error_code]
    assert [e.error_code for e in errors] == ["RuntimeError"]
    # Another exception's text stays out of the log (it may hold paths or secrets).
    assert "a hook broke" not in (errors[0].error_message or "")
    assert "RuntimeError" in (errors[0].error_message or "")


async def test_d1_a_failed_run_still_resumes_from_where_it_failed() -> None:
    """The failure record says the run failed; an empty message resumes it (SPEC D1)."""
    model = ScriptedModel([ModelServerError("503"), "recovered"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    await runner.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    with pytest.raises(ModelServerError):
        await collect(runner, "hello")
    events = await collect(runner, None)
    assert [e.text for e in events] == ["recovered"]
    session = await _session(runner)
    assert len({e.invocation_id for e in session.events}) == 1
    assert runs_of(session.events, session.pending)[0].status == "completed"
