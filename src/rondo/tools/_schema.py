"""JSON schemas and argument models for Python functions (SPEC T1)."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from rondo.errors import ToolArgumentsError, ToolDefinitionError

__all__ = ["FunctionSignature", "clean_schema", "format_validation_error"]


def clean_schema(schema: Any) -> Any:
    """Drop pydantic's `title` noise; keep property *names* that happen to be "title"."""
    if isinstance(schema, dict):
        out: dict[str, object] = {}
        for key, value in typing.cast(dict[str, object], schema).items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                out[key] = {
                    k: clean_schema(v) for k, v in typing.cast(dict[str, object], value).items()
                }
            else:
                out[key] = clean_schema(value)
        return out
    if isinstance(schema, list):
        return [clean_schema(v) for v in typing.cast(list[object], schema)]
    return schema


def argument_names(parameters: Mapping[str, object]) -> list[str]:
    """The argument names a JSON schema of a call's arguments declares (its `properties`)."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return []
    return [str(name) for name in cast(Mapping[object, object], properties)]


def format_validation_error(exc: ValidationError, allowed: list[str]) -> str:
    """A message a model can act on: which argument, what was wrong."""
    problems: list[str] = []
    unknown: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            unknown.append(loc)
            continue
        if err["type"] == "missing":
            problems.append(f"missing required argument '{loc}'")
            continue
        got = err.get("input")
        problems.append(f"argument '{loc}': {err['msg']} (got {got!r})")
    if unknown:
        names = ", ".join(f"'{u}'" for u in unknown)
        allowed_text = ", ".join(allowed) if allowed else "none"
        problems.append(f"unknown argument {names}; allowed arguments: {allowed_text}")
    return "Invalid arguments: " + "; ".join(problems)


def _param_docs(doc: str | None) -> tuple[str, dict[str, str]]:
    if not doc:
        return "", {}
    import docstring_parser  # lazy: only tool construction needs it

    parsed = docstring_parser.parse(doc)
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    description = "\n\n".join(parts).strip()
    params = {p.arg_name: (p.description or "").strip() for p in parsed.params}
    return description, params


def _is_context_type(annotation: Any, context_type: type) -> bool:
    """`ToolContext`, a subclass, or either of them optional (`ToolContext | None`)."""
    if isinstance(annotation, type):
        return issubclass(annotation, context_type)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _is_context_type(args[0], context_type)
    return False


class FunctionSignature:
    """The model-facing schema and the argument validator of one Python function."""

    __slots__ = ("context_param", "description", "model", "param_names", "parameters")

    def __init__(self, func: Callable[..., object], tool_name: str, context_type: type) -> None:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(f"tool {tool_name!r}: cannot read its signature") from exc
        try:
            # The context type resolves even where it was imported locally (a common case
            # for tools defined inside functions under `from __future__ import annotations`).
            hints = typing.get_type_hints(
                func, localns={context_type.__name__: context_type}, include_extras=True
            )
        except Exception as exc:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: cannot resolve its type hints ({exc})"
            ) from exc
        description, param_docs = _param_docs(inspect.getdoc(func))
        self.description = description
        self.context_param: str | None = None
        fields: dict[str, Any] = {}
        for pname, param in sig.parameters.items():
            annotation = hints.get(pname, Any)
            is_context = _is_context_type(annotation, context_type) or pname == "tool_context"
            if is_context:
                self.context_param = pname
                continue
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"tool {tool_name!r}: variadic parameter '{param.name}' cannot be described "
                    "to a model; declare each argument explicitly"
                )
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise ToolDefinitionError(
                    f"tool {tool_name!r}: positional-only parameter '{pname}' cannot be passed "
                    "by name"
                )
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, Field(default, description=param_docs.get(pname) or None))
        self.param_names = list(fields)
        try:
            self.model: type[BaseModel] = create_model(  # pyright: ignore[reportCallIssue]
                f"{tool_name}_arguments",
                __config__=ConfigDict(extra="forbid"),
                **fields,
            )
            schema = self.model.model_json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: its parameters cannot be described as JSON schema: {exc}"
            ) from exc
        self.parameters: dict[str, object] = clean_schema(schema)
        self.parameters.setdefault("properties", {})

    def validate(self, args: dict[str, object]) -> dict[str, object]:
        """Validate (lax mode) and return keyword arguments; bad input → ToolArgumentsError."""
        try:
            validated = self.model.model_validate(args)
        except ValidationError as exc:
            raise ToolArgumentsError(format_validation_error(exc, self.param_names)) from None
        return {name: getattr(validated, name) for name in self.param_names}
