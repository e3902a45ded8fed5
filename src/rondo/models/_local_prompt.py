"""Prompt, grammar and output format of the local model (`rondo.models.local`).

Pure functions, no llama.cpp import: what a turn may produce (a plan), the chat messages for
it, the grammar that constrains the output (LLGuidance's Lark dialect, which embeds JSON schemas
with `%json`), and how the output becomes parts.

Tool calls use the format SmolLM2-Instruct was fine-tuned on for function calling (its model
card): a system prompt listing the tools in `<tools>…</tools>` and an answer of the form
`<tool_call>[{"name": …, "arguments": {…}}]</tool_call>`, where an empty list means "no call".
Measured on SmolLM2-135M, this format under a grammar picks the right tool with the right
arguments far more often than a JSON `{"tool" | "answer"}` choice (10/10 vs 7/10 on ten weather
questions), and a free choice between a call and plain text almost never calls (0/10).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from rondo.errors import ConfigurationError
from rondo.models.base import FunctionDeclaration, ModelRequest
from rondo.types import Content, FunctionCall

__all__ = [
    "ANY_JSON",
    "CALL_CLOSE",
    "CALL_OPEN",
    "NO_CALL_TEXT",
    "TOOL_DEMO",
    "TurnPlan",
    "call_grammar",
    "grounded",
    "parse_calls",
    "plan_turn",
    "render_messages",
]

CALL_OPEN = "<tool_call>["
CALL_CLOSE = "]</tool_call>"
# Grammars in LLGuidance's Lark dialect (llama.cpp routes a grammar starting with this header to
# LLGuidance). Caution: llama.cpp drops a grammar LLGuidance cannot parse and decodes without
# one, so every grammar here is checked against the real runtime in
# tests/integration/test_local_model.py.
_LARK = "%llguidance {}\n"
# Text that does not start like a tool call (nor with blank space). GBNF, llama.cpp's own
# grammar engine: under LLGuidance an open-ended regex like this one never lets the model stop.
NO_CALL_TEXT = r"root ::= [^<\x00-\x20] [^\x00]*"
# Any JSON object: the fallback for a response schema the runtime cannot compile.
ANY_JSON = _LARK + 'start: %json {"type": "object"}'
# JSON as `json.dumps` writes it (the prompt's calls and the demo look the same), no free
# whitespace: fewer tokens, and nothing for a small model to wander off in.
_COMPACT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

# SmolLM2's function-calling system prompt, as in its training data (APIGen via smol-smoltalk).
_TOOLS_PROMPT = """\
You are an expert in composing functions. You are given a question and a set of possible \
functions. Based on the question, you will need to make one or more function/tool calls to \
achieve the purpose. If none of the functions can be used, point it out and refuse to answer. \
If the given question lacks the parameters required by the function, also point it out.

You have access to the following tools:
<tools>{tools}</tools>

The output MUST strictly adhere to the following format, and NO other text MUST be included.
The example format is as follows. Please make sure the parameter type is correct. If no \
function call is needed, please make the tool calls an empty list '[]'.
<tool_call>[
{{"name": "func_name1", "arguments": {{"argument1": "value1", "argument2": "value2"}}}},
... (more tool calls as required)
]</tool_call>"""

Mode = Literal["text", "calls", "maybe_calls"]


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What one model turn may produce.

    `text`: an answer (JSON matching `response_schema` when one is set); `calls`: at least one
    call to `tools`; `maybe_calls`: calls or an empty list, which then leads to a text turn.
    """

    mode: Mode
    tools: tuple[FunctionDeclaration, ...] = ()


def _ends_with_tool_results(contents: Sequence[Content]) -> bool:
    if not contents:
        return False
    return any(part.function_response is not None for part in contents[-1].parts)


def plan_turn(request: ModelRequest, *, answer_after_tool: bool) -> TurnPlan:
    """The plan for `request`, from its tools and `tool_choice`.

    `"auto"` (or unset) lets the model choose, except right after tool results when
    `answer_after_tool` is set: a small model that may call again tends to repeat the call
    instead of reading its result, so the turn after a result is an answer.
    """
    declarations = tuple(request.config.tools)
    choice = request.config.tool_choice or "auto"
    if not declarations or choice == "none":
        return TurnPlan("text")
    if choice == "required":
        return TurnPlan("calls", declarations)
    if choice != "auto":
        chosen = tuple(d for d in declarations if d.name == choice)
        if not chosen:
            names = ", ".join(d.name for d in declarations)
            raise ConfigurationError(
                f"tool_choice={choice!r} names no declared tool (declared: {names})"
            )
        return TurnPlan("calls", chosen)
    if answer_after_tool and _ends_with_tool_results(request.contents):
        return TurnPlan("text")
    return TurnPlan("maybe_calls", declarations)


# -- messages -----------------------------------------------------------------------------------


def _dump(value: Any) -> str:
    # Non-ASCII kept as is: a small model copies "18°C" far better than "18\u00b0C".
    return json.dumps(value, ensure_ascii=False)


def _calls_text(calls: Sequence[FunctionCall]) -> str:
    items = ", ".join(_dump({"name": c.name, "arguments": c.args}) for c in calls)
    return f"{CALL_OPEN}{items}{CALL_CLOSE}"


def _content_messages(content: Content) -> Iterator[dict[str, str]]:
    texts: list[str] = []
    calls: list[FunctionCall] = []
    results: list[str] = []
    for part in content.parts:
        if part.thought:
            continue  # thoughts are the model's scratch work, never replayed
        if part.text:
            texts.append(part.text)
        if part.function_call is not None:
            calls.append(part.function_call)
        if part.function_response is not None:
            response = part.function_response
            results.append(f"Result of {response.name}: {_dump(response.response)}")
    role = "assistant" if content.role == "model" else "user"
    if role == "assistant":
        if calls:
            texts.append(_calls_text(calls))
        if texts:
            yield {"role": role, "content": "\n".join(texts)}
        return
    # A tool result is shown as a user message: the model has no tool role in its training,
    # and measured answers quote a result given this way most faithfully.
    if results:
        yield {"role": "user", "content": "\n".join(results)}
    if texts:
        yield {"role": "user", "content": "\n".join(texts)}


def _tools_listing(tools: Sequence[FunctionDeclaration]) -> str:
    return _dump(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    )


# One worked exchange (question, call, result, answer that uses the result), shown before the
# conversation whenever tools are declared. Without it SmolLM2-135M often comments on a result
# ("The report you provided is...") instead of using it: answers containing the tool's value
# went from 6/10 to 10/10 on the weather benchmark, calls stayed 10/10. Its answer's shape is
# copied (an order-status demo made it write "Your order ... in Oslo"), so it is a plain
# "<subject> is <value>" sentence on a topic unlike common tools.
TOOL_DEMO: tuple[dict[str, str], ...] = (
    {"role": "user", "content": "How tall is Mount Fuji?"},
    {
        "role": "assistant",
        "content": f'{CALL_OPEN}{{"name": "elevation", "arguments": {{"place": "Mount Fuji"}}}}'
        f"{CALL_CLOSE}",
    },
    {"role": "user", "content": 'Result of elevation: {"height": "3,776 m"}'},
    {"role": "assistant", "content": "Mount Fuji is 3,776 m tall."},
)


def render_messages(request: ModelRequest, *, demo: bool = True) -> list[dict[str, str]]:
    """The chat messages of `request`: the system instruction, with the tools when there are
    any (then `TOOL_DEMO` too, if `demo`), and the contents, with calls and results in the
    model's tool-call format.

    Every turn of a request with tools gets the same system prompt and demo, whatever it may
    produce (the grammar decides that): the next turn then shares the whole prefix with the
    last one and llama.cpp reuses its evaluation, instead of re-reading ~450 tokens.
    """
    system = request.config.system_instruction or ""
    tools = request.config.tools
    if tools:
        listing = _TOOLS_PROMPT.format(tools=_tools_listing(tools))
        system = f"{system}\n\n{listing}" if system else listing
    messages: list[dict[str, str]] = []
    if system:
        messages.append({"role": "system", "content": system})
    if tools and demo:
        messages.extend(dict(m) for m in TOOL_DEMO)
    for content in request.contents:
        messages.extend(_content_messages(content))
    return messages


# -- grammar ------------------------------------------------------------------------------------

_DEFS_KEYS = ("$defs", "definitions")


def _namespaced(
    schema: dict[str, object], prefix: str
) -> tuple[dict[str, object], dict[str, object]]:
    """`schema` without its local definitions, refs renamed to `prefix`-ed top-level ones.

    Each tool's parameters are nested in one combined schema, where `#/$defs/X` would resolve
    against the combined root; moving every tool's definitions there under its own prefix
    keeps two tools' `X` apart.
    """
    schema = copy.deepcopy(schema)
    defs: dict[str, object] = {}
    for key in _DEFS_KEYS:
        found = schema.pop(key, None)
        if isinstance(found, dict):
            for name, value in cast(dict[str, object], found).items():
                defs[f"{prefix}{name}"] = value

    def rename(node: Any) -> None:
        if isinstance(node, dict):
            mapping = cast(dict[str, object], node)
            ref = mapping.get("$ref")
            if isinstance(ref, str):
                for key in _DEFS_KEYS:
                    head = f"#/{key}/"
                    if ref.startswith(head):
                        mapping["$ref"] = f"#/$defs/{prefix}{ref[len(head) :]}"
            for value in mapping.values():
                rename(value)
        elif isinstance(node, list):
            for item in cast(list[object], node):
                rename(item)

    rename(schema)
    for value in defs.values():
        rename(value)
    return schema, defs


def _closed(node: Any) -> Any:
    """`node` with `additionalProperties: false` on every object schema that lists properties
    and says nothing about others: JSON Schema allows extra keys by default, and LLGuidance
    lets a small model invent them ("options", "action", …)."""
    if isinstance(node, list):
        return [_closed(item) for item in cast(list[object], node)]
    if not isinstance(node, dict):
        return node
    mapping = {k: _closed(v) for k, v in cast(dict[str, object], node).items()}
    if "properties" in mapping and isinstance(mapping["properties"], dict):
        mapping["properties"] = {
            k: _closed(v) for k, v in cast(dict[str, object], node["properties"]).items()
        }
        mapping.setdefault("additionalProperties", False)
    return mapping


def _call_schema(tools: Sequence[FunctionDeclaration]) -> dict[str, object]:
    alternatives: list[dict[str, object]] = []
    all_defs: dict[str, object] = {}
    for index, tool in enumerate(tools):
        parameters, defs = _namespaced(tool.parameters, f"t{index}-")
        all_defs.update(defs)
        alternatives.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": parameters},
                "required": ["name", "arguments"],
            }
        )
    schema: dict[str, object] = {"oneOf": alternatives}
    if all_defs:
        schema["$defs"] = all_defs
    return schema


def _json_rule(schema: dict[str, object]) -> str:
    closed = cast(dict[str, object], _closed(schema))
    return f"%json {json.dumps({**closed, 'x-guidance': _COMPACT}, ensure_ascii=False)}"


def call_grammar(tools: Sequence[FunctionDeclaration], *, required: bool, max_calls: int) -> str:
    """A grammar for `<tool_call>[call, …]</tool_call>` with up to `max_calls` calls to
    `tools`, each a JSON object whose arguments match the tool's parameter schema.

    Without `required`, the list may be empty: the model's way of saying "no call".
    """
    more = ' ("," " " rondo_call)?' * max(max_calls - 1, 0)
    calls = f"rondo_call{more}"
    body = calls if required else f"({calls})?"
    return (
        f"{_LARK}start: {json.dumps(CALL_OPEN)} {body} {json.dumps(CALL_CLOSE)}\n"
        f"rondo_call: {_json_rule(_call_schema(tools))}\n"
    )


# -- grounding ----------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def _string_values(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in cast(dict[str, object], value).values():
            yield from _string_values(item)
    elif isinstance(value, list):
        for item in cast(list[object], value):
            yield from _string_values(item)


def grounded(calls: Sequence[FunctionCall], contents: Sequence[Content]) -> bool:
    """Whether every string argument of `calls` is made of words the user wrote.

    Measured on SmolLM2-135M: it calls a tool for any message, and for one the tool does not
    fit it invents the arguments ("Hello" -> get_weather(city="New York")). The arguments of a
    call the message asks for come from the message (bench/local_offtopic.py,
    bench/local_weather.py), so a call whose words the user never wrote is taken as "no call".
    """
    said: set[str] = set()
    for content in contents:
        if content.role == "user":
            for part in content.parts:
                if part.text and not part.thought:
                    said |= _words(part.text)
    for call in calls:
        for value in _string_values(call.args):
            words = _words(value)
            # Letters are needed too: digits alone ("2,2" from "What is 2+2?") name nothing.
            if not words or not words <= said or not any(c.isalpha() for c in value):
                return False
    return True


# -- output -------------------------------------------------------------------------------------


def parse_calls(text: str, tools: Sequence[FunctionDeclaration]) -> list[FunctionCall] | None:
    """The calls in a complete `<tool_call>[…]</tool_call>` answer (identical ones once), or
    None when the text is not one (cut off by the token limit)."""
    body = text.strip()
    if not (body.startswith(CALL_OPEN) and body.endswith(CALL_CLOSE)):
        return None
    try:
        items = json.loads(body[len(CALL_OPEN) - 1 : len(body) - len(CALL_CLOSE) + 1], strict=False)
    except json.JSONDecodeError:
        return None
    known = {t.name for t in tools}
    calls: list[FunctionCall] = []
    seen: set[str] = set()
    for item in cast(list[object], items):
        if not isinstance(item, dict):
            return None
        entry = cast(dict[str, object], item)
        name, args = entry.get("name"), entry.get("arguments")
        if name not in known or not isinstance(args, dict):
            return None
        # A small model under greedy decoding may repeat a call; running it twice helps no one.
        key = _dump([name, args])
        if key not in seen:
            seen.add(key)
            calls.append(FunctionCall(name=cast(str, name), args=cast(dict[str, object], args)))
    return calls
