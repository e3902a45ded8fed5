"""Agent cards generated from the agent (where google-adk needs a hand-written agent.json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import (
    PROTOCOL_VERSION_0_3,
    PROTOCOL_VERSION_CURRENT,
    TransportProtocol,
)

from rondo._version import __version__

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent

__all__ = ["BEARER_SCHEME", "TEXT_MODES", "build_agent_card", "public_card", "with_url"]

TEXT_MODES = ["text/plain"]
BEARER_SCHEME = "bearer"


def _skill(skill_id: str, name: str, description: str, tags: list[str]) -> AgentSkill:
    return AgentSkill(
        id=skill_id,
        name=name,
        description=description or name,
        tags=tags,
        input_modes=TEXT_MODES,
        output_modes=TEXT_MODES,
    )


def _skills(agent: BaseAgent) -> list[AgentSkill]:
    """The agent itself, one skill per tool (its description), one per sub-agent."""
    from rondo.agents.llm import Agent
    from rondo.tools.base import BaseTool

    description = agent.description or f"The {agent.name} agent."
    skills = [_skill(agent.name, agent.name, description, ["agent"])]
    if isinstance(agent, Agent):
        # Toolsets (MCP...) list their tools only once connected: the card lists plain tools.
        skills.extend(
            _skill(f"{agent.name}.{tool.name}", tool.name, tool.description, ["tool"])
            for tool in agent.tools
            if isinstance(tool, BaseTool)
        )
    skills.extend(
        _skill(
            f"{agent.name}.{sub.name}",
            sub.name,
            sub.description or f"The {sub.name} agent.",
            ["sub_agent"],
        )
        for sub in agent.sub_agents
    )
    return skills


def build_agent_card(
    agent: BaseAgent,
    *,
    url: str,
    version: str | None = None,
    streaming: bool = True,
    bearer_auth: bool = False,
) -> AgentCard:
    """The A2A card of `agent` served over JSON-RPC at `url`.

    Name and description are the agent's; `version` defaults to rondo's. The one URL speaks
    A2A 1.0 and, for clients without an `A2A-Version` header, 0.3 (the SDK's compatibility
    layer): the card lists it once per version. With `bearer_auth` the card declares that
    calls need `Authorization: Bearer <token>`.
    """
    card = AgentCard(
        name=agent.name,
        description=agent.description or f"The {agent.name} agent.",
        version=version or __version__,
        supported_interfaces=[
            AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=v
            )
            for v in (PROTOCOL_VERSION_CURRENT, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False),
        default_input_modes=TEXT_MODES,
        default_output_modes=TEXT_MODES,
        skills=_skills(agent),
    )
    if bearer_auth:
        card.security_schemes[BEARER_SCHEME].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.append(
            SecurityRequirement(schemes={BEARER_SCHEME: StringList(list=[])})
        )
    return card


def with_url(card: AgentCard, url: str) -> AgentCard:
    """A copy of `card` whose interfaces are at `url`."""
    served = AgentCard()
    served.CopyFrom(card)
    for interface in served.supported_interfaces:
        interface.url = url
    return served


def public_card(card: AgentCard) -> AgentCard:
    """What anyone may read of a card whose calls need a token: the agent itself and how to
    authenticate. Its tools and sub-agents are in the extended card (`GetExtendedAgentCard`,
    which needs the token), as the specification suggests for details meant for callers."""
    public = AgentCard()
    public.CopyFrom(card)
    del public.skills[1:]
    public.capabilities.extended_agent_card = True
    return public
