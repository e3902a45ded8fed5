"""What every route reads: the apps, the stores, the auth and the runs going on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import Request

from rondo.server.auth import USER_KEY, authorize
from rondo.server.claims import CLAIM_TTL, SessionClaims
from rondo.server.run_control import cancel_notice
from rondo.server.runs import RunRegistry
from rondo.server.streams import ActiveRuns
from rondo.server.takeover import resume_lapsed

if TYPE_CHECKING:
    from rondo.artifacts.base import BaseArtifactService
    from rondo.models.live import LiveRequestQueue
    from rondo.server.auth import TokenAuth
    from rondo.server.discovery import AppRegistry
    from rondo.server.span_store import SpanStore
    from rondo.sessions.base import BaseSessionService

__all__ = ["ServerState", "owner", "server_state"]


@dataclass
class ServerState:
    apps: AppRegistry
    sessions: BaseSessionService
    artifacts: BaseArtifactService
    auth: TokenAuth | None = None
    runs: ActiveRuns = field(default_factory=ActiveRuns)
    claims: SessionClaims = field(init=False)
    # The runs this process drives (detached from their requests, SPEC W7).
    detached: RunRegistry = field(default_factory=RunRegistry)
    # ADK's dev UI asks for telemetry consent; rondo sends none and only remembers the answer.
    telemetry_consent: bool = False
    # Where the trace routes find spans (SPEC O2); None when the server keeps none.
    spans: SpanStore | None = None
    # How long a run's claim outlives its last renewal (a dead replica's runs wait that long).
    claim_ttl: float = CLAIM_TTL
    # The live calls this process serves, by (app, user, session): a decision on a call that
    # waits inside one goes to its queue (issue 20, L3).
    live_calls: dict[tuple[str, str, str], LiveRequestQueue] = field(
        default_factory=dict[tuple[str, str, str], "LiveRequestQueue"]
    )

    def __post_init__(self) -> None:
        self.claims = claims = SessionClaims(self.sessions, self.runs, self.claim_ttl)
        claims.on_cancel_notice = lambda payload: cancel_notice(self, payload)
        claims.on_lapsed = lambda key, version, release: resume_lapsed(self, key, version, release)
        claims.app_names = self.apps.names


def server_state(request: Request) -> ServerState:
    return request.app.state.rondo


def owner(request: Request, user_id: str) -> ServerState:
    """The server state, once the caller may act as the path's `user_id` (else 403)."""
    authorize(request.scope.get(USER_KEY), user_id)
    return server_state(request)
