"""Guards for what a clean-up could break unnoticed (issue 19.4).

Each test fails when its trick or contract is removed: the exception tree drawn in
`rondo.errors` against its classes, the plugin hooks against `rondo.hooks.HookName`, the
mutable `Actions` draft against the frozen `EventActions`, and the performance settings the
server relies on (GC thresholds, route order, the records' string cache) — asserted as
configuration or call counts, never as timings.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import rondo.errors
from rondo.context import Actions
from rondo.events import Event, EventActions
from rondo.hooks import HOOK_NAMES
from rondo.plugins import Plugin, PluginManager

_DRAWN = re.compile(r"^(?P<indent>[\s│]*)[├└]── (?P<name>\w+)(?: \(also (?P<also>[\w, ]+)\))?")


def _drawn_tree() -> dict[str, tuple[str, set[str]]]:
    """name -> (drawn parent, the builtin bases named in "(also ...)")."""
    doc = rondo.errors.__doc__ or ""
    tree: dict[str, tuple[str, set[str]]] = {}
    stack: list[tuple[int, str]] = [(-1, "RondoError")]
    for line in doc.splitlines():
        match = _DRAWN.match(line)
        if match is None:
            continue
        depth = len(match["indent"])
        while stack[-1][0] >= depth:
            stack.pop()
        also = {a.strip() for a in (match["also"] or "").split(",") if a.strip()}
        tree[match["name"]] = (stack[-1][1], also)
        stack.append((depth, match["name"]))
    return tree


def _classes() -> dict[str, type[BaseException]]:
    return {
        name: cls
        for name, cls in vars(rondo.errors).items()
        if inspect.isclass(cls)
        and issubclass(cls, rondo.errors.RondoError)
        and cls is not rondo.errors.RondoError
        and cls.__module__ == "rondo.errors"
    }


def test_g4_errors_tree_drawn_equals_the_classes() -> None:
    tree = _drawn_tree()
    classes = _classes()
    assert sorted(tree) == sorted(classes), "draw every class of rondo.errors, and only those"
    for name, (parent, also) in tree.items():
        cls = classes[name]
        rondo_bases = [b for b in cls.__bases__ if issubclass(b, rondo.errors.RondoError)]
        assert [b.__name__ for b in rondo_bases] == [parent], name
        others = {b.__name__ for b in cls.__bases__ if b not in rondo_bases}
        assert others == also, f"{name}: the drawing's '(also ...)' must name {others}"


def test_g4_cli_error_joins_the_tree() -> None:
    from rondo.apps import CliError

    assert CliError is rondo.errors.CliError
    assert issubclass(CliError, rondo.RondoError)


def test_hook_names_are_the_plugin_hooks() -> None:
    own = sorted(
        name
        for name, fn in vars(Plugin).items()
        if inspect.iscoroutinefunction(fn) and not name.startswith("_")
    )
    assert own == sorted(HOOK_NAMES)
    manager = PluginManager([])
    for hook in HOOK_NAMES:
        assert manager.has(hook) is False


def test_actions_draft_matches_event_actions() -> None:
    """Every field of the mutable draft exists on the record it becomes, and a draft with
    each field set converts to a record carrying it (they cannot drift apart)."""
    draft_fields = {f.name for f in dataclasses.fields(Actions)}
    record_fields = set(EventActions.model_fields)
    assert draft_fields <= record_fields
    # The record's other fields are set by the framework, never by a tool or callback.
    assert record_fields - draft_fields <= {"compaction", "rewind_before_invocation_id"}
    from rondo.events import ToolConfirmation

    draft = Actions(
        state_delta={"k": 1},
        artifact_delta={"a.txt": 0},
        transfer_to_agent="other",
        escalate=True,
        skip_summarization=True,
        requested_tool_confirmations={"c1": ToolConfirmation(hint="ok?")},
    )
    record = draft.to_record()
    for name in draft_fields:
        value = getattr(record, name)
        assert value == getattr(draft, name), name


def test_server_gc_thresholds_are_applied() -> None:
    import gc

    from rondo.server.process import SERVER_GC_THRESHOLDS, tune_gc

    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == SERVER_GC_THRESHOLDS
        assert SERVER_GC_THRESHOLDS[0] >= 10_000  # the point: far fewer young collections
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.parametrize("command", ["api-server", "web"])
def test_server_commands_tune_gc(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rondo api-server` and `rondo web` serve with the server's GC settings applied."""
    import gc

    pytest.importorskip("uvicorn")
    import uvicorn
    from typer.testing import CliRunner

    from rondo.cli import app as cli_app
    from rondo.server.process import SERVER_GC_THRESHOLDS

    seen: list[tuple[int, ...]] = []

    def serve(*_: object, **__: object) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(uvicorn, "run", serve)
    before = gc.get_threshold()
    try:
        result = CliRunner().invoke(cli_app, [command, str(tmp_path)])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    assert result.exit_code == 0, result.output
    assert seen == [SERVER_GC_THRESHOLDS]


def test_run_routes_are_matched_first(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from rondo.server.app import create_app
    from rondo.server.hot_routes import HotRoute

    app = create_app(tmp_path)
    # Issue 25.5: the hot route (the plain requests of a run) goes before every FastAPI route.
    assert isinstance(app.router.routes[0], HotRoute)
    paths = [getattr(r, "path", "") for r in app.router.routes[1:]]
    first = set(paths[:3])
    assert first == {"/run", "/run_sse", "/run_lifecycle"}


def test_records_cache_their_keys() -> None:
    """Decoding thousands of stored records reuses the dict keys' strings (pydantic-core's
    `cache_strings`): part of what keeps a long session's memory and decode cost down."""
    assert Event.model_config.get("cache_strings") == "keys"


def test_contents_text_fast_path_skips_the_converter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text-only records enter the contents view as they are (the fast path): the general
    converter runs only for the records that need it (here, the one tool call)."""
    import rondo.flow.contents as contents
    from rondo.types import Content, FunctionCall, Part

    calls: list[str] = []
    real = contents._convert  # pyright: ignore[reportPrivateUsage]

    def counting(event: Event, agent_name: str) -> object:
        calls.append(event.id)
        return real(event, agent_name)

    monkeypatch.setattr(contents, "_convert", counting)
    events = [
        Event(author="user" if i % 2 == 0 else "a", content=Content.user(f"m{i}"))
        for i in range(200)
    ]
    call = Event(
        author="a",
        content=Content(
            role="model", parts=[Part(function_call=FunctionCall(name="f", args={}, id="c1"))]
        ),
    )
    view = contents.ContentsView("a", "", "", 0)
    view.advance([*events, call], len(events) + 1)
    assert calls == [call.id]


def test_19_new_event_takes_every_other_event_field() -> None:
    """`InvocationContext.new_event` accepts every field of `Event` but the three it sets."""
    from rondo.events import EventFields

    assert set(EventFields.__annotations__) == set(Event.model_fields) - {
        "author",
        "invocation_id",
        "run_id",
    }


def test_19_new_event_copies_the_context_ids() -> None:
    from rondo.agents.llm import Agent
    from rondo.context import InvocationContext
    from rondo.plugins import PluginManager
    from rondo.sessions import InMemorySessionService, Session
    from rondo.testing import ScriptedModel
    from rondo.types import Content

    agent = Agent(name="a", model=ScriptedModel([]))
    ctx = InvocationContext(
        app_name="app",
        user_id="u",
        session=Session(id="s", app_name="app", user_id="u"),
        session_service=InMemorySessionService(),
        plugins=PluginManager(),
        invocation_id="inv-1",
        run_id="run-1",
        agent=agent,
        root_agent=agent,
        branch="root.a",
        isolation_scope="scope-1",
    )
    event = ctx.new_event(content=Content.model("hi"))
    assert (event.author, event.invocation_id, event.run_id) == ("a", "inv-1", "run-1")
    assert (event.branch, event.isolation_scope) == ("root.a", "scope-1")
    other = ctx.new_event("user", isolation_scope="s2")
    assert (other.author, other.branch, other.isolation_scope) == ("user", "root.a", "s2")


def test_19_events_of_a_context_are_built_by_new_event() -> None:
    """No module copies a context's ids into an `Event` by hand (one helper does)."""
    src = Path(__file__).parents[2] / "src" / "rondo"
    hand_built = re.compile(r"Event\(\s*author=[^)]*?invocation_id=(self\.)?_?ctx\.", re.S)
    offenders = [
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if p.name != "context.py" and hand_built.search(p.read_text())
    ]
    assert offenders == []


def test_19_core_asks_agents_not_their_class() -> None:
    """The loop, the processors and agent-as-tool never import the LLM agent's class, and
    the agents never import the runner (issue 19's knot)."""
    src = Path(__file__).parents[2] / "src" / "rondo"
    for name in ("flow/loop.py", "flow/processors/transfer.py", "flow/processors/instructions.py"):
        text = (src / name).read_text()
        assert "isinstance(" not in text or "Agent)" not in text, name
    for name in [*(src / "flow").rglob("*.py"), src / "tools" / "agent_tool.py"]:
        body = name.read_text().split("if TYPE_CHECKING:", 1)
        runtime = body[0] + (body[1].split("\n\n", 1)[1] if len(body) > 1 else "")
        assert "from rondo.agents.llm import" not in runtime, name
    assert "from rondo.runner import Runner\n" not in (src / "agents" / "llm.py").read_text()


def test_19_agent_run_builds_its_runner_through_the_seam() -> None:
    """`Agent.run` still works: its runner comes from the factory the package root installs."""
    from rondo import _runs
    from rondo.agents.llm import Agent
    from rondo.runner import Runner
    from rondo.testing import ScriptedModel

    agent = Agent(name="a", model=ScriptedModel(["hello"]))
    runner = _runs.runner_for(agent)
    assert isinstance(runner, Runner)
    assert (runner.app_name, runner.agent) == ("a", agent)
    assert agent.run_sync("hi").output == "hello"


def test_19_agent_kinds_answer_the_core() -> None:
    from rondo.agents.llm import Agent
    from rondo.agents.workflow import SequentialAgent
    from rondo.testing import ScriptedModel

    task = Agent(name="t", model=ScriptedModel([]), mode="task")
    chat = Agent(name="c", model=ScriptedModel([]), global_instruction="be kind")
    seq = SequentialAgent(name="s", sub_agents=[])
    assert (task.reached_by_call, chat.reached_by_call, seq.reached_by_call) == (True, False, False)
    assert (chat.transfers, seq.transfers) == (True, False)
    assert (chat.global_instruction, seq.global_instruction) == ("be kind", "")
    assert seq.answer_of("x") == {"result": "x"}


def test_19_agent_hands_over_the_loops_generator() -> None:
    """`Agent._run_impl` returns the loop's own generator (no generator re-yielding every
    item between the agent and the loop): one layer less per streamed event."""
    from rondo.agents.llm import Agent
    from rondo.context import InvocationContext
    from rondo.flow.loop import Flow
    from rondo.plugins import PluginManager
    from rondo.sessions import InMemorySessionService, Session
    from rondo.testing import ScriptedModel

    agent = Agent(name="a", model=ScriptedModel([]))
    ctx = InvocationContext(
        app_name="app",
        user_id="u",
        session=Session(id="s", app_name="app", user_id="u"),
        session_service=InMemorySessionService(),
        plugins=PluginManager(),
        invocation_id="i",
        run_id="r",
        agent=agent,
        root_agent=agent,
    )
    assert not inspect.isasyncgenfunction(Agent._run_impl)  # pyright: ignore[reportPrivateUsage]
    items = agent._run_impl(ctx)  # pyright: ignore[reportPrivateUsage]
    assert items.ag_code is Flow.run.__code__  # type: ignore[attr-defined]
