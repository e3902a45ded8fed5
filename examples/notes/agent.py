"""State and artifacts: a note-taker that keeps each note as a versioned artifact and counts
them in the session's state.

    rondo run examples/notes "note shopping: milk, eggs" --session n1
    rondo run examples/notes "note shopping: milk, eggs, bread" --session n1
    rondo run examples/notes "read shopping" --session n1

`save_note` writes `notes/<title>.md` (a new version each time: `rondo web examples` shows
every version on the Artifacts tab) and records `note_count` (this session) and
`user:last_note` (every session of this user) in the state; the instruction reads both back
(`{note_count?}`, `{user:last_note?}`). Artifacts live beside durable sessions, under
`.rondo/artifacts`. Offline on a `FunctionModel`; set `RONDO_MODEL` for a real model.
"""

from __future__ import annotations

import os
import re
from typing import Any

from rondo import Agent, FunctionCall, ToolContext
from rondo.models import ModelRequest
from rondo.testing import FunctionModel
from rondo.types import Part


async def save_note(title: str, text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Saves a note as the artifact notes/<title>.md (a new version if it exists).

    Args:
        title: A short name for the note, e.g. "shopping".
        text: What the note says.
    """
    version = await tool_context.save_artifact(f"notes/{title}.md", Part(text=text))
    count = int(tool_context.state.get("note_count", 0)) + 1
    tool_context.state["note_count"] = count
    tool_context.state["user:last_note"] = title
    return {"saved": f"notes/{title}.md", "version": version, "note_count": count}


async def read_note(title: str, tool_context: ToolContext) -> dict[str, Any]:
    """Reads the latest version of a note.

    Args:
        title: The note's name.
    """
    part = await tool_context.load_artifact(f"notes/{title}.md")
    if part is None:
        return {"error": f"no note called {title!r}"}
    return {"title": title, "text": part.text or ""}


def respond(request: ModelRequest) -> str | FunctionCall:
    """The offline model: "note TITLE: TEXT" saves, "read TITLE" reads."""
    last = request.contents[-1]
    answered = [p.function_response for p in last.parts if p.function_response]
    if answered:
        result: dict[str, Any] = dict(answered[0].response)
        if "saved" in result:
            saved, version, count = result["saved"], result["version"], result["note_count"]
            return f"Saved {saved} (version {version}); notes saved in this session: {count}."
        if "text" in result:
            return f"{result['title']}: {result['text']}"
        return str(result.get("error", result))
    text = last.text.strip()
    saving = re.match(r"note\s+([\w-]+)\s*:\s*(.+)", text, re.IGNORECASE | re.DOTALL)
    if saving:
        return FunctionCall(name="save_note", args={"title": saving[1], "text": saving[2]})
    reading = re.match(r"read\s+([\w-]+)", text, re.IGNORECASE)
    if reading:
        return FunctionCall(name="read_note", args={"title": reading[1]})
    return 'Say "note TITLE: TEXT" to save a note, or "read TITLE" to read one.'


root_agent = Agent(
    name="note_taker",
    model=os.environ.get("RONDO_MODEL") or FunctionModel(respond, name="notes-demo"),
    instruction=(
        "You keep the user's notes with save_note and read_note. Notes saved in this "
        "session: {note_count?}. The user's last note: {user:last_note?}."
    ),
    tools=[save_note, read_note],
)
