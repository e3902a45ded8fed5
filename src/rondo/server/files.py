"""The files a user's message carries, checked before anything runs (issue 22): a file over
`MAX_FILE_BYTES` is refused with 413, a type the app's model does not take with 415 — the
file is never sent. Every run route checks them (`runs.start_run`)."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import HTTPException

from rondo.agents.llm import Agent
from rondo.errors import ConfigurationError
from rondo.models.base import DEFAULT_INPUT_TYPES, model_capabilities
from rondo.runner import Runner
from rondo.types import Content

__all__ = ["MAX_FILE_BYTES", "check_files", "has_files"]


# The largest file a message may carry: a request body of `DEFAULT_MAX_BODY_BYTES` holds
# about this much once base64-encoded.
MAX_FILE_BYTES = 7 * 1024 * 1024


def _accepts(types: Sequence[str], mime_type: str) -> bool:
    family = mime_type.split("/", 1)[0] + "/*"
    return mime_type in types or family in types


def _input_types(runner: Runner) -> tuple[str, ...]:
    agent = runner.agent
    if not isinstance(agent, Agent):
        return DEFAULT_INPUT_TYPES
    try:
        return model_capabilities(agent.canonical_model).input_types
    except ConfigurationError:
        return DEFAULT_INPUT_TYPES


def check_files(message: Content, runner: Runner) -> None:
    """Refuse a file over `MAX_FILE_BYTES` (413) or of a type the app's model does not take
    (415), before anything runs."""
    types: tuple[str, ...] | None = None
    for part in message.parts:
        blob = part.inline_data
        mime_type = blob.mime_type if blob is not None else None
        if blob is not None and len(blob.data) > MAX_FILE_BYTES:
            name = blob.display_name or "a file"
            raise HTTPException(
                413,
                detail=f"{name} is {len(blob.data)} bytes: a file may have at most "
                f"{MAX_FILE_BYTES} bytes",
            )
        if mime_type is None and part.file_data is not None:
            mime_type = part.file_data.mime_type
        if mime_type is None:
            continue
        types = types or _input_types(runner)
        if not _accepts(types, mime_type):
            raise HTTPException(
                415,
                detail=f"the app's model does not take {mime_type} files (it takes "
                f"{', '.join(types)}); the file was not sent",
            )


def has_files(message: Content) -> bool:
    """Whether `message` carries a file (inline data or a file reference)."""
    return any(p.inline_data is not None or p.file_data is not None for p in message.parts)
