"""Guardrails that block (SPEC G6): checks that run *before* what they guard.

    @input_guardrail
    async def no_secrets(ctx, agent, message):
        return GuardrailFunctionOutput(tripwire_triggered="password" in message.text)

    Agent(..., input_guardrails=[no_secrets], output_guardrails=[...],
          tool_input_guardrails=[...], tool_output_guardrails=[...])

The names follow openai-agents (`@input_guardrail`, `GuardrailFunctionOutput`,
`tripwire_triggered`, `output_info`), the timing does not: openai-agents starts the agent
beside its input guardrails, so a tool may already have run when one trips. rondo runs an
agent's input guardrails first and starts the model only once all of them passed: a tripped
input guardrail guarantees that no model call and no tool call of that turn happened (they
cost the guardrails' latency before the first token). Output guardrails see the final answer
before it is stored or shown; tool input guardrails see the arguments after the `before_tool`
hooks and before the confirmation gate and the tool; tool output guardrails see the result
after the `after_tool` hooks, before the model does.

A guardrail function may be sync or async (a sync one runs inline: keep it quick, make it async
when it does I/O or asks a model — `ctx.invocation_context` reaches the agent's model). It
returns a `GuardrailFunctionOutput` (or a bool: True trips). An exception in a guardrail is not
a pass: it fails the run (input, output) or the call (tool).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, cast, overload

from rondo.errors import InvalidCallbackError

__all__ = [
    "Guardrail",
    "GuardrailFunctionOutput",
    "GuardrailStage",
    "InputGuardrail",
    "OutputGuardrail",
    "ToolInputGuardrail",
    "ToolOutputGuardrail",
    "input_guardrail",
    "output_guardrail",
    "tool_input_guardrail",
    "tool_output_guardrail",
]

GuardrailStage = Literal["input", "output", "tool_input", "tool_output"]


@dataclass(frozen=True)
class GuardrailFunctionOutput:
    """A guardrail's verdict. `tripwire_triggered` blocks; `output_info` is whatever the check
    found (kept in the stored record and the lifecycle event; keep it JSON); `message` is what
    is said instead: the reply to a blocked input, the answer that replaces a blocked output
    (None withholds it), the error the model sees for a blocked tool call."""

    tripwire_triggered: bool = False
    output_info: object = None
    message: str | None = None


G = TypeVar("G", bound="Guardrail")
GuardrailFn = Callable[..., object]


@dataclass(frozen=True)
class Guardrail:
    """A check that blocks (one of the four kinds below): its function, its name and where it
    runs."""

    guardrail_function: GuardrailFn
    name: str = ""

    stage: GuardrailStage = "input"

    @property
    def label(self) -> str:
        return self.name or getattr(self.guardrail_function, "__name__", "guardrail")

    async def run(self, *args: object) -> GuardrailFunctionOutput:
        """Call the function (sync or async) and read its verdict."""
        return await self.read(self.guardrail_function(*args))

    async def read(self, result: object) -> GuardrailFunctionOutput:
        """The verdict in what the function returned (awaited first when it is async)."""
        if isinstance(result, Awaitable):
            result = await cast(Awaitable[object], result)
        if isinstance(result, GuardrailFunctionOutput):
            return result
        if isinstance(result, bool):
            return GuardrailFunctionOutput(tripwire_triggered=result)
        raise InvalidCallbackError(
            f"guardrail {self.label!r} must return a GuardrailFunctionOutput or a bool, "
            f"got {type(result).__name__}"
        )


@dataclass(frozen=True)
class InputGuardrail(Guardrail):
    """`fn(ctx: ReadonlyContext, agent, message: Content)`: the user's message of the turn,
    before the agent's first model call."""

    stage: GuardrailStage = "input"


@dataclass(frozen=True)
class OutputGuardrail(Guardrail):
    """`fn(ctx: ReadonlyContext, agent, output: Content)`: the agent's final answer (`.text`
    for its text; a structured answer is its JSON), before it is stored or shown."""

    stage: GuardrailStage = "output"


@dataclass(frozen=True)
class ToolInputGuardrail(Guardrail):
    """`fn(ctx: ToolContext, tool, args: dict)`: a call's arguments, before the tool runs."""

    stage: GuardrailStage = "tool_input"


@dataclass(frozen=True)
class ToolOutputGuardrail(Guardrail):
    """`fn(ctx: ToolContext, tool, args: dict, result: dict)`: a call's result (the response
    dict the model would see), before the model sees it."""

    stage: GuardrailStage = "tool_output"


def _decorator(
    kind: type[G], fn: GuardrailFn | None, name: str | None
) -> G | Callable[[GuardrailFn], G]:
    if fn is None:
        return lambda inner: _make(kind, inner, name)
    return _make(kind, fn, name)


def _make(kind: type[G], fn: object, name: str | None) -> G:
    if not callable(fn):
        raise InvalidCallbackError(f"a guardrail must be a callable, got {type(fn).__name__}")
    return kind(guardrail_function=fn, name=name or "")


@overload
def input_guardrail(fn: GuardrailFn, /) -> InputGuardrail: ...
@overload
def input_guardrail(*, name: str | None = None) -> Callable[[GuardrailFn], InputGuardrail]: ...
def input_guardrail(
    fn: GuardrailFn | None = None, /, *, name: str | None = None
) -> InputGuardrail | Callable[[GuardrailFn], InputGuardrail]:
    """Make `fn(ctx, agent, message)` an input guardrail (`@input_guardrail` or
    `@input_guardrail(name=...)`)."""
    return _decorator(InputGuardrail, fn, name)


@overload
def output_guardrail(fn: GuardrailFn, /) -> OutputGuardrail: ...
@overload
def output_guardrail(*, name: str | None = None) -> Callable[[GuardrailFn], OutputGuardrail]: ...
def output_guardrail(
    fn: GuardrailFn | None = None, /, *, name: str | None = None
) -> OutputGuardrail | Callable[[GuardrailFn], OutputGuardrail]:
    """Make `fn(ctx, agent, output)` an output guardrail."""
    return _decorator(OutputGuardrail, fn, name)


@overload
def tool_input_guardrail(fn: GuardrailFn, /) -> ToolInputGuardrail: ...
@overload
def tool_input_guardrail(
    *, name: str | None = None
) -> Callable[[GuardrailFn], ToolInputGuardrail]: ...
def tool_input_guardrail(
    fn: GuardrailFn | None = None, /, *, name: str | None = None
) -> ToolInputGuardrail | Callable[[GuardrailFn], ToolInputGuardrail]:
    """Make `fn(ctx, tool, args)` a tool input guardrail."""
    return _decorator(ToolInputGuardrail, fn, name)


@overload
def tool_output_guardrail(fn: GuardrailFn, /) -> ToolOutputGuardrail: ...
@overload
def tool_output_guardrail(
    *, name: str | None = None
) -> Callable[[GuardrailFn], ToolOutputGuardrail]: ...
def tool_output_guardrail(
    fn: GuardrailFn | None = None, /, *, name: str | None = None
) -> ToolOutputGuardrail | Callable[[GuardrailFn], ToolOutputGuardrail]:
    """Make `fn(ctx, tool, args, result)` a tool output guardrail."""
    return _decorator(ToolOutputGuardrail, fn, name)


def as_guardrails(value: object, kind: type[G], what: str) -> tuple[G, ...]:
    """An agent's guardrail list: guardrails of `kind`, plain functions wrapped as one."""
    if value is None:
        return ()
    items: Sequence[object] = (
        cast(Sequence[object], value) if isinstance(value, list | tuple) else (value,)
    )
    out: list[G] = []
    for item in items:
        if isinstance(item, Guardrail):
            if not isinstance(item, kind):
                raise InvalidCallbackError(
                    f"{what} takes {kind.__name__}s, got a {type(item).__name__} ({item.label!r})"
                )
            out.append(item)
        elif callable(item):
            out.append(kind(guardrail_function=item))
        else:
            raise InvalidCallbackError(
                f"{what} must be guardrails or callables, got {type(item).__name__}"
            )
    return tuple(out)
