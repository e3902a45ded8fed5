"""rondo parts ↔ A2A parts, both ways (server and client share these).

Tool calls and results travel as A2A data parts marked the way google-adk marks them
(`metadata.adk_type`, `adk_is_long_running`, `adk_thought`), so an ADK client reads rondo's
tasks and rondo reads ADK's. A data part with no such mark becomes JSON text: a model can
read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, cast

from a2a.types import Part as A2APart
from google.protobuf import json_format, struct_pb2

from rondo.types import (
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    FunctionResponse,
    Part,
)

__all__ = [
    "FUNCTION_CALL",
    "FUNCTION_RESPONSE",
    "IS_LONG_RUNNING_KEY",
    "TYPE_KEY",
    "call_part",
    "from_a2a_parts",
    "long_running_ids",
    "part_metadata",
    "struct",
    "to_a2a_part",
    "to_a2a_parts",
]

# google-adk's names for these marks: interoperability with its A2A client and server.
TYPE_KEY = "adk_type"
IS_LONG_RUNNING_KEY = "adk_is_long_running"
THOUGHT_KEY = "adk_thought"
FUNCTION_CALL = "function_call"
FUNCTION_RESPONSE = "function_response"
CODE_EXECUTION_RESULT = "code_execution_result"
EXECUTABLE_CODE = "executable_code"


def struct(values: dict[str, Any]) -> struct_pb2.Struct:
    """A protobuf Struct holding `values` (JSON-compatible)."""
    out = struct_pb2.Struct()
    out.update(values)
    return out


def _data_part(data: dict[str, object], kind: str, *, long_running: bool = False) -> A2APart:
    meta: dict[str, object] = {TYPE_KEY: kind}
    if long_running:
        meta[IS_LONG_RUNNING_KEY] = True
    return A2APart(data=json_format.ParseDict(data, struct_pb2.Value()), metadata=struct(meta))


def call_part(call: FunctionCall, *, long_running: bool = False) -> A2APart:
    """A function call as an A2A data part (marked long-running when the caller waits)."""
    data: dict[str, object] = {"name": call.name, "args": dict(call.args)}
    if call.id:
        data["id"] = call.id
    return _data_part(data, FUNCTION_CALL, long_running=long_running)


def to_a2a_part(part: Part, *, long_running: bool = False) -> A2APart | None:
    """One rondo part as an A2A part; None for a part that carries nothing."""
    if part.text:
        if part.thought:
            return A2APart(text=part.text, metadata=struct({THOUGHT_KEY: True}))
        return A2APart(text=part.text)
    call = part.function_call
    if call is not None:
        return call_part(call, long_running=long_running)
    response = part.function_response
    if response is not None:
        data: dict[str, object] = {"name": response.name, "response": dict(response.response)}
        if response.id:
            data["id"] = response.id
        return _data_part(data, FUNCTION_RESPONSE)
    if part.inline_data is not None:
        blob = part.inline_data
        return A2APart(raw=blob.data, media_type=blob.mime_type, filename=blob.display_name or "")
    if part.file_data is not None:
        file = part.file_data
        return A2APart(
            url=file.file_uri, media_type=file.mime_type or "", filename=file.display_name or ""
        )
    if part.executable_code is not None:
        return _data_part(part.executable_code.model_dump(), EXECUTABLE_CODE)
    if part.code_execution_result is not None:
        return _data_part(part.code_execution_result.model_dump(), CODE_EXECUTION_RESULT)
    return None


def to_a2a_parts(
    content: Content | None, *, long_running: Iterable[str] = (), skip: Iterable[str] = ()
) -> list[A2APart]:
    """A content's parts as A2A parts. Calls whose ids are in `long_running` are marked so;
    calls whose ids are in `skip` are left out."""
    if content is None:
        return []
    marked = set(long_running)
    skipped = set(skip)
    out: list[A2APart] = []
    for part in content.parts:
        call = part.function_call
        if call is not None and call.id in skipped:
            continue
        converted = to_a2a_part(part, long_running=call is not None and call.id in marked)
        if converted is not None:
            out.append(converted)
    return out


def part_metadata(part: A2APart) -> dict[str, object]:
    if not part.HasField("metadata"):
        return {}
    return json_format.MessageToDict(part.metadata)


def _narrow(value: Any) -> Any:
    """JSON numbers come back from protobuf as floats: whole ones become ints again."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        items = cast(dict[str, object], value).items()
        return {k: _narrow(v) for k, v in items}
    if isinstance(value, list):
        return [_narrow(v) for v in cast(list[object], value)]
    return value


def _as_dict(value: Any) -> dict[str, object]:
    return cast(dict[str, object], value) if isinstance(value, dict) else {"result": value}


def _from_data(data: Any, kind: Any) -> Part:
    fields = _as_dict(data)
    name = str(fields.get("name") or "")
    call_id = fields.get("id")
    call_id = str(call_id) if call_id else None
    if kind == FUNCTION_CALL and name:
        return Part(
            function_call=FunctionCall(name=name, args=_as_dict(fields.get("args", {})), id=call_id)
        )
    if kind == FUNCTION_RESPONSE and name:
        response = _as_dict(fields.get("response", {}))
        return Part(function_response=FunctionResponse(name=name, response=response, id=call_id))
    if kind == EXECUTABLE_CODE and "code" in fields:
        return Part(executable_code=ExecutableCode.model_validate(fields))
    if kind == CODE_EXECUTION_RESULT:
        return Part(code_execution_result=CodeExecutionResult.model_validate(fields))
    return Part(text=json.dumps(data, ensure_ascii=False))


def from_a2a_part(part: A2APart) -> Part | None:
    """One A2A part as a rondo part; None for an empty one."""
    which = part.WhichOneof("content")
    if which == "text":
        thought = bool(part_metadata(part).get(THOUGHT_KEY))
        return Part(text=part.text, thought=thought) if part.text else None
    if which == "data":
        data = _narrow(json_format.MessageToDict(part.data))
        return _from_data(data, part_metadata(part).get(TYPE_KEY))
    if which == "raw":
        return Part(
            inline_data=Blob(
                mime_type=part.media_type or "application/octet-stream",
                data=part.raw,
                display_name=part.filename or None,
            )
        )
    if which == "url":
        return Part(
            file_data=FileData(
                file_uri=part.url,
                mime_type=part.media_type or None,
                display_name=part.filename or None,
            )
        )
    return None


def from_a2a_parts(parts: Sequence[A2APart]) -> list[Part]:
    return [p for p in (from_a2a_part(part) for part in parts) if p is not None]


def long_running_ids(parts: Sequence[A2APart]) -> frozenset[str]:
    """The ids of the calls among `parts` marked long-running (the remote waits on them)."""
    ids: set[str] = set()
    for part in parts:
        if part.WhichOneof("content") != "data":
            continue
        meta = part_metadata(part)
        if meta.get(TYPE_KEY) == FUNCTION_CALL and meta.get(IS_LONG_RUNNING_KEY) is True:
            data = _as_dict(json_format.MessageToDict(part.data))
            if data.get("id"):
                ids.add(str(data["id"]))
    return frozenset(ids)
