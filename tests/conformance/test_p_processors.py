"""SPEC P — request processors (P1, P2, P4, P5, P7)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import rondo
from rondo import Agent, BaseTool, BaseToolset, Content, FunctionCall, Part, Runner, ToolContext
from rondo.artifacts import InMemoryArtifactService
from rondo.context import CallbackContext, ReadonlyContext
from rondo.flow.contents import NUDGE_TEXT
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse
from rondo.testing import ScriptedModel

from ._support import APP, SESSION, USER, collect


def lookup(city: str) -> dict[str, Any]:
    """Look up a city.

    Args:
        city: The city's name.
    """
    return {"city": city}


class Answer(BaseModel):
    city: str
    temperature: int


# -- P1 --------------------------------------------------------------------------------------


async def test_p1_generate_config_is_a_deep_copy_per_request():
    config = GenerateConfig(
        temperature=0.3,
        max_output_tokens=100,
        labels={"team": "a"},
        stop_sequences=["END"],
        extra={"provider": {"safety": ["low"]}},
    )

    def tamper(ctx: CallbackContext, request: ModelRequest) -> None:
        assert request.config is not config
        assert request.config.labels == {"team": "a"}
        assert request.config.stop_sequences == ["END"]
        request.config.temperature = 1.0
        assert request.config.labels is not None
        request.config.labels["team"] = "changed"
        assert request.config.stop_sequences is not None
        request.config.stop_sequences.append("MORE")
        assert request.config.extra is not None
        request.config.extra["provider"]["safety"].append("high")

    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"}), "done"])
    agent = Agent(
        name="helper",
        model=model,
        tools=[lookup],
        generate_config=config,
        before_model_callback=tamper,
    )
    await collect(Runner(agent=agent, app_name=APP), "go")
    # The agent's config never aliases a request's.
    assert config == GenerateConfig(
        temperature=0.3,
        max_output_tokens=100,
        labels={"team": "a"},
        stop_sequences=["END"],
        extra={"provider": {"safety": ["low"]}},
    )
    first, second = model.requests
    assert first.config is not second.config
    assert first.config.labels is not second.config.labels


async def test_p1_native_output_schema_sets_response_schema_and_json_mime():
    model = ScriptedModel(['{"city": "Paris", "temperature": 18}'])
    agent = Agent(name="helper", model=model, output_schema=Answer)
    await collect(Runner(agent=agent, app_name=APP), "go")
    config = model.requests[0].config
    assert config.response_mime_type == "application/json"
    assert config.response_schema is not None
    assert config.response_schema["properties"].keys() == {"city", "temperature"}
    assert sorted(config.response_schema["required"]) == ["city", "temperature"]
    assert "set_model_response" not in model.requests[0].tools


async def test_p1_native_schema_with_tools_only_when_the_model_can_combine_them():
    able = ScriptedModel(['{"city": "Paris", "temperature": 18}'])
    agent = Agent(name="helper", model=able, tools=[lookup], output_schema=Answer)
    await collect(Runner(agent=agent, app_name=APP), "go")
    assert able.requests[0].config.response_mime_type == "application/json"
    assert able.requests[0].config.response_schema is not None

    unable = ScriptedModel(
        [FunctionCall(name="set_model_response", args={"city": "Paris", "temperature": 18})],
        capabilities={"response_schema_with_tools": False},
    )
    agent = Agent(name="helper", model=unable, tools=[lookup], output_schema=Answer)
    await collect(Runner(agent=agent, app_name=APP), "go")
    config = unable.requests[0].config
    assert config.response_schema is None
    assert config.response_mime_type is None
    assert "set_model_response" in unable.requests[0].tools


async def test_p1_task_mode_does_not_set_a_native_response_schema():
    model = ScriptedModel(['{"city": "Paris", "temperature": 18}'])
    agent = Agent(name="helper", model=model, output_schema=Answer, mode="task")
    await collect(Runner(agent=agent, app_name=APP), "go")
    assert model.requests[0].config.response_schema is None
    assert model.requests[0].config.response_mime_type is None


async def test_p1_no_output_schema_no_response_schema():
    model = ScriptedModel(["plain"])
    await collect(Runner(agent=Agent(name="helper", model=model), app_name=APP), "go")
    assert model.requests[0].config.response_schema is None
    assert model.requests[0].config.response_mime_type is None


# -- P2 --------------------------------------------------------------------------------------


async def test_p2_declarations_for_the_model_and_an_execution_table_are_different_things():
    model = ScriptedModel(["ok"])
    agent = Agent(name="helper", model=model, tools=[lookup])
    await collect(Runner(agent=agent, app_name=APP), "go")
    request = model.requests[0]
    # The local execution table: name -> implementation.
    assert list(request.tools) == ["lookup"]
    implementation = request.tools["lookup"]
    assert isinstance(implementation, BaseTool)
    assert implementation("Oslo") == {"city": "Oslo"}
    # The declarations sent to the model: data only.
    assert request.config.tools == [
        FunctionDeclaration(
            name="lookup",
            description="Look up a city.",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city's name."}},
                "required": ["city"],
                "additionalProperties": False,
            },
        )
    ]
    assert all(isinstance(d, FunctionDeclaration) for d in request.config.tools)
    # Serializing the request's declarations never includes the implementation.
    dumped = [d.model_dump() for d in request.config.tools]
    assert "func" not in str(dumped)


class CountingToolset(BaseToolset):
    def __init__(self, relist: bool = False) -> None:
        self.listed = 0
        self.relist_each_step = relist

    async def get_tools(self, ctx: ReadonlyContext) -> list[BaseTool]:
        self.listed += 1

        def dynamic(n: int, tool_context: ToolContext) -> dict[str, Any]:
            return {"n": n, "listing": self.listed}

        return [rondo.FunctionTool(dynamic, name=f"dynamic_{self.listed}")]


async def test_p2_toolsets_are_expanded_once_per_flow():
    toolset = CountingToolset()
    model = ScriptedModel(
        [
            FunctionCall(name="dynamic_1", args={"n": 1}),
            FunctionCall(name="dynamic_1", args={"n": 2}),
            "done",
            "second invocation",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup, toolset]), app_name=APP)
    events = await collect(runner, "go")
    assert toolset.listed == 1
    assert [sorted(r.tools) for r in model.requests] == [["dynamic_1", "lookup"]] * 3
    assert [d.name for d in model.requests[2].config.tools] == ["lookup", "dynamic_1"]
    assert events[3].get_function_responses()[0].response == {"n": 2, "listing": 1}
    # A new invocation runs a new flow: listed again.
    await collect(runner, "again")
    assert toolset.listed == 2


async def test_p2_toolsets_may_ask_to_be_relisted_every_step():
    toolset = CountingToolset(relist=True)
    model = ScriptedModel([FunctionCall(name="dynamic_1", args={"n": 1}), "done"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[toolset]), app_name=APP)
    await collect(runner, "go")
    assert toolset.listed == 2
    assert [sorted(r.tools) for r in model.requests] == [["dynamic_1"], ["dynamic_2"]]


# -- P4 --------------------------------------------------------------------------------------


def _system(model: ScriptedModel, index: int = 0) -> str:
    text = model.requests[index].config.system_instruction
    assert text is not None
    return text


async def test_p4_global_instruction_of_the_root_then_the_agent_instruction():
    model = ScriptedModel(
        [FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}), "expert answer"]
    )
    expert = Agent(
        name="expert",
        model=model,
        instruction="EXPERT-INSTRUCTION",
        global_instruction="IGNORED-NOT-ROOT",
    )
    root = Agent(
        name="root",
        model=model,
        instruction="ROOT-INSTRUCTION",
        global_instruction="GLOBAL-INSTRUCTION",
        sub_agents=[expert],
    )
    await collect(Runner(agent=root, app_name=APP), "go")
    root_sys = _system(model, 0)
    expert_sys = _system(model, 1)
    assert root_sys.index("GLOBAL-INSTRUCTION") < root_sys.index("ROOT-INSTRUCTION")
    assert expert_sys.index("GLOBAL-INSTRUCTION") < expert_sys.index("EXPERT-INSTRUCTION")
    assert "ROOT-INSTRUCTION" not in expert_sys
    assert "IGNORED-NOT-ROOT" not in expert_sys


async def test_p4_state_injection_in_static_strings():
    artifacts = InMemoryArtifactService()
    await artifacts.save_artifact(
        app_name=APP,
        user_id=USER,
        session_id=SESSION,
        filename="notes.txt",
        artifact=Part(text="ARTIFACT-TEXT"),
    )
    model = ScriptedModel(["ok"])
    agent = Agent(
        name="helper",
        model=model,
        instruction=(
            "plain={plain} spaced={ plain } app={app:region} user={user:lang} temp={temp:mood} "
            "art={artifact.notes.txt} missing=[{nothing?}] missing_art=[{artifact.none.txt?}] "
            'json={"a": 1} double={{plain}} dollar=${plain} escaped=\\{plain} words={a b}'
        ),
        global_instruction="global sees {plain}",
    )
    runner = Runner(agent=agent, app_name=APP, artifact_service=artifacts)
    await runner.session_service.create_session(
        app_name=APP,
        user_id=USER,
        session_id=SESSION,
        state={"plain": "P", "app:region": "EU", "user:lang": "fr"},
    )
    await collect(runner, "go", state_delta={"temp:mood": "calm"})
    system = _system(model)
    assert "global sees P" in system
    assert (
        "plain=P spaced=P app=EU user=fr temp=calm art=ARTIFACT-TEXT missing=[] missing_art=[] "
        # As ADK: doubled braces resolve too; `$` or a backslash before a group keeps it.
        'json={"a": 1} double=P dollar=${plain} escaped=\\{plain} words={a b}'
    ) in system


async def test_p4_a_required_missing_key_is_an_error():
    model = ScriptedModel(["never"])
    agent = Agent(name="helper", model=model, instruction="Hello {customer_name}")
    with pytest.raises(rondo.InstructionError, match="customer_name") as info:
        await collect(Runner(agent=agent, app_name=APP), "go")
    assert isinstance(info.value, rondo.RondoError)
    assert model.calls == 0


async def test_p4_a_missing_artifact_is_an_error_and_so_is_a_missing_service():
    model = ScriptedModel(["never"])
    agent = Agent(name="helper", model=model, instruction="Read {artifact.report.md}")
    with pytest.raises(rondo.InstructionError, match=r"artifact\.report\.md"):
        await collect(
            Runner(agent=agent, app_name=APP, artifact_service=InMemoryArtifactService()), "go"
        )
    # Optional or not, an artifact placeholder needs an artifact service.
    agent = Agent(name="helper", model=model, instruction="Read {artifact.report.md?}")
    with pytest.raises(rondo.ConfigurationError, match="artifact service"):
        await collect(Runner(agent=agent, app_name=APP), "go")
    assert model.calls == 0


async def test_p4_provider_output_is_not_injected_again():
    seen: list[Any] = []

    async def provider(ctx: ReadonlyContext) -> str:
        seen.append((ctx.agent_name, ctx.state.get("plain"), ctx.user_content))
        return "literal {plain} and {missing}"

    model = ScriptedModel(["ok"])
    agent = Agent(name="helper", model=model, instruction=provider)
    runner = Runner(agent=agent, app_name=APP)
    await runner.session_service.create_session(
        app_name=APP, user_id=USER, session_id=SESSION, state={"plain": "P"}
    )
    await collect(runner, "go")
    assert "literal {plain} and {missing}" in _system(model)
    assert seen == [("helper", "P", Content.user("go"))]


async def test_p4_injected_values_are_never_re_expanded():
    model = ScriptedModel(["ok"])
    agent = Agent(name="helper", model=model, instruction="value=<{outer}>")
    runner = Runner(agent=agent, app_name=APP)
    await runner.session_service.create_session(
        app_name=APP,
        user_id=USER,
        session_id=SESSION,
        state={"outer": "{inner}", "inner": "EXPANDED"},
    )
    await collect(runner, "go")
    system = _system(model)
    assert "value=<{inner}>" in system
    assert "EXPANDED" not in system


# -- P5 --------------------------------------------------------------------------------------


async def test_p5_identity_names_the_agent_and_its_description():
    model = ScriptedModel(["ok"])
    agent = Agent(name="researcher", model=model, description="Finds papers.")
    await collect(Runner(agent=agent, app_name=APP), "go")
    system = _system(model)
    assert 'You are an agent. Your internal name is "researcher".' in system
    assert "Finds papers." in system


async def test_p5_identity_without_description():
    model = ScriptedModel(["ok"])
    await collect(Runner(agent=Agent(name="researcher", model=model), app_name=APP), "go")
    assert _system(model).strip() == 'You are an agent. Your internal name is "researcher".'


async def test_p5_identity_is_skipped_in_single_turn_mode():
    model = ScriptedModel(["ok"])
    agent = Agent(
        name="researcher",
        model=model,
        description="Finds papers.",
        instruction="Do the task.",
        mode="single_turn",
    )
    await collect(Runner(agent=agent, app_name=APP), "go")
    system = model.requests[0].config.system_instruction or ""
    assert "Your internal name is" not in system
    assert "Finds papers." not in system
    assert "Do the task." in system


# -- P7 --------------------------------------------------------------------------------------


async def test_p7_contents_come_from_the_session_history():
    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"}, id="c1"), "done"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    await collect(runner, "where?")
    first, second = model.requests
    assert first.contents == [Content.user("where?")]
    assert [c.role for c in second.contents] == ["user", "model", "user"]
    assert second.contents[1].parts[0].function_call == FunctionCall(
        name="lookup", args={"city": "Oslo"}, id="c1"
    )
    assert second.contents[2].parts[0].function_response is not None
    assert second.contents[2].parts[0].function_response.response == {"city": "Oslo"}


async def test_p7_processors_run_in_the_spec_order():
    from rondo.flow.processors import DEFAULT_REQUEST_PROCESSORS

    names = [p.__name__ for p in DEFAULT_REQUEST_PROCESSORS]
    order = [
        "basic_processor",
        "tools_processor",
        "confirmation_processor",
        "instructions_processor",
        "identity_processor",
        "contents_processor",
        "output_schema_processor",
        "transfer_processor",
    ]
    assert [n for n in names if n in order] == order
    if "compaction_processor" in names:
        assert names.index("compaction_processor") < names.index("contents_processor")

    # Observable effect of the order on the system instruction:
    # global → agent instruction → identity → output-schema fallback → transfer.
    model = ScriptedModel(
        [FunctionCall(name="set_model_response", args={"city": "Oslo", "temperature": 3})],
        capabilities={"response_schema_with_tools": False},
    )
    child = Agent(name="child", model=model, description="A child.")
    root = Agent(
        name="root",
        model=model,
        instruction="AGENT-INSTRUCTION",
        global_instruction="GLOBAL-INSTRUCTION",
        tools=[lookup],
        output_schema=Answer,
        sub_agents=[child],
    )
    await collect(Runner(agent=root, app_name=APP), "go")
    system = _system(model)
    positions = [
        system.index("GLOBAL-INSTRUCTION"),
        system.index("AGENT-INSTRUCTION"),
        system.index('Your internal name is "root"'),
        system.index("set_model_response"),
        system.index("transfer_to_agent"),
    ]
    assert positions == sorted(positions)
    request = model.requests[0]
    assert [d.name for d in request.config.tools] == [
        "lookup",
        "set_model_response",
        "transfer_to_agent",
    ]


async def test_p7_callbacks_see_the_built_request():
    seen: list[Any] = []

    def inspect_request(ctx: CallbackContext, request: ModelRequest) -> ModelResponse | None:
        seen.append((request.model, [c.text for c in request.contents], sorted(request.tools)))
        return None

    model = ScriptedModel(["ok"], name="my-model")
    agent = Agent(name="helper", model=model, tools=[lookup], before_model_callback=inspect_request)
    await collect(Runner(agent=agent, app_name=APP), "hello")
    assert seen == [("my-model", ["hello"], ["lookup"])]
    assert NUDGE_TEXT not in [c.text for c in model.requests[0].contents]
