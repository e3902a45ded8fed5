"""The web UI's static files, mounted at `/` without hiding the API's 405s.

A mount at `/` matches every path, so Starlette would hand `GET /run` (a POST-only route) to
the static files, which answer 404. google-adk answers 405 with an `Allow` header there, and
so does rondo: a path that an API route serves, asked with another method, is a 405.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi.staticfiles import StaticFiles
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

__all__ = ["UiFiles"]


class UiFiles(StaticFiles):
    """`StaticFiles` that answers 405 for the paths of `api_routes` (their methods only)."""

    def __init__(self, *, directory: str, api_routes: Sequence[BaseRoute]) -> None:
        super().__init__(directory=directory, html=True)
        self._api_routes = api_routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        allowed = self._allowed_methods(scope)
        if allowed:
            headers = {"Allow": ", ".join(sorted(allowed))}
            response = JSONResponse({"detail": "Method Not Allowed"}, 405, headers=headers)
            await response(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    def _allowed_methods(self, scope: Scope) -> set[str]:
        """The methods of the API routes whose path is this one (none when it is a UI path)."""
        allowed: set[str] = set()
        for route in self._api_routes:
            match, _ = route.matches(scope)
            if match is Match.PARTIAL:
                allowed.update(getattr(route, "methods", None) or ())
        return allowed
