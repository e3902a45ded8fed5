"""Issue 24 item 2: eval cases with a `conversation_scenario` are played by a simulated user
(a rondo model), stop on the stop signal or the turn limit, and are scored per turn and
overall — repeatably, from a cassette."""

from __future__ import annotations

from pathlib import Path

import pytest

from rondo import Agent
from rondo.evaluation import EvalReport, parse_eval_config, parse_eval_set, run_eval
from rondo.evaluation.simulation import STOP_SIGNAL
from rondo.models import Model, ModelRequest
from rondo.testing import ScriptedModel
from rondo.testing.cassette import CassettePlayer, CassetteRecorder
from rondo.types import FunctionCall

PLAN = "Book a one-way flight to LAX. When the agent asks where to, say LAX. Then stop."


def book_flight(destination: str) -> dict[str, str]:
    """Books a flight."""
    return {"status": "booked", "destination": destination}


def travel_reply(request: ModelRequest) -> object:
    last = request.contents[-1]
    if last.role == "user" and last.parts[0].function_response is not None:
        return "Booked your flight to LAX."
    said = last.text
    if "LAX" in said:
        return FunctionCall(name="book_flight", args={"destination": "LAX"})
    return "Where would you like to fly to?"


def travel_agent(model: Model | None = None) -> Agent:
    return Agent(
        name="travel",
        model=model or ScriptedModel([travel_reply] * 10, name="travel-model"),
        instruction="Book flights.",
        tools=[book_flight],
    )


def simulated_user(request: ModelRequest) -> str:
    prompt = request.contents[0].text
    assert PLAN in prompt  # the simulator is shown the plan ...
    if "Booked your flight" in prompt:  # ... and the conversation so far
        return f"Thanks! {STOP_SIGNAL}"
    return "To LAX, please."


def judge_reply(request: ModelRequest) -> str:
    prompt = request.contents[0].text
    helpful = "yes" if ("Where would" in prompt or "Booked" in prompt) else "no"
    return f"ID: helpful\nProperty: The agent moves the booking on.\nRationale: r\nVerdict: {helpful}\n"


EVAL_SET = {
    "eval_set_id": "simulated",
    "eval_cases": [
        {
            "eval_id": "book_lax",
            "conversation_scenario": {
                "starting_prompt": "I need a flight.",
                "conversation_plan": PLAN,
            },
        }
    ],
}


def config(limit: int = 20) -> dict[str, object]:
    return {
        "criteria": {
            "tool_trajectory_avg_score": 1.0,
            "rubric_based_final_response_quality_v1": {
                "threshold": 0.9,
                "judge_model_options": {"judge_model": "judge-model", "num_samples": 1},
                "rubrics": [
                    {
                        "rubric_id": "helpful",
                        "rubric_content": {"text_property": "The agent moves the booking on."},
                    }
                ],
            },
        },
        "user_simulator_config": {"model": "sim-model", "max_allowed_invocations": limit},
    }


def models(simulator: object = simulated_user) -> dict[str, Model]:
    return {
        "sim-model": ScriptedModel([simulator] * 10, name="sim-model"),
        "judge-model": ScriptedModel([judge_reply] * 10, name="judge-model"),
    }


async def evaluate(agent: Agent, pick: dict[str, Model], limit: int = 20) -> EvalReport:
    return await run_eval(
        agent,
        parse_eval_set(EVAL_SET),
        parse_eval_config(config(limit)),
        judge=lambda name: pick[name],
    )


async def test_o5_a_simulated_user_plays_the_scenario_to_its_stop_signal() -> None:
    pick = models()
    report = await evaluate(travel_agent(), pick)
    (case,) = report.cases
    assert [i.prompt for i in case.invocations] == ["I need a flight.", "To LAX, please."]
    assert [i.actual.final_text for i in case.invocations] == [
        "Where would you like to fly to?",
        "Booked your flight to LAX.",
    ]
    # Two agent turns needed one simulator call each after the first (the starting prompt is
    # sent as written); the second call saw the booking and stopped.
    assert len(pick["sim-model"].requests) == 2  # type: ignore[attr-defined]
    trajectory, rubric = case.metrics
    assert trajectory.status == "not_evaluated"  # nothing expected to match against
    assert "simulated" in (trajectory.error or "")
    assert rubric.per_invocation == (1.0, 1.0)  # scored per turn ...
    assert rubric.score == 1.0  # ... and overall
    assert case.passed


async def test_o5_the_turn_limit_ends_a_conversation_that_never_finishes() -> None:
    pick = models(simulator=lambda request: "Hmm, somewhere else?")
    report = await evaluate(travel_agent(), pick, limit=3)
    (case,) = report.cases
    assert len(case.invocations) == 3
    assert len(pick["sim-model"].requests) == 2  # type: ignore[attr-defined]


async def test_o5_a_simulator_that_writes_nothing_fails_the_case() -> None:
    report = await evaluate(travel_agent(), models(simulator=lambda request: "  "))
    (case,) = report.cases
    assert case.error is not None
    assert case.error.startswith("UserSimulationError: the user simulator (sim-model) wrote no")


async def test_o4_a_simulated_eval_replays_from_its_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "sim.jsonl"
    recorder = CassetteRecorder(cassette)
    live = models()
    agent = travel_agent(recorder.wrap(ScriptedModel([travel_reply] * 10, name="travel-model")))
    recorded = await evaluate(agent, {n: recorder.wrap(m) for n, m in live.items()})

    player = CassettePlayer(cassette)
    replayed = await evaluate(
        travel_agent(player.model("travel-model")),
        {"sim-model": player.model("sim-model"), "judge-model": player.model("judge-model")},
    )
    player.check_finished()
    assert replayed.to_dict() == recorded.to_dict()
    assert recorded.cases[0].metrics[1].per_invocation == (1.0, 1.0)


@pytest.mark.parametrize(
    ("simulator", "message"),
    [
        ({"type": "audio"}, "rondo runs the 'llm_backed' user simulator"),
        ({"max_allowed_invocations": 0}, "max_allowed_invocations must be a whole number"),
    ],
)
def test_o5_unusable_simulator_configs_are_clear_errors(simulator: object, message: str) -> None:
    from rondo.evaluation import EvalSetError

    with pytest.raises(EvalSetError, match=message):
        parse_eval_config(
            {"criteria": {"response_match_score": 0.5}, "user_simulator_config": simulator}
        )


def test_o5_evaluate_from_a_test_takes_the_judge_and_simulator_models(tmp_path: Path) -> None:
    import json

    from rondo.testing import evaluate as evaluate_file

    path = tmp_path / "sim.evalset.json"
    path.write_text(json.dumps(EVAL_SET))
    pick = models()
    report = evaluate_file(travel_agent(), path, config(), judge=lambda name: pick[name])
    assert report.cases[0].metrics[1].per_invocation == (1.0, 1.0)
    report.assert_passed()
