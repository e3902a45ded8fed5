"""`evaluate`: run an ADK eval set from a test, as `rondo eval` does from the command line.

from rondo.testing import evaluate

def test_weather_agent():
    evaluate(root_agent, "tests/weather.evalset.json").assert_passed()
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rondo._sync import run_coroutine_sync

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.evaluation import EvalConfig, EvalReport, JudgeResolver
    from rondo.models.base import Model

__all__ = ["evaluate", "evaluate_async"]


def _agent(agent: BaseAgent | str | Path) -> BaseAgent:
    if isinstance(agent, str | Path):
        from rondo.apps import load_agent

        return load_agent(str(agent))
    return agent


def _config(
    config: EvalConfig | Mapping[str, object] | str | Path | None, eval_set: Path
) -> EvalConfig:
    from rondo.evaluation import EvalConfig, config_beside, load_eval_config, parse_eval_config

    if config is None:
        return config_beside(eval_set)
    if isinstance(config, EvalConfig):
        return config
    if isinstance(config, Mapping):
        return parse_eval_config(config)
    return load_eval_config(config)


async def evaluate_async(
    agent: BaseAgent | str | Path,
    eval_set: str | Path,
    config: EvalConfig | Mapping[str, object] | str | Path | None = None,
    *,
    initial_session: Mapping[str, object] | None = None,
    judge: JudgeResolver | Model | None = None,
) -> EvalReport:
    """Run the eval set at `eval_set` against `agent` and return the report.

    `agent` is an agent or a path `rondo run` accepts; `config` a `test_config.json` path, its
    decoded content (`{"criteria": {...}}`) or an `EvalConfig` — by default the
    `test_config.json` beside the eval set, else ADK's default criteria. `judge` answers the
    LLM-judged metrics and plays simulated users (default: the models the config names).
    """
    from rondo.evaluation import load_eval_set, run_eval

    path = Path(eval_set)
    loaded = load_eval_set(path, initial_session=initial_session)
    return await run_eval(_agent(agent), loaded, _config(config, path), judge=judge)


def evaluate(
    agent: BaseAgent | str | Path,
    eval_set: str | Path,
    config: EvalConfig | Mapping[str, object] | str | Path | None = None,
    *,
    initial_session: Mapping[str, object] | None = None,
    judge: JudgeResolver | Model | None = None,
) -> EvalReport:
    """`evaluate_async` from sync code (a running event loop is fine too)."""
    return run_coroutine_sync(
        lambda: evaluate_async(
            agent, eval_set, config, initial_session=initial_session, judge=judge
        )
    )
