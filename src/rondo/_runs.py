"""How `Agent.run` and `Agent.stream` find a runner without the agents importing the runner
layer above them: the package root installs the factory (`rondo/__init__.py`, which runs
before any module of the package), and an agent asks for its runner here. `AgentRunner` is
what an agent asks of it (`rondo.runner.Runner` is the one implementation)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.lifecycle import LifecycleEvent
    from rondo.outcome import RunResult
    from rondo.run_config import RunConfig
    from rondo.types import Message

__all__ = ["AgentRunner", "install_runner_factory", "runner_for"]


class AgentRunner(Protocol):
    """The runner an agent's convenience entry points use."""

    async def new_session_id(self, user_id: str) -> str: ...

    async def run_to_result(
        self,
        *,
        user_id: str,
        session_id: str | None = None,
        new_message: Message = None,
        run_config: RunConfig | None = None,
    ) -> RunResult: ...

    def stream_async(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: Message = None,
        run_config: RunConfig | None = None,
    ) -> AsyncGenerator[LifecycleEvent, None]: ...


_factories: list[Callable[[BaseAgent], AgentRunner]] = []


def install_runner_factory(factory: Callable[[BaseAgent], AgentRunner]) -> None:
    """Make `factory` build the runner an agent's convenience entry points use."""
    _factories[:] = [factory]


def runner_for(agent: BaseAgent) -> AgentRunner:
    """A new in-memory runner for `agent` (app name: the agent's name)."""
    return _factories[-1](agent)
