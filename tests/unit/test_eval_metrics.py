"""Tool-trajectory matching (ADK's EXACT, IN_ORDER, ANY_ORDER) and how a run is observed."""

from __future__ import annotations

import pytest

from rondo import Agent, FunctionCall
from rondo.evaluation import Call, EvalConfig, ExpectedCall, parse_eval_set, run_eval
from rondo.models import ModelResponse
from rondo.testing import ScriptedModel
from rondo.types import Content, Part
from tests._require import require_module


def calls(*names: str) -> list[Call]:
    return [Call(n, {"x": n}) for n in names]


def expected(*names: str) -> list[ExpectedCall]:
    return [ExpectedCall(name=n, args={"x": n}) for n in names]


@pytest.mark.parametrize(
    ("match_type", "actual", "wanted", "ok"),
    [
        ("EXACT", calls("a", "b"), expected("a", "b"), True),
        ("EXACT", calls("b", "a"), expected("a", "b"), False),
        ("EXACT", calls("a", "b", "c"), expected("a", "b"), False),
        ("EXACT", [], [], True),
        ("IN_ORDER", calls("a", "x", "b"), expected("a", "b"), True),
        ("IN_ORDER", calls("b", "a"), expected("a", "b"), False),
        ("IN_ORDER", calls("a"), expected("a", "b"), False),
        ("IN_ORDER", [], [], True),
        ("ANY_ORDER", calls("b", "x", "a"), expected("a", "b"), True),
        ("ANY_ORDER", calls("a"), expected("a", "a"), False),
        ("ANY_ORDER", calls("a", "a"), expected("a", "a"), True),
    ],
)
def test_match_types(
    match_type: str, actual: list[Call], wanted: list[ExpectedCall], ok: bool
) -> None:
    from rondo.evaluation import trajectory_matches

    assert trajectory_matches(actual, wanted, match_type, False) is ok  # type: ignore[arg-type]


def test_arguments_count_unless_ignored() -> None:
    from rondo.evaluation import trajectory_matches

    actual = [Call("get", {"city": "Roma"})]
    wanted = [ExpectedCall(name="get", args={"city": "Rome"})]
    assert not trajectory_matches(actual, wanted)
    assert trajectory_matches(actual, wanted, "EXACT", ignore_args=True)
    # Python equality, as ADK compares: 1 == 1.0
    assert trajectory_matches([Call("n", {"v": 1})], [ExpectedCall(name="n", args={"v": 1.0})])


def case(query: str, final: str, tool_uses: list[dict[str, object]]) -> dict[str, object]:
    return {
        "user_content": {"parts": [{"text": query}]},
        "final_response": {"parts": [{"text": final}]},
        "intermediate_data": {"tool_uses": tool_uses},
    }


def _needs_rouge() -> None:
    require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")


async def test_sub_agent_calls_count_and_the_final_text_is_the_last_answer() -> None:
    _needs_rouge()

    def lookup(q: str) -> dict[str, str]:
        """Looks something up."""
        return {"found": q}

    helper = Agent(
        name="helper",
        model=ScriptedModel([FunctionCall(name="lookup", args={"q": "x"}), "Helper done."]),
        tools=[lookup],
    )
    root = Agent(
        name="root",
        model=ScriptedModel(
            [FunctionCall(name="transfer_to_agent", args={"agent_name": "helper"})]
        ),
        sub_agents=[helper],
    )
    eval_set = parse_eval_set(
        {
            "eval_set_id": "s",
            "eval_cases": [
                {
                    "eval_id": "c",
                    "conversation": [
                        case(
                            "go",
                            "Helper done.",
                            [
                                {"name": "transfer_to_agent", "args": {"agent_name": "helper"}},
                                {"name": "lookup", "args": {"q": "x"}},
                            ],
                        )
                    ],
                }
            ],
        }
    )
    report = await run_eval(root, eval_set, EvalConfig.default())
    (result,) = report.cases
    assert result.error is None
    actual = result.invocations[0].actual
    assert [c.name for c in actual.tool_calls] == ["transfer_to_agent", "lookup"]
    assert actual.final_text == "Helper done."
    assert result.passed


async def test_the_answer_text_includes_thought_parts_as_in_adk() -> None:
    _needs_rouge()
    thinking = ModelResponse(
        content=Content(role="model", parts=[Part(text="hmm", thought=True), Part(text="Root.")])
    )
    agent = Agent(name="thinker", model=ScriptedModel([thinking]))
    eval_set = parse_eval_set(
        {
            "eval_set_id": "s",
            "eval_cases": [{"eval_id": "c", "conversation": [case("q", "Root.", [])]}],
        }
    )
    report = await run_eval(agent, eval_set)
    assert report.cases[0].invocations[0].actual.final_text == "hmm\nRoot."
