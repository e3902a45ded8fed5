"""A pytest plugin for running the A2A conformance kit (a2aproject/a2a-tck, main 410ba92)
by hand against rondo: it adds the `A2A-Version: 1.0` header the kit's 1.0 tests omit
(fixed on the kit's own 1.0-dev line, a2a-tck#176/#177). Without it a 1.0 server reads
every request as A2A 0.3 and refuses the 1.0 method names, whatever the server. Load it
with `-p version_header` (this folder on PYTHONPATH); see README.md beside it.
"""

from __future__ import annotations

from typing import Any

import httpx
import requests

HEADER = {"A2A-Version": "1.0"}

_client_init = httpx.Client.__init__
_async_client_init = httpx.AsyncClient.__init__
_session_init = requests.Session.__init__


def _client(self: httpx.Client, *args: Any, **kwargs: Any) -> None:
    kwargs["headers"] = {**HEADER, **dict(kwargs.get("headers") or {})}
    _client_init(self, *args, **kwargs)


def _async_client(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
    kwargs["headers"] = {**HEADER, **dict(kwargs.get("headers") or {})}
    _async_client_init(self, *args, **kwargs)


def _session(self: requests.Session) -> None:
    _session_init(self)
    self.headers.update(HEADER)


def _post(url: str, *args: Any, **kwargs: Any) -> requests.Response:
    kwargs["headers"] = {**HEADER, **dict(kwargs.get("headers") or {})}
    with requests.Session() as session:
        return session.post(url, *args, **kwargs)


httpx.Client.__init__ = _client  # type: ignore[method-assign]
httpx.AsyncClient.__init__ = _async_client  # type: ignore[method-assign]
requests.Session.__init__ = _session  # type: ignore[method-assign]
requests.post = _post  # type: ignore[assignment]
