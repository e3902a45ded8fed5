"""Issue 25 item 2: eval reports show tokens and dollars per case and in total.

Prices come from rondo.models.pricing (genai-prices); a model it does not know is "unpriced",
never $0; the local model is "free (local)". The judge's calls count in their case.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo import Agent
from rondo.cli import app
from rondo.evaluation import Cost, EvalConfig, parse_eval_config, parse_eval_set, run_eval
from rondo.models.base import ModelRequest, ModelResponse
from rondo.models.pricing import price_usage
from rondo.types import Content, Usage
from tests._require import require_module

require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")
require_module("genai_prices", what="EVAL", install="pip install genai-prices")

USAGE = Usage(input_tokens=1000, output_tokens=200, total_tokens=1200)


class Priced:
    """Answers "hello" and reports `USAGE`, as provider `provider`'s model `name`."""

    def __init__(self, provider: str, name: str, answer: str = "hello") -> None:
        self.provider = provider
        self.name = name
        self.answer = answer

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        yield ModelResponse(content=Content.model(self.answer), usage=USAGE)


def eval_set(cases: int = 2) -> object:
    return parse_eval_set(
        {
            "eval_set_id": "cost",
            "eval_cases": [
                {
                    "eval_id": f"c{i}",
                    "conversation": [
                        {
                            "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                            "final_response": {"role": "model", "parts": [{"text": "hello"}]},
                        }
                    ],
                }
                for i in range(cases)
            ],
        }
    )


async def test_25_eval_report_prices_each_case_and_the_total() -> None:
    one = price_usage("openai", "gpt-4o", USAGE)
    assert one is not None
    assert one > 0
    report = await run_eval(Agent(name="a", model=Priced("openai", "gpt-4o")), eval_set())
    for case in report.cases:
        assert case.cost.calls == 1
        assert case.cost.total_tokens == 1200
        assert case.cost.cost_usd == pytest.approx(one)
        assert case.cost.label == f"${one:.6f}"
    assert report.cost.total_tokens == 2400
    assert report.cost.cost_usd == pytest.approx(2 * one)
    data = report.to_dict()
    assert data["usage"] == {
        "calls": 2,
        "input_tokens": 2000,
        "output_tokens": 400,
        "total_tokens": 2400,
        "cost_usd": pytest.approx(2 * one),
        "cost": f"${2 * one:.6f}",
    }
    cases = data["cases"]
    assert isinstance(cases, list)
    assert cases[0]["usage"]["cost"] == f"${one:.6f}"  # pyright: ignore[reportUnknownMemberType]
    text = report.render()
    assert f"${one:.6f}" in text
    assert "2,400 tokens in 2 model calls" in text


async def test_25_unknown_model_is_unpriced_never_zero() -> None:
    agent = Agent(name="a", model=Priced("openai", "no-such-model-rondo-test"))
    report = await run_eval(agent, eval_set(1))
    cost = report.cases[0].cost
    assert cost.cost_usd is None
    assert cost.label == "unpriced"
    assert report.cost.label == "unpriced"
    assert report.to_dict()["usage"]["cost_usd"] is None
    assert "$0" not in report.render()


async def test_25_local_model_is_free() -> None:
    report = await run_eval(Agent(name="a", model=Priced("local", "smollm2")), eval_set(1))
    assert report.cases[0].cost.label == "free (local)"
    assert report.cases[0].cost.total_tokens == 1200
    assert "free (local)" in report.cost_line()


def test_25_a_sum_with_an_unpriced_part_is_unpriced() -> None:
    priced = Cost(1, 10, 2, 12, 0.5)
    unpriced = Cost(1, 10, 2, 12, None, unpriced_calls=1)
    local = Cost(1, 10, 2, 12, 0.0, local_calls=1)
    assert (priced + unpriced).label == "unpriced"
    assert (priced + local).cost_usd == pytest.approx(0.5)
    assert (local + local).label == "free (local)"
    assert Cost().label == "no usage reported"


async def test_25_judge_calls_count_in_their_case() -> None:
    judge = Priced(
        "anthropic", "claude-3-5-haiku-latest", answer='{"is_the_agent_response_valid": "valid"}'
    )
    config: EvalConfig = parse_eval_config(
        {
            "criteria": {
                "final_response_match_v2": {
                    "threshold": 0.5,
                    "judge_model_options": {"judge_model": "x", "num_samples": 2},
                }
            }
        }
    )
    agent = Agent(name="a", model=Priced("local", "smollm2"))
    report = await run_eval(agent, eval_set(1), config, judge=judge)
    cost = report.cases[0].cost
    assert cost.calls == 3  # one agent call, two judge samples
    assert cost.local_calls == 1
    judged = price_usage("anthropic", "claude-3-5-haiku-latest", USAGE)
    assert judged is not None
    assert cost.cost_usd == pytest.approx(2 * judged)


def test_25_cli_eval_prints_tokens_and_dollars(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        "from tests.unit.test_25_eval_cost import Priced\n"
        "from rondo import Agent\n"
        "root_agent = Agent(name='a', model=Priced('openai', 'gpt-4o'))\n",
        encoding="utf-8",
    )
    evalset = tmp_path / "cost.evalset.json"
    evalset.write_text(
        json.dumps(
            {
                "eval_set_id": "cost",
                "eval_cases": [
                    {
                        "eval_id": "c0",
                        "conversation": [
                            {
                                "user_content": {"parts": [{"text": "hi"}]},
                                "final_response": {"parts": [{"text": "hello"}]},
                            }
                        ],
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    report = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", str(agent), str(evalset), "--json", str(report)])
    one = price_usage("openai", "gpt-4o", USAGE)
    assert result.exit_code == 0, result.output
    assert f"${one:.6f}" in result.output
    assert "total: 1,200 tokens in 1 model call" in result.output
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["usage"]["total_tokens"] == 1200
    assert written["cases"][0]["usage"]["cost_usd"] == pytest.approx(one)
