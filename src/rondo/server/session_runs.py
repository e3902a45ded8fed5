"""What stopping, queueing and starting runs read of the server state, as protocols.

`ServerState` (`rondo.server.state`) holds the stores and the run registry and installs the
cancel-notice listener; the modules that run, stop and queue runs (`runs`, `run_control`,
`multitask`) sit below it and read it through these, so none of them imports the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rondo.server.claims import SessionClaims
    from rondo.sessions.base import BaseSessionService

__all__ = ["RunningRun", "RunningRuns", "SessionRuns"]


class RunningRun(Protocol):
    """A run this process drives (`rondo.server.runs.DetachedRun`)."""

    @property
    def run_id(self) -> str: ...

    def cancel(self, reason: str) -> bool:
        """Stop it at its next stop point; False when it already ended."""
        ...

    async def wait(self) -> None:
        """Until it has ended."""
        ...

    async def started(self) -> None:
        """Until it knows its run id."""
        ...


class RunningRuns(Protocol):
    """The runs this process drives (`rondo.server.runs.RunRegistry`)."""

    def current(self, app_name: str, user_id: str, session_id: str) -> RunningRun | None: ...


class SessionRuns(Protocol):
    """The store, the session claims and this process's runs (`ServerState`)."""

    @property
    def sessions(self) -> BaseSessionService: ...
    @property
    def claims(self) -> SessionClaims: ...
    @property
    def detached(self) -> RunningRuns: ...
