"""An app whose model provider always fails (issue 23: a model error's message shows in the
conversation, live and after a reload). Kept out of `agents/`, which serves one app only."""

from __future__ import annotations

from rondo import Agent
from rondo.errors import ModelServerError
from rondo.testing import ScriptedModel

MESSAGE = "provider said 503"

root_agent = Agent(
    name="flaky",
    # Every model call fails the same way (the script has room for many runs and retries).
    model=ScriptedModel([lambda _request: ModelServerError(MESSAGE) for _ in range(200)]),
    instruction="You are a helpful assistant.",
)
