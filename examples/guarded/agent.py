"""A guarded agent: deleting a file needs your confirmation (approve, reject, skip).

    rondo run examples/guarded "delete report.txt"

In a terminal it asks `delete_file(path="report.txt") — approve, reject or skip?`; in a
script it prints the waiting call and the `--approve` / `--reject` / `--skip` commands that
answer it, and exits with status 3. In `rondo web examples` the call waits with Approve,
Reject and Skip buttons. The files are a list in the session's state, so nothing on disk is
touched. Offline: the "model" is a function of the request (`FunctionModel`); set
`RONDO_MODEL` (e.g. `openai:gpt-4o-mini`) to use a real one.
"""

from __future__ import annotations

import os
import re
from typing import Any

from rondo import Agent, FunctionCall, FunctionTool, ToolContext
from rondo.models import ModelRequest
from rondo.testing import FunctionModel

_FILES = ["report.txt", "notes.md", "budget.xlsx"]


def list_files(tool_context: ToolContext) -> dict[str, Any]:
    """Lists the files in the workspace."""
    return {"files": tool_context.state.get("files", _FILES)}


def delete_file(path: str, tool_context: ToolContext) -> dict[str, Any]:
    """Deletes a file from the workspace. Needs the user's confirmation.

    Args:
        path: The file's name, e.g. "report.txt".
    """
    files = list(tool_context.state.get("files", _FILES))
    if path not in files:
        return {"error": f"no such file: {path}"}
    files.remove(path)
    tool_context.state["files"] = files
    return {"deleted": path, "files": files}


def respond(request: ModelRequest) -> str | FunctionCall:
    """The offline model: a delete request calls delete_file, anything else list_files;
    a tool's answer is put into words."""
    last = request.contents[-1]
    answered = [p.function_response for p in last.parts if p.function_response]
    if answered:
        result: dict[str, Any] = dict(answered[0].response)
        if "deleted" in result:
            return f"Deleted {result['deleted']}. Left: {', '.join(result['files'])}."
        if "files" in result:
            return f"The workspace has: {', '.join(result['files'])}."
        if "error" in result:
            return f"I did not delete it: {result['error']}"
        return f"Skipped; recorded instead: {result.get('result', result)}"
    wanted = re.search(r"delete\s+(\S+)", last.text, re.IGNORECASE)
    if wanted:
        return FunctionCall(name="delete_file", args={"path": wanted.group(1).strip("\"'.,")})
    return FunctionCall(name="list_files", args={})


root_agent = Agent(
    name="file_manager",
    model=os.environ.get("RONDO_MODEL") or FunctionModel(respond, name="guarded-demo"),
    instruction="You manage the user's workspace files. Always ask before deleting.",
    tools=[list_files, FunctionTool(delete_file, require_confirmation=True)],
)
