"""`rondo run --record FILE` / `--replay FILE`: the agent's models, through a cassette.

Recording wraps every model of the agent tree (one cassette, exchanges in call order).
Replaying loads the agent with each model string resolved to the cassette's model of that
name — so an agent written for `"openai:gpt-4o"` replays without the SDK or a key — and swaps
every other model of the tree too; at the end, a cassette with exchanges left over is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from rondo.apps import CliError, load_agent, override_model

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.models.base import Model
    from rondo.testing.cassette import CassettePlayer, CassetteRecorder

__all__ = ["CliCassette", "RecordOption", "ReplayOption"]

RecordOption = Annotated[
    str | None,
    typer.Option("--record", help="Write every model exchange to this cassette (JSONL)."),
]
ReplayOption = Annotated[
    str | None,
    typer.Option("--replay", help="Answer every model call from this cassette, offline."),
]


def _swap_models(root: BaseAgent, swap: Callable[[Model], Model]) -> None:
    from rondo.agents.llm import Agent

    def visit(agent: BaseAgent) -> None:
        if isinstance(agent, Agent) and agent.model is not None:
            agent.model = swap(agent.model)
        for child in agent.sub_agents:
            visit(child)

    visit(root)


class CliCassette:
    """What `--record` / `--replay` do around loading and running the agent."""

    def __init__(self, *, record: str | None, replay: str | None) -> None:
        if record is not None and replay is not None:
            raise CliError("--record and --replay cannot be used together")
        # rondo.testing is imported only when a cassette is asked for.
        self.recorder: CassetteRecorder | None = None
        self.player: CassettePlayer | None = None
        if replay is not None:
            from rondo.testing.cassette import CassettePlayer

            self.player = CassettePlayer(replay)
        self.record_path = record

    def _replay_model(self, name: str) -> Model:
        assert self.player is not None
        return self.player.model(name)

    @contextmanager
    def loading(self) -> Generator[None]:
        """Around loading the agent: with `--replay`, model strings resolve to the cassette."""
        if self.player is None:
            yield
            return
        from rondo.models.registry import substitute_models

        with substitute_models(lambda spec: self._replay_model(spec.partition(":")[2] or spec)):
            yield

    def load_agent(self, path: str, model: str | None) -> BaseAgent:
        """The agent at `path` (with `--model` applied), its models through the cassette."""
        with self.loading():
            agent = load_agent(path)
            if model is not None:
                from rondo.models.registry import resolve_model

                override_model(agent, resolve_model(model))
        self.attach(agent)
        return agent

    def attach(self, agent: BaseAgent) -> None:
        """After loading: wrap every model for recording, or replace it by its replay."""
        if self.player is not None:
            from rondo.testing.cassette import ReplayModel

            _swap_models(
                agent, lambda m: m if isinstance(m, ReplayModel) else self._replay_model(m.name)
            )
        elif self.record_path is not None:
            from rondo.testing.cassette import CassetteRecorder

            recorder = self.recorder = self.recorder or CassetteRecorder(self.record_path)
            wrapped: dict[int, Model] = {}  # a model shared by several agents is wrapped once

            def wrap(model: Model) -> Model:
                if id(model) not in wrapped:
                    wrapped[id(model)] = recorder.wrap(model)
                return wrapped[id(model)]

            _swap_models(agent, wrap)

    def model(self, name: str, resolve: Callable[[str], Model]) -> Model:
        """A model the eval itself asks (a judge, a user simulator), through the cassette too:
        replayed under its name, or resolved and recorded with the agent's exchanges."""
        if self.player is not None:
            return self._replay_model(name.partition(":")[2] or name)
        model = resolve(name)
        if self.record_path is not None:
            if self.recorder is None:
                from rondo.testing.cassette import CassetteRecorder

                self.recorder = CassetteRecorder(self.record_path)
            return self.recorder.wrap(model)
        return model

    def finish(self) -> None:
        """After the run: a replay that left recorded calls unasked is an error."""
        if self.player is not None:
            self.player.check_finished()
