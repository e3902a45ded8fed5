"""rondo requests ↔ google-genai types (used by `rondo.models.gemini`).

Pure translation, no I/O. rondo's data model follows Gemini's closely, so most of this is a
field-by-field copy; the real work is cleaning JSON schemas down to what the Gemini API
accepts, and reporting finish reasons the provider-neutral way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from google.genai import types

from rondo.models._shared import CONTENT_FILTER, MALFORMED_FUNCTION_CALL
from rondo.models.base import FunctionDeclaration, GenerateConfig, ModelResponse
from rondo.types import (
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    Part,
    PartialArg,
    Usage,
)

__all__ = [
    "ResponseReader",
    "build_config",
    "build_contents",
    "cached_request_config",
    "clean_schema",
    "content_digests",
    "estimate_tokens",
    "prefix_digest",
]

_BLOCKED = frozenset(
    {
        "SAFETY",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "MODEL_ARMOR",
    }
)
# Finish reasons that are a normal end of the turn, not an error inside the response.
_NORMAL = {"STOP": "stop", "MAX_TOKENS": "max_tokens", "FINISH_REASON_UNSPECIFIED": None}

# Schema keywords the Gemini API takes in function declarations and response schemas. Anything
# else (additionalProperties, $schema, title, default, examples...) is dropped: the Developer
# API rejects unknown keywords instead of ignoring them.
_KEPT = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "anyOf",
        "propertyOrdering",
        "minProperties",
        "maxProperties",
    }
)
_FORMATS = {
    "STRING": frozenset({"enum", "date-time"}),
    "INTEGER": frozenset({"int32", "int64"}),
    "NUMBER": frozenset({"float", "double"}),
}


# -- schemas ------------------------------------------------------------------------------------


def clean_schema(schema: Mapping[str, object]) -> dict[str, object]:
    """A JSON schema rewritten into the subset the Gemini API accepts.

    `$ref`s are inlined (a recursive one becomes a plain object), `null` alternatives become
    `nullable`, `const` and non-string enums are expressed the way Gemini can take them, and
    unsupported keywords are dropped.
    """
    defs: dict[str, object] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, dict):
            defs.update(cast(dict[str, object], found))
    return _clean(schema, defs, frozenset())


def _clean(
    node: Mapping[str, object], defs: dict[str, object], seen: frozenset[str]
) -> dict[str, object]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if name in seen or not isinstance(target, dict):
            return {"type": "OBJECT"}
        merged = {
            **cast(dict[str, object], target),
            **{k: v for k, v in node.items() if k != "$ref"},
        }
        return _clean(merged, defs, seen | {name})
    node = _merge_all_of(node)
    out: dict[str, object] = {}
    nullable = bool(node.get("nullable"))

    type_ = node.get("type")
    if isinstance(type_, list):
        names = [t for t in cast(list[object], type_) if t != "null"]
        nullable = nullable or len(names) < len(cast(list[object], type_))
        type_ = names[0] if len(names) == 1 else None
        if len(names) > 1:
            out["anyOf"] = [{"type": str(t).upper()} for t in names]
    if isinstance(type_, str) and type_ != "null":
        out["type"] = type_.upper()

    variants = node.get("anyOf", node.get("oneOf"))
    if isinstance(variants, list):
        kept = [
            v
            for v in (
                cast(dict[str, object], v)
                for v in cast(list[object], variants)
                if isinstance(v, dict)
            )
            if v.get("type") != "null"
        ]
        nullable = nullable or len(kept) < len(cast(list[object], variants))
        cleaned = [_clean(v, defs, seen) for v in kept]
        if len(cleaned) == 1:
            out.update({k: v for k, v in cleaned[0].items() if k not in out})
        elif cleaned:
            out["anyOf"] = cleaned

    _copy_values(node, out)
    properties = node.get("properties")
    if isinstance(properties, dict):
        props = cast(dict[str, object], properties)
        out["properties"] = {
            name: _clean(cast(dict[str, object], sub), defs, seen) if isinstance(sub, dict) else {}
            for name, sub in props.items()
        }
        required = node.get("required")
        if isinstance(required, list):
            out["required"] = [r for r in cast(list[object], required) if r in props]
    items = node.get("items")
    if isinstance(items, dict):
        out["items"] = _clean(cast(dict[str, object], items), defs, seen)
    if nullable:
        out["nullable"] = True
    return out


def _merge_all_of(node: Mapping[str, object]) -> Mapping[str, object]:
    parts = node.get("allOf")
    if not isinstance(parts, list):
        return node
    merged: dict[str, object] = {k: v for k, v in node.items() if k != "allOf"}
    for part in cast(list[object], parts):
        if isinstance(part, dict):
            for key, value in cast(dict[str, object], part).items():
                merged.setdefault(key, value)
    return merged


def _copy_values(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    for key in _KEPT - {"type", "anyOf", "properties", "required", "items", "nullable"}:
        if key in node:
            out[key] = node[key]
    format_ = out.get("format")
    if format_ is not None and format_ not in _FORMATS.get(out.get("type", ""), frozenset()):
        del out["format"]
    values: Any = node.get("enum")
    if "const" in node:
        values = [node["const"]]
    if isinstance(values, list):
        values = cast(list[object], values)
        if all(isinstance(v, str) for v in values):
            out["enum"] = values
            out.setdefault("type", "STRING")
        else:
            # Gemini enums are strings only: state the allowed values instead.
            out.pop("enum", None)
            allowed = ", ".join(str(v) for v in values)
            description = out.get("description")
            note = f"Allowed values: {allowed}."
            out["description"] = f"{description} {note}" if description else note


# -- request ------------------------------------------------------------------------------------


def build_contents(contents: Iterable[Content]) -> list[types.Content]:
    converted: list[types.Content] = []
    for content in contents:
        parts = [p for p in (_to_part(part) for part in content.parts) if p is not None]
        if parts:
            role = "model" if content.role == "model" else "user"
            converted.append(types.Content(role=role, parts=parts))
    return converted


def _to_part(part: Part) -> types.Part | None:
    signature = part.thought_signature
    thought = True if part.thought else None
    call = part.function_call
    if call is not None:
        return types.Part(
            function_call=types.FunctionCall(name=call.name, args=call.args, id=call.id),
            thought_signature=signature,
        )
    response = part.function_response
    if response is not None:
        return types.Part(
            function_response=types.FunctionResponse(
                name=response.name, response=response.response, id=response.id
            )
        )
    if part.text is not None:
        return types.Part(text=part.text, thought=thought, thought_signature=signature)
    if part.inline_data is not None:
        blob = part.inline_data
        return types.Part(inline_data=types.Blob(mime_type=blob.mime_type, data=blob.data))
    if part.file_data is not None:
        file = part.file_data
        return types.Part(
            file_data=types.FileData(file_uri=file.file_uri, mime_type=file.mime_type)
        )
    if part.executable_code is not None:
        code = part.executable_code
        return types.Part(
            executable_code=types.ExecutableCode(code=code.code, language=_language(code.language))
        )
    if part.code_execution_result is not None:
        result = part.code_execution_result
        outcome = (
            types.Outcome.OUTCOME_OK if result.outcome == "ok" else types.Outcome.OUTCOME_FAILED
        )
        return types.Part(
            code_execution_result=types.CodeExecutionResult(outcome=outcome, output=result.output)
        )
    if signature is not None:
        return types.Part(thought=thought, thought_signature=signature)
    return None


def _language(name: str) -> types.Language:
    try:
        return types.Language(name.upper())
    except ValueError:
        return types.Language.LANGUAGE_UNSPECIFIED


def _declaration(declaration: FunctionDeclaration) -> types.FunctionDeclaration:
    params = declaration.parameters
    schema: types.Schema | None = None
    # An empty parameter object is rejected; a tool without parameters simply has none.
    if params.get("properties") or params.get("type") not in (None, "object"):
        schema = types.Schema.model_validate(clean_schema(params))
    return types.FunctionDeclaration(
        name=declaration.name, description=declaration.description or None, parameters=schema
    )


def _tool_config(choice: str | None) -> types.ToolConfig | None:
    if choice is None:
        return None
    modes = {
        "auto": types.FunctionCallingConfigMode.AUTO,
        "none": types.FunctionCallingConfigMode.NONE,
        "required": types.FunctionCallingConfigMode.ANY,
    }
    mode = modes.get(choice)
    if mode is not None:
        calling = types.FunctionCallingConfig(mode=mode)
    else:
        calling = types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=[choice]
        )
    return types.ToolConfig(function_calling_config=calling)


def build_config(config: GenerateConfig) -> types.GenerateContentConfig:
    fields: dict[str, object] = {
        "system_instruction": config.system_instruction or None,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "top_k": config.top_k,
        "max_output_tokens": config.max_output_tokens,
        "stop_sequences": config.stop_sequences,
        "seed": config.seed,
        "labels": config.labels,
        "response_mime_type": config.response_mime_type,
        # rondo runs the tools itself.
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
    }
    if config.tools:
        fields["tools"] = [
            types.Tool(function_declarations=[_declaration(d) for d in config.tools])
        ]
        fields["tool_config"] = _tool_config(config.tool_choice)
    if config.response_schema is not None:
        fields["response_schema"] = types.Schema.model_validate(
            clean_schema(config.response_schema)
        )
        fields["response_mime_type"] = config.response_mime_type or "application/json"
    if config.thinking_budget is not None or config.include_thoughts is not None:
        fields["thinking_config"] = types.ThinkingConfig(
            thinking_budget=config.thinking_budget, include_thoughts=config.include_thoughts
        )
    if config.extra:
        fields.update(config.extra)
    return types.GenerateContentConfig.model_validate(
        {k: v for k, v in fields.items() if v is not None}
    )


# -- explicit context caching -------------------------------------------------------------------

# What a cached content holds besides the contents: the request may not repeat these once it
# names the cache (the API rejects a request that does).
CACHED_FIELDS = ("system_instruction", "tools", "tool_config")


def _json(value: Any) -> str:
    if hasattr(value, "model_dump_json"):
        return cast(str, value.model_dump_json(exclude_none=True))
    return repr(value)


def content_digests(contents: Sequence[types.Content]) -> list[str]:
    """One digest per content, so two requests' shared prefix is found without comparing text."""
    return [hashlib.sha256(_json(c).encode()).hexdigest() for c in contents]


def prefix_digest(model: str, config: types.GenerateContentConfig, key: str) -> str:
    """A digest of what a cache holds besides the contents (system instruction, tools, tool
    config), the model, and the session's cache key: a cache is reused only under all four."""
    parts = [model, key, *(_json(getattr(config, name)) for name in CACHED_FIELDS)]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def estimate_tokens(config: types.GenerateContentConfig, contents: Sequence[types.Content]) -> int:
    """A rough token count (four characters a token) of a cacheable prefix — close enough to
    decide whether it clears Gemini's minimum cacheable size, without a count_tokens call."""
    size = sum(len(_json(getattr(config, name))) for name in CACHED_FIELDS)
    size += sum(len(_json(c)) for c in contents)
    return size // 4


def cached_request_config(
    config: types.GenerateContentConfig, name: str
) -> types.GenerateContentConfig:
    """`config` naming the cached content `name`, without the fields the cache already holds."""
    update: dict[str, Any] = dict.fromkeys(CACHED_FIELDS)
    update["cached_content"] = name
    return config.model_copy(update=update)


# -- response -----------------------------------------------------------------------------------


def _from_part(part: types.Part) -> Part | None:
    signature = part.thought_signature
    thought = bool(part.thought)
    call = part.function_call
    if call is not None:
        partial_args = None
        if call.partial_args:
            partial_args = [_partial_arg(arg) for arg in call.partial_args if arg.json_path]
        return Part(
            function_call=FunctionCall(
                name=call.name or "",
                args=dict(call.args or {}),
                id=call.id,
                partial_args=partial_args,
                will_continue=call.will_continue,
            ),
            thought_signature=signature,
        )
    if part.text is not None:
        return Part(text=part.text, thought=thought, thought_signature=signature)
    if part.inline_data is not None and part.inline_data.data is not None:
        blob = part.inline_data
        return Part(inline_data=Blob(mime_type=blob.mime_type or "", data=blob.data or b""))
    if part.file_data is not None and part.file_data.file_uri:
        file = part.file_data
        return Part(file_data=FileData(file_uri=file.file_uri or "", mime_type=file.mime_type))
    if part.executable_code is not None:
        code = part.executable_code
        language = code.language.value.lower() if code.language else "python"
        return Part(executable_code=ExecutableCode(code=code.code or "", language=language))
    if part.code_execution_result is not None:
        result = part.code_execution_result
        outcome = "ok" if result.outcome == types.Outcome.OUTCOME_OK else "failed"
        return Part(
            code_execution_result=CodeExecutionResult(outcome=outcome, output=result.output or "")
        )
    if signature is not None:
        return Part(thought=thought, thought_signature=signature)
    return None


def _partial_arg(arg: types.PartialArg) -> PartialArg:
    value: Any = None
    if arg.string_value is not None:
        value = arg.string_value
    elif arg.number_value is not None:
        value = arg.number_value
    elif arg.bool_value is not None:
        value = arg.bool_value
    return PartialArg(json_path=arg.json_path or "$", value=value)


def convert_usage(usage: types.GenerateContentResponseUsageMetadata | None) -> Usage | None:
    if usage is None:
        return None
    prompt = (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0)
    thoughts = usage.thoughts_token_count or 0
    # rondo's output count includes thinking, as OpenAI's and Anthropic's do.
    output = (usage.candidates_token_count or 0) + thoughts
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        total_tokens=usage.total_token_count or prompt + output,
        thoughts_tokens=thoughts,
        cached_tokens=usage.cached_content_token_count or 0,
    )


def _dump(value: Any) -> dict[str, object] | None:
    if value is None:
        return None
    return cast(dict[str, object], value.model_dump(mode="json", exclude_none=True))


class ResponseReader:
    """Converts `GenerateContentResponse`s, one whole response or a stream of chunks.

    Gemini reports `STOP` for a turn that ends in function calls; the reader remembers calls
    seen earlier in the stream so such a turn finishes as `tool_calls`, like other providers.
    """

    __slots__ = ("_saw_call",)

    def __init__(self) -> None:
        self._saw_call = False

    def read(self, response: types.GenerateContentResponse, *, partial: bool) -> ModelResponse:
        parts: list[Part] = []
        finish_reason: str | None = None
        error_code: str | None = None
        error_message: str | None = None
        grounding: dict[str, object] | None = None
        citation: dict[str, object] | None = None
        candidate = response.candidates[0] if response.candidates else None
        if candidate is not None:
            if candidate.content is not None:
                for part in candidate.content.parts or ():
                    converted = _from_part(part)
                    if converted is not None:
                        parts.append(converted)
                        self._saw_call = self._saw_call or converted.function_call is not None
            grounding = _dump(candidate.grounding_metadata)
            citation = _dump(candidate.citation_metadata)
            reason = candidate.finish_reason.value if candidate.finish_reason else None
            if reason is not None:
                finish_reason, error_code = self._finish(reason)
                if error_code is not None:
                    error_message = candidate.finish_message or f"the model stopped: {reason}"
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            finish_reason = error_code = CONTENT_FILTER
            reason = feedback.block_reason.value
            detail = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
            error_message = f"the prompt was blocked ({reason}){detail}"
        return ModelResponse(
            content=Content(role="model", parts=parts) if parts else None,
            partial=partial,
            turn_complete=None if partial else True,
            usage=convert_usage(response.usage_metadata),
            finish_reason=finish_reason,
            error_code=error_code,
            error_message=error_message,
            model_version=response.model_version,
            grounding_metadata=grounding,
            citation_metadata=citation,
        )

    def _finish(self, reason: str) -> tuple[str | None, str | None]:
        """(finish_reason, error_code) for a Gemini finish reason."""
        if reason in _NORMAL:
            normal = _NORMAL[reason]
            return ("tool_calls" if normal == "stop" and self._saw_call else normal), None
        if reason in _BLOCKED:
            return CONTENT_FILTER, CONTENT_FILTER
        code = MALFORMED_FUNCTION_CALL if reason == "MALFORMED_FUNCTION_CALL" else reason.lower()
        return code, code
