"""P8: structured-output fallback — inject `set_model_response` and ask for it (SPEC S2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.flow.processors.basic import needs_output_schema_fallback
from rondo.models.base import ModelRequest
from rondo.tools.structured import SET_MODEL_RESPONSE, SetModelResponseTool

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.loop import Flow


def output_schema_processor(flow: Flow, ctx: InvocationContext, request: ModelRequest) -> None:
    if not needs_output_schema_fallback(flow):
        return
    agent = flow.agent
    schema = agent.output_json_schema
    adapter = agent.output_adapter
    assert schema is not None
    assert adapter is not None
    SetModelResponseTool(adapter, schema).process_request(ctx, request)
    request.append_instruction(
        f"When you have the final answer, call `{SET_MODEL_RESPONSE}` with it; its arguments "
        "must match the required response schema. Do not answer in plain text."
    )
