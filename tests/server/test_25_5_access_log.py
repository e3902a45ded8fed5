"""Issue 25.5: `rondo api-server`'s access log writes uvicorn's very lines, more cheaply
(`rondo.server.access_log`)."""

from __future__ import annotations

import asyncio
import io
import logging
from typing import Any

import pytest
import uvicorn
from uvicorn.logging import AccessFormatter as UvicornAccessFormatter
from uvicorn.server import ServerState

from rondo.server.access_log import AccessFormatter, AccessLog, log_config
from rondo.server.timeouts import ServerTimeouts, uvicorn_options

_FMT = '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'


def _record(status: int, level: int = logging.INFO, path: str = "/run_sse") -> logging.LogRecord:
    args = ("127.0.0.1:5000", "POST", path, "1.1", status)
    return logging.LogRecord(
        "uvicorn.access", level, "h.py", 1, '%s - "%s %s HTTP/%s" %d', args, None
    )


@pytest.mark.parametrize("colors", [False, True])
@pytest.mark.parametrize("status", [200, 404, 101, 422, 503, 599])
@pytest.mark.parametrize("level", [logging.INFO, logging.WARNING])
def test_25_5_the_access_line_is_uvicorns(colors: bool, status: int, level: int) -> None:
    ours = AccessFormatter(_FMT, use_colors=colors)
    theirs = UvicornAccessFormatter(_FMT, use_colors=colors)
    record = _record(status, level, "/apps/a/users/u/sessions?x=%20y")
    assert ours.format(record) == theirs.format(
        _record(status, level, "/apps/a/users/u/sessions?x=%20y")
    )


def test_25_5_other_formats_and_records_take_uvicorns_path() -> None:
    for fmt, style in (
        ("{levelprefix} {client_addr} {status_code}", "{"),
        ("%(asctime)s %(status_code)s", "%"),
    ):
        ours = AccessFormatter(fmt, style=style, use_colors=False)  # pyright: ignore[reportArgumentType]
        theirs = UvicornAccessFormatter(fmt, style=style, use_colors=False)  # pyright: ignore[reportArgumentType]
        record = _record(200)
        record.created = 0.0
        other = _record(200)
        other.created = 0.0
        other.msecs = record.msecs
        assert ours.format(record) == theirs.format(other)
    odd = logging.LogRecord("uvicorn.access", logging.INFO, "h.py", 1, "%s", ("x",), None)
    with pytest.raises(
        ValueError, match="unpack"
    ):  # uvicorn's own path: it needs its five values too
        AccessFormatter(_FMT, use_colors=False).format(odd)


def test_25_5_the_server_runs_with_the_cheaper_access_formatter() -> None:
    options = uvicorn_options(ServerTimeouts())
    assert options["log_config"] == log_config()
    access = options["log_config"]["formatters"]["access"]
    assert access["()"] == "rondo.server.access_log.AccessFormatter"
    assert access["fmt"] == _FMT


_ARGS = ("127.0.0.1:5000", "POST", "/run_sse?x=%20y", "1.1", 200)
_MSG = '%s - "%s %s HTTP/%s" %d'


def _logger(name: str, fmt: str = _FMT) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(AccessFormatter(fmt, use_colors=False))
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.filters[:] = []
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, stream


def _through_logging(fmt: str = _FMT) -> str:
    logger, stream = _logger("test.access.reference", fmt)
    logger.info(_MSG, *_ARGS)
    return stream.getvalue()


def test_25_5_the_direct_access_line_is_what_logging_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger, stream = _logger("test.access.direct")
    # The direct path makes no record: if it made one, this would show it.
    monkeypatch.setattr(logger, "makeRecord", None)
    AccessLog(logger).info(_MSG, *_ARGS)
    assert stream.getvalue() == _through_logging()
    assert (
        stream.getvalue() == 'INFO:     127.0.0.1:5000 - "POST /run_sse?x=%20y HTTP/1.1" 200 OK\n'
    )
    named = "%(name)s %(levelname)s %(status_code)s"
    logger, stream = _logger("test.access.named", named)
    AccessLog(logger).info(_MSG, *_ARGS)
    assert stream.getvalue() == "test.access.named INFO 200 OK\n"


def test_25_5_any_other_logging_configuration_takes_loggings_path() -> None:
    seen: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        seen.append(record)
        return True

    logger, stream = _logger("test.access.filtered")
    logger.addFilter(keep)
    AccessLog(logger).info(_MSG, *_ARGS)
    assert len(seen) == 1
    assert stream.getvalue() == _through_logging()
    assert seen[0].funcName == "test_25_5_any_other_logging_configuration_takes_loggings_path"

    logger, stream = _logger("test.access.timed", "%(asctime)s %(status_code)s")
    logger.handlers[0].addFilter(keep)
    AccessLog(logger).info(_MSG, *_ARGS)
    assert stream.getvalue().endswith(" 200 OK\n")
    assert len(seen) == 2

    logger, stream = _logger("test.access.quiet")
    logger.setLevel(logging.WARNING)
    AccessLog(logger).info(_MSG, *_ARGS)
    logger.setLevel(logging.INFO)
    logger.handlers[0].setLevel(logging.WARNING)
    AccessLog(logger).info(_MSG, *_ARGS)
    assert stream.getvalue() == ""


def test_25_5_a_failing_stream_is_handled_as_logging_handles_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            raise OSError("disk full")

    logger, _ = _logger("test.access.broken")
    handler = logger.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(Broken())  # pyright: ignore[reportUnknownMemberType]
    errors: list[logging.LogRecord] = []
    monkeypatch.setattr(handler, "handleError", errors.append)
    AccessLog(logger).info(_MSG, *_ARGS)
    assert len(errors) == 1
    assert errors[0].getMessage() == '127.0.0.1:5000 - "POST /run_sse?x=%20y HTTP/1.1" 200'


def test_25_5_the_servers_protocol_logs_through_the_direct_path() -> None:
    from rondo.server.timeouts import protocol_with_header_timeout

    config = uvicorn.Config(app=None, log_config=log_config())  # pyright: ignore[reportArgumentType]
    config.load()
    loop = asyncio.new_event_loop()
    try:
        protocol: Any = protocol_with_header_timeout(10.0)(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
    finally:
        loop.close()
    assert isinstance(protocol.access_logger, AccessLog)
    assert protocol.access_logger.logger is logging.getLogger("uvicorn.access")
    assert protocol.access_log
