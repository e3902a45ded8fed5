"""rondo's HTTP server: google-adk's REST + SSE API, rondo's lifecycle stream, the web UI.

Needs the `server` extra (`pip install 'rondo-agents[server]'`); the core never imports it.

    from rondo.server import create_app
    app = create_app("agents/", db="memory")     # then: uvicorn.run(app)
"""

from __future__ import annotations

from rondo.server.app import DEFAULT_MAX_BODY_BYTES, create_app
from rondo.server.auth import TokenAuth, load_tokens

__all__ = ["DEFAULT_MAX_BODY_BYTES", "TokenAuth", "create_app", "load_tokens"]
