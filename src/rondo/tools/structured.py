"""`set_model_response`: structured output when tools and a response schema cannot be combined
(SPEC S2). The arguments are validated against the schema; a failure goes back to the model as
an error it can fix, never as a final result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from pydantic import TypeAdapter, ValidationError

from rondo.errors import ToolArgumentsError
from rondo.models.base import FunctionDeclaration
from rondo.tools._schema import argument_names, format_validation_error
from rondo.tools.base import BaseTool

if TYPE_CHECKING:
    from rondo.context import ToolContext

__all__ = ["SET_MODEL_RESPONSE", "SetModelResponseTool"]

SET_MODEL_RESPONSE = "set_model_response"


class SetModelResponseTool(BaseTool):
    def __init__(self, adapter: TypeAdapter[Any], schema: dict[str, object]) -> None:
        super().__init__(
            name=SET_MODEL_RESPONSE,
            description="Give your final answer. Call this once, last, with the answer's fields.",
        )
        self._adapter = adapter
        self._wrapped = schema.get("type") != "object"
        parameters: dict[str, object] = (
            {"type": "object", "properties": {"result": schema}, "required": ["result"]}
            if self._wrapped
            else schema
        )
        self._declaration = FunctionDeclaration(
            name=self.name, description=self.description, parameters=parameters
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        value = args.get("result") if self._wrapped else args
        try:
            validated = self._adapter.validate_python(value)
        except ValidationError as exc:
            allowed = argument_names(self._declaration.parameters)
            raise ToolArgumentsError(format_validation_error(exc, allowed)) from None
        dumped: Any = self._adapter.dump_python(validated, mode="json")
        return cast(dict[str, object], dumped) if isinstance(dumped, dict) else {"result": dumped}
