"""Issue 23 item 3, in a real terminal: Ctrl-C during an answer cancels that run (SPEC R7)
and comes back to the prompt; a second Ctrl-C, or Ctrl-D, leaves.

`rondo run` runs in a subprocess on a pseudo-terminal (the `pty` module), so Ctrl-C is the
terminal's own SIGINT to the foreground process, as a user's keypress is.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal"),
]

AGENT = """
import asyncio
from pathlib import Path

from rondo import Agent, FunctionCall
from rondo.testing import ScriptedModel

MARKS = Path(__file__).parent

async def wait_forever() -> dict:
    \"\"\"Waits until it is cancelled.\"\"\"
    (MARKS / "started").write_text("yes")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        (MARKS / "cancelled").write_text("yes")
        raise
    return {}

def step(request):
    if request.contents[-1].parts[0].text == "slow":
        return FunctionCall(name="wait_forever", args={})
    return "quick answer"

root_agent = Agent(name="slow", model=ScriptedModel([step] * 10), tools=[wait_forever])
"""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
_PROMPT = "you ›"


class Terminal:
    """A process on a pseudo-terminal: type into it, wait for what it prints."""

    def __init__(self, fd: int, process: subprocess.Popen[bytes]) -> None:
        self.fd = fd
        self.process = process
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def expect(self, text: str, *, after: int = 0, deadline_s: float = 60) -> int:
        """Wait until `text` is printed past offset `after`; its end offset."""
        deadline = time.monotonic() + deadline_s
        while True:
            found = self.seen.find(text, after)
            if found >= 0:
                return found + len(text)
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{text!r} never printed ({self.signals()}); got:\n{self.seen[after:][-2000:]}"
                )
            if not self._read(0.5) and self.process.poll() is not None:
                raise AssertionError(f"exited before {text!r}:\n{self.seen[after:]}")

    def signals(self) -> str:
        """The child's blocked / ignored / caught signal masks, for a failure's message."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return "no /proc status"
        return ", ".join(line for line in status.splitlines() if line.startswith("Sig"))

    def exit_code(self) -> int:
        deadline = time.monotonic() + 60
        while self.process.poll() is None and time.monotonic() < deadline:
            if not self._read(0.5):
                break
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running ({self.signals()}):\n{self.stacks()}") from None

    def _read(self, timeout_s: float) -> bool:
        """Add what the process printed within `timeout_s`; False once the terminal is gone."""
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # the process is gone
            return False
        self.seen += _ANSI.sub("", chunk.decode(errors="replace"))
        return bool(chunk)

    def stacks(self) -> str:
        """What every thread of a stuck process was doing: SIGABRT makes its faulthandler
        (on in `chat`) print their stacks to the terminal."""
        before = len(self.seen)
        self.process.send_signal(signal.SIGABRT)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self._read(0.2):
            if self.process.poll() is not None and not select.select([self.fd], [], [], 0)[0]:
                break
        return self.seen[before:]


def _take_terminal() -> None:
    """In the child, in its new session: make the pty its controlling terminal, so the
    terminal's Ctrl-C reaches it as SIGINT."""
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # A blocked or ignored SIGINT is inherited across exec: whatever a library did to the
    # test process (it happens in a long suite run), the CLI starts as a user's shell starts it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def chat(folder: Path) -> Iterator[Terminal]:
    import pty

    main, child = pty.openpty()
    # PYTHONFAULTHANDLER: a hang's failure shows the CLI's stacks (Terminal.stacks).
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "TERM": "xterm",
        "PYTHONFAULTHANDLER": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "rondo.cli", "run", str(folder), "--db", "memory"],
        stdin=child,
        stdout=child,
        stderr=child,
        cwd=folder,
        env=env,
        start_new_session=True,
        preexec_fn=_take_terminal,
    )
    os.close(child)
    try:
        yield Terminal(main, process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        os.close(main)


@pytest.fixture
def slow_agent(tmp_path: Path) -> Path:
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    return folder


def _cancel_a_run(term: Terminal, folder: Path) -> int:
    at = term.expect(_PROMPT)
    term.type("slow\r")
    at = term.expect("→ wait_forever()", after=at)
    while not (folder / "started").exists():  # the tool is really running
        term.expect("", after=at)
        time.sleep(0.05)
    term.type("\x03")
    at = term.expect("cancelled", after=at)
    at = term.expect(_PROMPT, after=at)
    # R7: the tool in flight was cancelled, not left running.
    assert (folder / "cancelled").read_text() == "yes"
    return at


def test_r7_ctrl_c_cancels_the_answer_and_a_second_ctrl_c_leaves(slow_agent: Path) -> None:
    with chat(slow_agent) as term:
        at = _cancel_a_run(term, slow_agent)
        # Still chatting: the next message is answered.
        term.type("hi\r")
        at = term.expect("quick answer", after=at)
        at = term.expect(_PROMPT, after=at)
        term.type("\x03")
        assert term.exit_code() == 0, term.seen
        assert "Traceback" not in term.seen


def test_r7_ctrl_d_after_a_cancelled_answer_leaves(slow_agent: Path) -> None:
    with chat(slow_agent) as term:
        _cancel_a_run(term, slow_agent)
        term.type("\x04")
        assert term.exit_code() == 0, term.seen
        assert "Traceback" not in term.seen


def test_r7_ctrl_c_typed_the_moment_the_prompt_shows_always_leaves(slow_agent: Path) -> None:
    # `input()` lost about one such Ctrl-C in six (the SIGINT landed before it blocked in
    # `read()`, which then waited for a line): eight tries in a row all leave.
    for _ in range(8):
        with chat(slow_agent) as term:
            at = term.expect(_PROMPT)
            term.type("hi\r")
            at = term.expect("quick answer", after=at)
            term.expect(_PROMPT, after=at)
            term.type("\x03")
            assert term.exit_code() == 0, term.seen
