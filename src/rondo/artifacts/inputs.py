"""A user message's files as artifacts (`RunConfig.save_input_blobs_as_artifacts`, seed 000's
`SaveInputBlobsAsArtifacts`; SPEC R5, W8).

Each inline file of the message is saved as a new artifact version and replaced in the stored
message by a `file_data` part pointing at it (`artifact://NAME?version=N`), so the session
keeps the bytes once, in the artifact store; the request builder puts the bytes back for the
model (`rondo.flow.processors.input_files`), which still sees the file.
"""

from __future__ import annotations

import re

from rondo.artifacts.base import BaseArtifactService
from rondo.types import Content, FileData, Part

__all__ = ["ARTIFACT_URI", "artifact_reference", "save_input_blobs"]

ARTIFACT_URI = "artifact://"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _name(display_name: str | None, invocation_id: str, index: int) -> str:
    """A safe artifact name: the file's own name when it has one (cleaned), else a made-up one
    that cannot clash with another message's."""
    cleaned = _UNSAFE.sub("_", display_name or "").strip("._")
    return cleaned or f"upload_{invocation_id}_{index}"


def artifact_reference(part: Part) -> tuple[str, int] | None:
    """The artifact name and version a part refers to, if it is such a reference."""
    data = part.file_data
    if data is None or not data.file_uri.startswith(ARTIFACT_URI):
        return None
    name, _, version = data.file_uri[len(ARTIFACT_URI) :].partition("?version=")
    return (name, int(version)) if version.isdigit() else None


async def save_input_blobs(
    message: Content,
    artifacts: BaseArtifactService,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    invocation_id: str,
) -> tuple[Content, dict[str, int]]:
    """`message` with its inline files saved and replaced by references, and the versions
    saved (the user event's artifact delta)."""
    if not any(p.inline_data is not None for p in message.parts):
        return message, {}
    parts: list[Part] = []
    saved: dict[str, int] = {}
    for index, part in enumerate(message.parts):
        blob = part.inline_data
        if blob is None:
            parts.append(part)
            continue
        name = _name(blob.display_name, invocation_id, index)
        version = await artifacts.save_artifact(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=name, artifact=part
        )
        saved[name] = version
        uri = f"{ARTIFACT_URI}{name}?version={version}"
        parts.append(
            Part(file_data=FileData(file_uri=uri, mime_type=blob.mime_type, display_name=name))
        )
    return Content(role=message.role, parts=parts), saved
