"""A2A (Agent2Agent) both ways, on the a2a-sdk 1.x (`pip install 'rondo-agents[a2a]'`).

- Serve: `A2AApp(runner)` is one agent's A2A server (JSON-RPC, agent card generated from the
  agent); `A2AApps(runner_for)` serves many at `/{app}` (`rondo api-server --a2a`).
- Call: `RemoteA2AAgent(name=..., url=...)` is a remote A2A agent as a rondo agent, for
  `sub_agents=[...]` or `AgentTool(...)`.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("a2a") is None:  # pragma: no cover - depends on the extras
    from rondo.errors import ConfigurationError

    raise ConfigurationError("rondo.a2a needs the a2a-sdk: pip install 'rondo-agents[a2a]'")

from rondo.a2a.card import build_agent_card
from rondo.a2a.executor import RondoAgentExecutor
from rondo.a2a.remote import RemoteA2AAgent
from rondo.a2a.server import A2AApp, A2AApps

__all__ = ["A2AApp", "A2AApps", "RemoteA2AAgent", "RondoAgentExecutor", "build_agent_card"]
