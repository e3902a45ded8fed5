"""uvicorn's access log, the same lines at a third of the cost (issue 25.5).

`rondo api-server` keeps uvicorn's access log on, as uvicorn and google-adk's `api_server` do.
uvicorn's formatter copies every record twice (`copy.copy`, once per formatter class) and
looks the status phrase up through the `HTTPStatus` enum: about half of the ~20 µs a line
costs, three lines a run. `AccessFormatter` writes the very same line from one dict of the
record's values. A coloured log (stdout is a terminal) keeps uvicorn's own path.
"""

from __future__ import annotations

import copy
import http
import logging
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter as UvicornAccessFormatter

__all__ = ["AccessFormatter", "log_config"]

# "200 OK", as uvicorn writes a status (a code HTTP does not name gets no phrase).
_STATUS_LINES = {int(status): f"{int(status)} {status.phrase}" for status in http.HTTPStatus}


class AccessFormatter(UvicornAccessFormatter):
    """uvicorn's access line (`%(levelprefix)s %(client_addr)s - "%(request_line)s"
    %(status_code)s` unless configured otherwise), without copying the record."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The fast path needs %-style and no defaults, as uvicorn's configurations have.
        self._plain = type(self._style) is logging.PercentStyle and not self.use_colors

    def formatMessage(self, record: logging.LogRecord) -> str:
        args = record.args
        if not self._plain or not isinstance(args, tuple) or len(args) != 5:
            return super().formatMessage(record)
        client_addr, method, full_path, http_version, status_code = args
        code = int(status_code)  # pyright: ignore[reportArgumentType]
        values = record.__dict__.copy()
        levelname = record.levelname
        values["levelprefix"] = levelname + ":" + " " * (8 - len(levelname))
        values["client_addr"] = client_addr
        values["request_line"] = f"{method} {full_path} HTTP/{http_version}"
        values["status_code"] = _STATUS_LINES.get(code) or f"{code} "
        fmt: str = self._fmt or ""
        return fmt % values


def log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration, with `AccessFormatter` for the access log."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["access"]["()"] = f"{__name__}.AccessFormatter"
    return config
