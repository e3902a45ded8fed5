"""uvicorn's access log, the same lines at a fraction of the cost (issue 25.5).

`rondo api-server` keeps uvicorn's access log on, as uvicorn and google-adk's `api_server` do.
uvicorn's formatter copies every record twice (`copy.copy`, once per formatter class) and
looks the status phrase up through the `HTTPStatus` enum: about half of the ~20 µs a line
costs, three lines a run. `AccessFormatter` writes the very same line from one dict of the
record's values. A coloured log (stdout is a terminal) keeps uvicorn's own path.

With the server's own logging configuration unchanged (one plain stream handler, the
formatter above, no filters), `AccessLog` writes that line straight to the handler's stream
under the handler's lock: no caller lookup through the stack, no `LogRecord`, no handler
chain — the rest of a line's cost. Any other configuration (a user's `--log-config`, a filter,
another handler, a propagating logger) takes logging's whole path.
"""

from __future__ import annotations

import copy
import http
import logging
import re
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter as UvicornAccessFormatter

__all__ = ["AccessFormatter", "AccessLog", "log_config"]

# "200 OK", as uvicorn writes a status (a code HTTP does not name gets no phrase).
_STATUS_LINES = {int(status): f"{int(status)} {status.phrase}" for status in http.HTTPStatus}

# The record's fields a line can be written from without a record.
_RECORDLESS_FIELDS = frozenset(
    {"levelprefix", "levelname", "name", "client_addr", "request_line", "status_code"}
)


def _line_values(levelname: str, args: tuple[Any, ...]) -> dict[str, Any]:
    client_addr, method, full_path, http_version, status_code = args
    code = int(status_code)
    return {
        "levelname": levelname,
        "levelprefix": levelname + ":" + " " * (8 - len(levelname)),
        "client_addr": client_addr,
        "request_line": f"{method} {full_path} HTTP/{http_version}",
        "status_code": _STATUS_LINES.get(code) or f"{code} ",
    }


class AccessFormatter(UvicornAccessFormatter):
    """uvicorn's access line (`%(levelprefix)s %(client_addr)s - "%(request_line)s"
    %(status_code)s` unless configured otherwise), without copying the record."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The fast path needs %-style and no defaults, as uvicorn's configurations have.
        self._plain = type(self._style) is logging.PercentStyle and not self.use_colors
        fields = set(re.findall(r"%\((\w+)\)", self._fmt or ""))
        self.recordless = self._plain and fields <= _RECORDLESS_FIELDS

    def formatMessage(self, record: logging.LogRecord) -> str:
        args = record.args
        if not self._plain or not isinstance(args, tuple) or len(args) != 5:
            return super().formatMessage(record)
        values = record.__dict__.copy()
        values.update(_line_values(record.levelname, args))
        fmt: str = self._fmt or ""
        return fmt % values

    def line(self, name: str, args: tuple[Any, ...]) -> str:
        """The INFO line of logger `name` for uvicorn's five access values (`recordless`
        formats only): what `format` returns for the record logging would make."""
        values = _line_values("INFO", args)
        values["name"] = name
        fmt: str = self._fmt or ""
        return fmt % values


class AccessLog:
    """What uvicorn's HTTP protocol logs its access lines through (`access_logger.info`):
    the line written straight to the stream of the server's own configuration, logging's
    whole path for any other."""

    __slots__ = ("logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def info(self, msg: str, *args: Any) -> None:
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        handler = self._direct_handler()
        if handler is None or len(args) != 5:
            # stacklevel: the caller logging records is uvicorn's, as without this class.
            logger.info(msg, *args, stacklevel=2)
            return
        formatter: AccessFormatter = handler.formatter  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
        with handler.lock:  # pyright: ignore[reportOptionalContextManager]
            try:
                stream = handler.stream
                stream.write(formatter.line(logger.name, args) + handler.terminator)
                flush = getattr(stream, "flush", None)
                if flush is not None:
                    flush()
            except RecursionError:
                raise
            except Exception:
                record = logger.makeRecord(logger.name, logging.INFO, "", 0, msg, args, None)
                handler.handleError(record)

    def _direct_handler(self) -> logging.StreamHandler[Any] | None:
        """The logger's one handler when a line can skip logging's path: a plain stream
        handler with `AccessFormatter`, nothing filtering, nothing propagated."""
        logger = self.logger
        handlers = logger.handlers
        if len(handlers) != 1 or logger.filters or logger.propagate:
            return None
        handler = handlers[0]
        if type(handler) is not logging.StreamHandler or handler.filters:
            return None
        formatter = handler.formatter
        if type(formatter) is not AccessFormatter or not formatter.recordless:
            return None
        if handler.level > logging.INFO:
            return None
        return handler  # pyright: ignore[reportUnknownVariableType]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.logger, name)


def log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration, with `AccessFormatter` for the access log."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["access"]["()"] = f"{__name__}.AccessFormatter"
    return config
