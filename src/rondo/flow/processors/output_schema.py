"""P8: structured-output fallback — inject `set_model_response` and ask for it (SPEC S2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.flow.processors.basic import needs_output_schema_fallback
from rondo.models.base import ModelRequest
from rondo.tools.agent_tool import FINISH_TASK, FinishTaskTool
from rondo.tools.structured import SET_MODEL_RESPONSE, SetModelResponseTool

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def output_schema_processor(flow: FlowView, ctx: InvocationContext, request: ModelRequest) -> None:
    agent = flow.agent
    if agent.mode == "task":
        # S3: a task agent carries its (structured) result in finish_task.
        FinishTaskTool(agent.output_json_schema, agent.output_adapter).process_request(ctx, request)
        request.append_instruction(
            f"When the task is complete, call `{FINISH_TASK}` with its result. "
            "That call ends your work."
        )
        return
    if not needs_output_schema_fallback(flow):
        return
    schema = agent.output_json_schema
    adapter = agent.output_adapter
    assert schema is not None
    assert adapter is not None
    SetModelResponseTool(adapter, schema).process_request(ctx, request)
    request.append_instruction(
        f"When you have the final answer, call `{SET_MODEL_RESPONSE}` with it; its arguments "
        "must match the required response schema. Do not answer in plain text."
    )
