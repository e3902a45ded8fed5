"""A pytest plugin: `pytest --rondo-evalset PATH` runs every case of an ADK eval set as a test.

    pytest --rondo-evalset weather_agent/weather.evalset.json
    pytest --rondo-evalset evals/ --rondo-agent weather_agent --rondo-eval-config cfg.json

PATH is an eval-set file or a directory (its `*.evalset.json` and `*.test.json` files); the
option repeats. Each case is one test (`<file>::<eval_id>`), failing with the explanation
`rondo eval` prints. The agent is `--rondo-agent` (anything `rondo run` loads), by default the
directory that holds the eval set (ADK keeps eval sets inside the agent's folder); the criteria
are `--rondo-eval-config`, by default the `test_config.json` beside the eval set. Given only
`--rondo-evalset`, pytest collects just the eval sets; other arguments are collected as usual.

The plugin is registered by rondo's package metadata (`pytest11` entry point); the eval
machinery and the agent are imported only when an eval set is asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.evaluation import CaseResult, EvalCase, EvalConfig

__all__ = ["EvalCaseFailed", "EvalCaseItem", "EvalSetFile"]

_SUFFIXES = (".evalset.json", ".test.json")
_AGENTS = pytest.StashKey[dict[Path, "BaseAgent"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rondo", "rondo eval sets")
    group.addoption(
        "--rondo-evalset",
        action="append",
        default=[],
        metavar="PATH",
        help="Run each case of this ADK eval set (a file or a directory of them) as a test.",
    )
    group.addoption(
        "--rondo-agent",
        default=None,
        metavar="PATH",
        help="The agent the eval sets run against (default: the eval set's directory).",
    )
    group.addoption(
        "--rondo-eval-config",
        default=None,
        metavar="PATH",
        help="Criteria in test_config.json shape (default: test_config.json beside the set).",
    )


def _eval_paths(config: pytest.Config) -> list[Path]:
    return [Path(p).resolve() for p in config.getoption("rondo_evalset") or ()]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # `pytest --rondo-evalset PATH` alone collects the eval sets, not the default test paths.
    paths = _eval_paths(config)
    if paths and not config.option.file_or_dir:
        config.args = [str(p) for p in paths]
    config.stash[_AGENTS] = {}


def _is_eval_set(path: Path, config: pytest.Config) -> bool:
    if not path.name.endswith(_SUFFIXES):
        return False
    resolved = path.resolve()
    return any(resolved == p or p in resolved.parents for p in _eval_paths(config))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalSetFile | None:
    if _is_eval_set(file_path, parent.config):
        return EvalSetFile.from_parent(parent, path=file_path)  # pyright: ignore[reportUnknownMemberType]
    return None


class EvalSetFile(pytest.File):
    """An eval-set file: one test per case."""

    def collect(self) -> Iterator[EvalCaseItem]:
        from rondo.evaluation import EvalSetError, load_eval_set

        try:
            eval_set = load_eval_set(self.path)
        except EvalSetError as exc:
            raise self.CollectError(str(exc)) from None
        for case in eval_set.eval_cases:
            yield EvalCaseItem.from_parent(self, name=case.eval_id, case=case)  # pyright: ignore[reportUnknownMemberType]


class EvalCaseFailed(AssertionError):
    """A case that did not pass; carries its result for the report."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(f"eval case {result.eval_id} failed")
        self.result = result


class EvalCaseItem(pytest.Item):
    """One eval case, run on a fresh session and scored like `rondo eval` does."""

    def __init__(self, *, case: EvalCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self.case = case

    def _agent(self) -> BaseAgent:
        from rondo.apps import load_agent

        chosen = self.config.getoption("rondo_agent")
        where = Path(chosen).resolve() if chosen else self.path.parent
        agents = self.config.stash[_AGENTS]
        if where not in agents:
            agents[where] = load_agent(str(where))
        return agents[where]

    def _criteria(self) -> EvalConfig:
        from rondo.evaluation import config_beside, load_eval_config

        chosen = self.config.getoption("rondo_eval_config")
        return load_eval_config(chosen) if chosen else config_beside(self.path)

    def runtest(self) -> None:
        from rondo._sync import run_coroutine_sync
        from rondo.evaluation import run_case
        from rondo.sessions.memory import InMemorySessionService

        agent, criteria = self._agent(), self._criteria()

        async def run() -> CaseResult:
            service = InMemorySessionService()
            try:
                return await run_case(agent, self.case, criteria, service)
            finally:
                await service.close()

        result = run_coroutine_sync(run)
        if not result.passed:
            raise EvalCaseFailed(result)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, EvalCaseFailed):
            return "\n".join(excinfo.value.result.explain()) or "no metric passed"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"eval case {self.name}"
