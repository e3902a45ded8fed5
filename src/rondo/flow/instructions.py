"""State injection into instruction templates (SPEC P4).

`{key}`, `{ key }`, `{app:key}`, `{user:key}`, `{temp:key}`, `{artifact.name}`, each optionally
with a trailing `?` (empty when missing). As in ADK, a group may have several braces on either
side (`{{key}}` is `{key}`; all its braces are replaced), and a group preceded by `$`, `{` or
a backslash is not one. A group whose content is not such a name — JSON, `{a b}` — is left exactly as
written. Values are inserted once and never re-expanded.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rondo.errors import ConfigurationError, InstructionError

if TYPE_CHECKING:
    from rondo.context import InvocationContext

__all__ = ["inject_session_state"]

_GROUP = re.compile(r"(?<![${\\])\{+([^{}]*)\}+")
_PREFIXES = ("app:", "user:", "temp:")


def _is_state_name(name: str) -> bool:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.isidentifier()


async def inject_session_state(template: str, ctx: InvocationContext) -> str:
    """Replace placeholders in `template` with state values and artifact text."""
    if "{" not in template:
        return template
    out: list[str] = []
    pos = 0
    state = ctx.state
    for match in _GROUP.finditer(template):
        name = match.group(1).strip()
        optional = name.endswith("?")
        if optional:
            name = name[:-1]
        replacement: str | None
        if name.startswith("artifact.") and len(name) > len("artifact."):
            replacement = await _artifact_text(ctx, name[len("artifact.") :], optional)
        elif _is_state_name(name):
            if name in state:
                value = state[name]
                replacement = "" if value is None else str(value)
            elif optional:
                replacement = ""
            else:
                raise InstructionError(
                    f"instruction placeholder {{{name}}} has no value in the session state; "
                    f"set state[{name!r}] or write {{{name}?}} to make it optional"
                )
        else:
            replacement = None
        if replacement is not None:
            out.append(template[pos : match.start()])
            out.append(replacement)
            pos = match.end()
    out.append(template[pos:])
    return "".join(out)


async def _artifact_text(ctx: InvocationContext, filename: str, optional: bool) -> str:
    service = ctx.artifact_service
    if service is None:
        raise ConfigurationError(
            f"instruction placeholder {{artifact.{filename}}} needs an artifact service on the Runner"
        )
    part = await service.load_artifact(
        app_name=ctx.app_name,
        user_id=ctx.user_id,
        session_id=ctx.session.id,
        filename=filename,
    )
    if part is None:
        if optional:
            return ""
        raise InstructionError(f"instruction placeholder {{artifact.{filename}}}: no such artifact")
    if part.text is not None:
        return part.text
    if part.inline_data is not None:
        return part.inline_data.data.decode("utf-8", errors="replace")
    return ""
