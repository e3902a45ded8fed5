"""Issue 25.5: `rondo api-server`'s access log writes uvicorn's very lines, more cheaply
(`rondo.server.access_log`)."""

from __future__ import annotations

import logging

import pytest
from uvicorn.logging import AccessFormatter as UvicornAccessFormatter

from rondo.server.access_log import AccessFormatter, log_config
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
