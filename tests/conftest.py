"""Shared test set-up: no test may reach a real model provider over the network."""

from __future__ import annotations

import socket
from typing import Any

import pytest

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
