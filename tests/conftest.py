"""Shared test set-up: no test may reach a real model provider over the network."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests._require import required

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


@pytest.fixture(autouse=True)
def _block_remote_network(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Fail any connection to a non-loopback host: unit tests never call real providers."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in _LOCAL_HOSTS and self.family != socket.AF_UNIX:
            raise RuntimeError(f"test {request.node.nodeid} tried to reach {host}: no network")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """A test module that imports hypothesis at its top, on an install without it, is skipped
    naming it (as `tests/_require.py` skips the others) instead of failing the collection;
    with RONDO_REQUIRE_HYPOTHESIS=1 (CI) it still fails."""
    report = yield
    if (
        report.failed
        and isinstance(collector, pytest.Module)
        and "No module named 'hypothesis'" in str(report.longrepr)
        and not required("HYPOTHESIS")
    ):
        report.outcome = "skipped"
        report.longrepr = (
            str(collector.path),
            0,
            "Skipped: needs hypothesis (pip install hypothesis)",
        )
    return report
