"""Files saved from user messages (`RunConfig.save_input_blobs_as_artifacts`) go back to the
model as the files they were: each `artifact://` reference in the history is replaced, in this
request only, by the artifact's bytes (SPEC R5, W8). Runs without the setting skip the scan."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from rondo.artifacts.inputs import artifact_reference
from rondo.models.base import ModelRequest
from rondo.types import Content, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def input_files_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> Awaitable[None] | None:
    if not ctx.run_config.save_input_blobs_as_artifacts or ctx.artifact_service is None:
        return None
    if not any(artifact_reference(p) for c in request.contents for p in c.parts):
        return None
    return _load(ctx, request)


async def _load(ctx: InvocationContext, request: ModelRequest) -> None:
    service = ctx.artifact_service
    assert service is not None
    for i, content in enumerate(request.contents):
        if not any(artifact_reference(p) for p in content.parts):
            continue
        parts: list[Part] = []
        for part in content.parts:
            ref = artifact_reference(part)
            loaded = None
            if ref is not None:
                loaded = await service.load_artifact(
                    app_name=ctx.app_name,
                    user_id=ctx.user_id,
                    session_id=ctx.session.id,
                    filename=ref[0],
                    version=ref[1],
                )
            # A file that is gone stays a reference: the model is told its name, not nothing.
            parts.append(loaded if loaded is not None else part)
        # Contents are shared records: replaced, never changed.
        request.contents[i] = Content(role=content.role, parts=parts)
