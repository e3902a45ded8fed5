"""Run a child process that prints `EVENT <id>` lines, and SIGKILL it at a chosen line."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence

import pytest

__all__ = ["kill_when"]


def kill_when(
    args: Sequence[str],
    stop: Callable[[str, list[str]], bool],
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """Start `args`, collect the ids of its `EVENT` lines until `stop(line, ids)` holds, then
    SIGKILL it; the ids it had printed. Fails if the child ends before that."""
    child = subprocess.Popen(list(args), stdout=subprocess.PIPE, text=True, env=env)
    received: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("EVENT "):
                received.append(line.split()[1])
            if stop(line, received):
                break
        else:
            pytest.fail("the child ended before it was killed")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return received
