"""How `Agent.run` and `Agent.stream` find a runner without the agents importing the runner
layer above them: the package root installs the factory (`rondo/__init__.py`, which runs
before any module of the package), and an agent asks for its runner here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.runner import Runner

__all__ = ["install_runner_factory", "runner_for"]

_factories: list[Callable[[BaseAgent], Runner]] = []


def install_runner_factory(factory: Callable[[BaseAgent], Runner]) -> None:
    """Make `factory` build the runner an agent's convenience entry points use."""
    _factories[:] = [factory]


def runner_for(agent: BaseAgent) -> Runner:
    """A new in-memory runner for `agent` (app name: the agent's name)."""
    return _factories[-1](agent)
