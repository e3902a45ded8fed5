"""The agent card at the host root (`/.well-known/agent-card.json`), for `--a2a`.

The A2A specification (§8.2) recommends that location, and many clients — the protocol's own
conformance kit among them — look nowhere else. A host has one root, so it serves one app's
card: the only app of AGENTS_DIR, or the one `--a2a-root APP` names. Its URLs are those of
`/a2a/APP`, where the app answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import Route

from rondo.errors import ConfigurationError

if TYPE_CHECKING:
    from rondo.a2a.server import A2AApps
    from rondo.server.discovery import AppRegistry

__all__ = ["A2A_MOUNT", "a2a_root_card_routes"]

A2A_MOUNT = "/a2a"


def a2a_root_card_routes(a2a: A2AApps, apps: AppRegistry, root: str | None) -> list[Route]:
    """GET routes at the card paths of the host, serving `root`'s card (else the only app's;
    a 404 saying what to do while there are several)."""
    from rondo.a2a.server import CARD_PATHS

    if root is not None:
        try:
            apps.check(root)
        except LookupError as exc:
            raise ConfigurationError(f"--a2a-root: {exc}") from None

    def name_for() -> str | None:
        if root is not None:
            return root
        names = apps.names()  # read each time: an app folder may be added while serving
        return names[0] if len(names) == 1 else None

    card = a2a.root_card(name_for, A2A_MOUNT)
    return [Route(path, endpoint=card, methods=["GET", "HEAD"]) for path in CARD_PATHS]
