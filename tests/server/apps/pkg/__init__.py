"""An app that is a package defining `root_agent` itself (no agent.py)."""

from rondo import Agent
from rondo.testing import ScriptedModel

root_agent = Agent(name="pkg", model=ScriptedModel(["hello from a package"] * 100))
