"""google-adk's eval-set files, read as ADK reads them.

Three shapes are accepted, as ADK accepts them:

- the EvalSet JSON ADK writes (`*.evalset.json`, and the `*.test.json` files of its own test
  suite): `eval_set_id`, `name`, `eval_cases[]` with `eval_id`, `conversation[]` of invocations
  (`user_content`, `final_response`, `intermediate_data` as `tool_uses` or as the newer
  `invocation_events`) and `session_input` (`app_name`, `user_id`, `state`);
- the older eval-set list `[{name, data: [{query, expected_tool_use, reference}],
  initial_session}]` that `adk eval` still converts;
- the oldest `*.test.json` list `[{query, expected_tool_use: [{tool_name, tool_input}],
  reference}]` that ADK's `AgentEvaluator` reads as one case (initial state from a separate
  session file).

Below the eval set itself, keys may be snake_case or camelCase (ADK's alias generator accepts
both). Keys rondo does not use (`video_metadata`, timestamps...) are ignored rather
than refused, so files written by newer ADK versions still load.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError
from pydantic.alias_generators import to_camel

from rondo.errors import RondoError
from rondo.types import Blob, Content, FileData, FunctionCall, FunctionResponse, Part

__all__ = [
    "EvalCase",
    "EvalSet",
    "EvalSetError",
    "ExpectedCall",
    "Invocation",
    "Rubric",
    "RubricContent",
    "Scenario",
    "SessionInput",
    "load_eval_set",
    "parse_eval_set",
]


class EvalSetError(RondoError, ValueError):
    """An eval set or eval config that cannot be used: unreadable, malformed, unsupported."""


class _FileModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
        loc_by_alias=False,
    )


class FileFunctionCall(_FileModel):
    name: str
    args: dict[str, object] | None = None
    id: str | None = None


class FileFunctionResponse(_FileModel):
    name: str
    response: dict[str, object] | None = None
    id: str | None = None


class FileBlob(_FileModel):
    mime_type: str = "application/octet-stream"
    data: str = ""  # base64, as google-genai writes bytes
    display_name: str | None = None


class FileFileData(_FileModel):
    file_uri: str
    mime_type: str | None = None
    display_name: str | None = None


class FilePart(_FileModel):
    text: str | None = None
    thought: bool | None = None
    function_call: FileFunctionCall | None = None
    function_response: FileFunctionResponse | None = None
    inline_data: FileBlob | None = None
    file_data: FileFileData | None = None


class FileContent(_FileModel):
    role: str | None = None
    parts: list[FilePart] | None = None

    def text(self) -> str:
        """The parts' text joined by newlines — ADK's text of a response (thoughts included)."""
        return "\n".join(p.text for p in self.parts or () if p.text)

    def to_content(self, default_role: str) -> Content:
        return Content(
            role=self.role or default_role, parts=[_to_part(p) for p in self.parts or ()]
        )


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error:
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _to_part(part: FilePart) -> Part:
    call = part.function_call
    response = part.function_response
    blob = part.inline_data
    file = part.file_data
    return Part(
        text=part.text,
        thought=bool(part.thought),
        function_call=FunctionCall(name=call.name, args=call.args or {}, id=call.id)
        if call
        else None,
        function_response=FunctionResponse(
            name=response.name, response=response.response or {}, id=response.id
        )
        if response
        else None,
        inline_data=Blob(
            mime_type=blob.mime_type, data=_decode(blob.data), display_name=blob.display_name
        )
        if blob
        else None,
        file_data=FileData(
            file_uri=file.file_uri, mime_type=file.mime_type, display_name=file.display_name
        )
        if file
        else None,
    )


class IntermediateData(_FileModel):
    tool_uses: list[FileFunctionCall] = Field(default_factory=list[FileFunctionCall])
    tool_responses: list[FileFunctionResponse] = Field(default_factory=list[FileFunctionResponse])
    # ADK's (author, parts) pairs of text said on the way to the final response.
    intermediate_responses: list[tuple[str, list[FilePart]]] = Field(
        default_factory=list[tuple[str, list[FilePart]]]
    )


class InvocationEvent(_FileModel):
    author: str = ""
    content: FileContent | None = None


class InvocationEvents(_FileModel):
    invocation_events: list[InvocationEvent] = Field(default_factory=list[InvocationEvent])


def _intermediate_kind(value: Any) -> str:
    if isinstance(value, Mapping) and ("invocation_events" in value or "invocationEvents" in value):
        return "events"
    if isinstance(value, InvocationEvents):
        return "events"
    return "data"


Intermediate = Annotated[
    Annotated[IntermediateData, Tag("data")] | Annotated[InvocationEvents, Tag("events")],
    Discriminator(_intermediate_kind),
]


class RubricContent(_FileModel):
    """What a rubric asks of the agent, as one testable property."""

    text_property: str | None = None


class Rubric(_FileModel):
    """A rubric of a rubric-based metric (ADK's shape): an id, a property, an optional type."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None

    @property
    def text(self) -> str:
        return self.rubric_content.text_property or ""


class ExpectedCall(_FileModel):
    """One expected tool use: a name and its arguments."""

    name: str
    args: dict[str, object] = Field(default_factory=dict[str, object])


class Invocation(_FileModel):
    """One user message and what the agent is expected to do with it."""

    invocation_id: str = ""
    user_content: FileContent
    final_response: FileContent | None = None
    intermediate_data: Intermediate | None = None
    rubrics: list[Rubric] | None = None

    def expected_calls(self) -> list[ExpectedCall]:
        """The expected tool trajectory, in order, from either intermediate-data form."""
        data = self.intermediate_data
        if isinstance(data, IntermediateData):
            calls = data.tool_uses
        elif isinstance(data, InvocationEvents):
            calls = [
                p.function_call
                for event in data.invocation_events
                for p in (event.content.parts or () if event.content else ())
                if p.function_call is not None
            ]
        else:
            calls = []
        return [ExpectedCall(name=c.name, args=c.args or {}) for c in calls]

    def expected_text(self) -> str:
        return self.final_response.text() if self.final_response else ""

    def intermediate_texts(self) -> list[str]:
        """The text said before the final response, step by step (ADK's intermediate text)."""
        data = self.intermediate_data
        if isinstance(data, InvocationEvents):
            found = [e.content.text() for e in data.invocation_events if e.content]
        elif isinstance(data, IntermediateData):
            found = [FileContent(parts=parts).text() for _, parts in data.intermediate_responses]
        else:
            found = []
        return [text for text in found if text]


class SessionInput(_FileModel):
    """How a case's session starts: its app, user, optional fixed id and initial state."""

    app_name: str = ""
    user_id: str = ""
    session_id: str | None = None
    state: dict[str, object] = Field(default_factory=dict[str, object])


@dataclass(frozen=True, slots=True)
class Scenario:
    """ADK's `conversation_scenario`: the first user message and the plan for the rest."""

    starting_prompt: str
    conversation_plan: str


def parse_scenario(data: Mapping[str, object], where: str) -> Scenario:
    """A `Scenario` from a case's `conversation_scenario`; `EvalSetError` if unusable."""
    found: dict[str, str] = {}
    for key, camel in (
        ("starting_prompt", "startingPrompt"),
        ("conversation_plan", "conversationPlan"),
    ):
        value = data.get(key, data.get(camel))
        if not isinstance(value, str) or not value.strip():
            raise EvalSetError(f"{where}: conversation_scenario.{key} must be a non-empty text")
        found[key] = value
    return Scenario(found["starting_prompt"], found["conversation_plan"])


class EvalCase(_FileModel):
    """A conversation run on one fresh session, invocation after invocation — or, with a
    `conversation_scenario`, played by a simulated user."""

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: dict[str, object] | None = None
    session_input: SessionInput | None = None
    rubrics: list[Rubric] | None = None

    def scenario(self) -> Scenario | None:
        """The case's scenario, when a simulated user plays it."""
        if self.conversation_scenario is None:
            return None
        return parse_scenario(self.conversation_scenario, f"case {self.eval_id!r}")


class EvalSet(_FileModel):
    """A named list of eval cases."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]


def _where(error: Mapping[str, Any]) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.get("loc", ()))
    return path.lstrip(".") or "(top level)"


def _invalid(source: str, exc: ValidationError) -> EvalSetError:
    first = cast(Mapping[str, object], exc.errors()[0])
    more = len(exc.errors()) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return EvalSetError(f"{source}: {_where(first)}: {first['msg']}{extra}")


def _old_invocation(row: Any, where: str) -> dict[str, object]:
    if not isinstance(row, Mapping) or "query" not in row:
        raise EvalSetError(f"{where}: each entry needs a 'query'")
    entry = cast(Mapping[str, Any], row)
    tool_uses: list[dict[str, Any]] = []
    uses: list[Any] = list(entry.get("expected_tool_use") or ())
    for j, item in enumerate(uses):
        if not isinstance(item, Mapping) or "tool_name" not in item:
            raise EvalSetError(
                f"{where}.expected_tool_use[{j}]: needs 'tool_name' and 'tool_input'"
            )
        use = cast(Mapping[str, object], item)
        # `mock_tool_output`, if present, is not part of the trajectory (ADK drops it too).
        tool_uses.append({"name": use["tool_name"], "args": use.get("tool_input") or {}})
    return {
        "user_content": {"role": "user", "parts": [{"text": entry["query"]}]},
        "final_response": {"role": "model", "parts": [{"text": entry.get("reference", "")}]},
        "intermediate_data": {"tool_uses": tool_uses},
    }


def _from_old_cases(items: Sequence[object], source: str) -> dict[str, object]:
    cases: list[dict[str, object]] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or "data" not in item or "name" not in item:
            raise EvalSetError(f"{source}: [{i}] needs 'name' and 'data'")
        item = cast(Mapping[str, object], item)
        rows = item["data"]
        if not isinstance(rows, list):
            raise EvalSetError(f"{source}: [{i}].data must be a list")
        conversation = [
            _old_invocation(row, f"{source}: [{i}].data[{j}]")
            for j, row in enumerate(cast(list[object], rows))
        ]
        case: dict[str, object] = {"eval_id": str(item["name"]), "conversation": conversation}
        session = item.get("initial_session")
        if session:
            case["session_input"] = session
        cases.append(case)
    return {"eval_set_id": Path(source).name, "eval_cases": cases}


def _from_queries(
    rows: Sequence[object], source: str, initial_session: Mapping[str, object] | None
) -> dict[str, object]:
    conversation = [_old_invocation(row, f"{source}: [{i}]") for i, row in enumerate(rows)]
    case: dict[str, object] = {"eval_id": Path(source).name, "conversation": conversation}
    if initial_session:
        case["session_input"] = dict(initial_session)
    return {"eval_set_id": Path(source).name, "eval_cases": [case]}


def _as_eval_set_dict(
    data: Any, source: str, initial_session: Mapping[str, object] | None
) -> dict[str, object]:
    if isinstance(data, Mapping):
        if "eval_cases" not in data and "evalCases" not in data:
            raise EvalSetError(f"{source}: not an eval set (no 'eval_cases')")
        return dict(cast(Mapping[str, object], data))
    if isinstance(data, list) and data:
        items = cast(list[object], data)
        if all(isinstance(i, Mapping) and "data" in i for i in items):
            return _from_old_cases(items, source)
        if all(isinstance(i, Mapping) and "query" in i for i in items):
            return _from_queries(items, source, initial_session)
    raise EvalSetError(
        f"{source}: not an eval set: expected an EvalSet object (eval_set_id, eval_cases) or "
        "a list of {query, expected_tool_use, reference} entries"
    )


def _check(eval_set: EvalSet, source: str) -> EvalSet:
    if not eval_set.eval_cases:
        raise EvalSetError(f"{source}: the eval set has no cases")
    seen: set[str] = set()
    for case in eval_set.eval_cases:
        if case.conversation is None:
            if case.conversation_scenario is None:
                raise EvalSetError(
                    f"{source}: case {case.eval_id!r} needs a conversation or a "
                    "conversation_scenario"
                )
            parse_scenario(case.conversation_scenario, f"{source}: case {case.eval_id!r}")
        elif not case.conversation:
            raise EvalSetError(f"{source}: case {case.eval_id!r} has an empty conversation")
        if case.eval_id in seen:
            raise EvalSetError(f"{source}: two cases are named {case.eval_id!r}")
        seen.add(case.eval_id)
    return eval_set


def parse_eval_set(
    data: Any, *, source: str = "eval set", initial_session: Mapping[str, object] | None = None
) -> EvalSet:
    """An `EvalSet` from decoded JSON in any of the accepted shapes (see the module doc).

    `initial_session` (`{"app_name", "user_id", "state"}`) starts the one case of a list of
    queries, like the session file ADK's `AgentEvaluator` takes.
    """
    shaped = _as_eval_set_dict(data, source, initial_session)
    try:
        eval_set = EvalSet.model_validate(shaped)
    except ValidationError as exc:
        raise _invalid(source, exc) from None
    return _check(eval_set, source)


def read_json(path: str | Path, what: str) -> Any:
    """The decoded JSON of `path`; `EvalSetError` saying what is wrong if there is none."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalSetError(f"no such {what}: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalSetError(f"cannot read {path}: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvalSetError(f"{path} is not valid JSON: {exc}") from None


def load_eval_set(
    path: str | Path, *, initial_session: Mapping[str, object] | None = None
) -> EvalSet:
    """Read an eval-set file (`*.evalset.json` or `*.test.json`); `EvalSetError` if unusable."""
    data = read_json(path, "eval set file")
    return parse_eval_set(data, source=str(path), initial_session=initial_session)
