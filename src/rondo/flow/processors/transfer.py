"""P9: inject `transfer_to_agent` with the legal targets, and say when to use it (SPEC X1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.models.base import ModelRequest
from rondo.tools.transfer import TRANSFER_TOOL_NAME, TransferToAgentTool

if TYPE_CHECKING:
    from rondo.context import AgentNode, InvocationContext
    from rondo.flow.views import FlowView, LlmAgentView

__all__ = ["transfer_processor", "transfer_targets"]


def _is_scoped(agent: AgentNode) -> bool:
    return agent.reached_by_call


def transfer_targets(agent: LlmAgentView) -> list[AgentNode]:
    """Sub-agents, the parent (unless disallowed), peers (unless disallowed).

    Task and single-turn agents are never child or peer targets.
    """
    targets: list[AgentNode] = [sub for sub in agent.sub_agents if not _is_scoped(sub)]
    parent = agent.parent_agent
    # A task or single-turn agent runs inside its parent's call: handing control to the
    # parent or a peer from there would re-enter the caller, so only its own children count.
    if parent is not None and parent.transfers and agent.mode == "chat":
        if not agent.disallow_transfer_to_parent:
            targets.append(parent)
        if not agent.disallow_transfer_to_peers:
            targets.extend(
                peer for peer in parent.sub_agents if peer is not agent and not _is_scoped(peer)
            )
    return targets


def _instruction(agent: LlmAgentView, targets: list[AgentNode]) -> str:
    lines = ["You can hand the conversation to these agents:", ""]
    for target in targets:
        lines.append(f"Agent name: {target.name}")
        if target.description:
            lines.append(f"Agent description: {target.description}")
        lines.append("")
    lines.append(
        "If you are the best agent to answer according to your description, answer yourself. "
        f"If another agent is better suited, call `{TRANSFER_TOOL_NAME}` with its name and "
        "write nothing else."
    )
    parent = agent.parent_agent
    if parent is not None and not agent.disallow_transfer_to_parent and parent in targets:
        lines.append(
            f"Your parent agent is {parent.name}. If neither you nor the other agents fit, "
            "transfer to your parent agent."
        )
    return "\n".join(lines)


def transfer_processor(flow: FlowView, ctx: InvocationContext, request: ModelRequest) -> None:
    targets = flow.transfer_targets
    if not targets:
        return
    agent = flow.agent
    tool = TransferToAgentTool([t.name for t in targets])
    tool.process_request(ctx, request)
    if agent.mode == "chat":
        request.append_instruction(_instruction(agent, targets))
