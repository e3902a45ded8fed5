"""A private PostgreSQL cluster for tests that stop, kill or restart the server.

The shared server (`RONDO_TEST_POSTGRES_URL`) is never touched: the cluster is initdb'd into a
temp directory, listens on a free loopback port and is removed afterwards. Without the server
binaries (`/usr/lib/postgresql/*/bin`, or `RONDO_PG_BINDIR`) the tests skip — or fail, with
`RONDO_REQUIRE_POSTGRES_SERVER=1`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._require import require, require_module

__all__ = ["PgCluster", "pg_cluster"]


def _bindir() -> Path | None:
    env = os.environ.get("RONDO_PG_BINDIR")
    if env:
        return Path(env)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return Path(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    """initdb + pg_ctl on a temp directory; as the `postgres` user when run as root."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="rondo-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            # initdb refuses root: the cluster belongs to the postgres system user.
            shutil.chown(self.root, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-w",
            "-l",
            str(self.root / "log"),
            "start",
        )

    def stop(self, mode: str = "immediate") -> None:
        """`immediate` is a crash of the server: no checkpoint, WAL recovery on start."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "immediate") -> None:
        self.stop(mode)
        self.start()

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def pg_cluster() -> Iterator[PgCluster]:
    """A fresh private PostgreSQL server, started; removed after the test."""
    require_module("asyncpg", what="POSTGRES", install="pip install 'rondo-agents[postgres]'")
    bindir = _bindir()
    require(
        bindir is not None and (bindir / "initdb").exists() and (bindir / "pg_ctl").exists(),
        what="POSTGRES_SERVER",
        reason="PostgreSQL server binaries (initdb, pg_ctl) not found; set RONDO_PG_BINDIR",
    )
    assert bindir is not None
    cluster = PgCluster(bindir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
