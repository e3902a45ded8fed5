"""Reading a line at the chat prompt, where Ctrl-C must always be seen.

`input()` can lose a Ctrl-C typed just as the prompt appears: the SIGINT lands after Python's
last check for signals and before `input()` blocks in `read()`, which then waits for a line
that never comes (one exit in six, in a terminal test typing Ctrl-C at once). Here the wait
is a `select()` that returns to Python every 0.1 s, so a pending SIGINT is raised as
`KeyboardInterrupt` within that time; the line is then read in one `read()`, which the
terminal's canonical mode answers with the line typed (or nothing, for Ctrl-D).
"""

from __future__ import annotations

import os
import select
import sys

from rich.console import Console

__all__ = ["read_line"]

_POLL_S = 0.1


def read_line(console: Console, prompt: str) -> str:
    """Print `prompt` (Rich markup) and read a line, as `Console.input` does: EOFError on
    Ctrl-D at an empty line, KeyboardInterrupt on Ctrl-C."""
    stdin = sys.stdin
    if sys.platform == "win32" or not stdin.isatty():
        return console.input(prompt)
    console.print(prompt, end="")
    fd = stdin.fileno()
    encoding = stdin.encoding or "utf-8"
    line = b""
    while True:
        ready, _, _ = select.select([fd], [], [], _POLL_S)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:  # Ctrl-D: the end of input at an empty line, else the line as typed
            if not line:
                raise EOFError
            return line.decode(encoding, errors="replace")
        line += chunk
        if line.endswith(b"\n"):
            return line[:-1].decode(encoding, errors="replace")
