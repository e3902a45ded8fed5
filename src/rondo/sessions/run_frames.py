"""The stream frames a store keeps for the processes that share it (SPEC W7).

A run's records are in the session log: any process re-derives their frames from it. Its
lifecycle events are built only by the process that runs it (model rounds, tool calls,
timings) and exist nowhere else, so a store that several server processes share keeps
them: the running process writes each non-partial frame, as the bytes it streamed and under
the id it streamed them with, and any other process streams them back as they are. A store
of one process keeps none (`BaseSessionService.run_frames` is None): its server has them.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

__all__ = ["KEEP", "Frame", "RunFrames", "RunKey"]

# How long kept frames last (seconds): they serve clients rejoining a run, who come back
# within minutes; the log keeps the run's records for good.
KEEP = 24 * 3600.0

Frame = tuple[int, int, str]  # (n, k) — the frame's id — and the SSE frame as streamed
RunKey = tuple[str, str, str, str]  # (app_name, user_id, session_id, run_id)


class RunFrames(abc.ABC):
    """The kept frames of a store's runs."""

    @abc.abstractmethod
    async def keep(self, run: RunKey, fmt: str, frames: Sequence[Frame]) -> None:
        """Keep `frames` of `run`, started on a route of format `fmt` (a frame kept
        twice is kept once)."""

    @abc.abstractmethod
    async def after(self, run: RunKey, after: tuple[int, int]) -> list[Frame]:
        """The kept frames of `run` after the id `after`, in order."""

    @abc.abstractmethod
    async def format(self, run: RunKey) -> str | None:
        """The format of the route that started `run`; None when no frame of it is kept."""

    @abc.abstractmethod
    async def last(self, run: RunKey) -> tuple[int, int] | None:
        """The id of the last kept frame of `run`."""

    @abc.abstractmethod
    async def of_session(self, key: tuple[str, str, str]) -> dict[str, tuple[str, tuple[int, int]]]:
        """For each run of the session `key` with kept frames: its format and the id of its
        last kept frame."""

    @abc.abstractmethod
    async def prune(self, keep: float = KEEP) -> int:
        """Forget the frames older than `keep` seconds; how many went."""
