"""OpenTelemetry GenAI spans and metrics (SPEC O1), on the global providers.

Only `opentelemetry-api` is used: rondo never configures an SDK or an exporter. An agent run
is an `invoke_agent {agent}` span, each model call a `chat {model}` span under it and each
tool call an `execute_tool {tool}` span under it, with the attributes of the OpenTelemetry
GenAI semantic conventions, rondo's ids (`rondo.run_id`, `rondo.invocation_id`,
`rondo.session_id`, also as `gen_ai.conversation.id`) and the `gcp.vertex.agent.*` ids google-adk's dev
UI looks spans up by. Two histograms: `gen_ai.client.operation.duration` (seconds) and
`gen_ai.client.token.usage` (tokens).

Message content — the user's text, the model's answer, tool arguments and results — is
recorded only when `RONDO_OTEL_CAPTURE_CONTENT=true` or
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.

Cost: while nothing has loaded `opentelemetry.trace` / `opentelemetry.metrics` (no SDK can be
configured then), an agent run asks two dictionary lookups and builds nothing; with only the
API's default no-op providers it asks the providers once per agent run and records nothing.
The opentelemetry modules are imported on first use, never at `import rondo`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider
    from opentelemetry.util.types import AttributeValue

    from rondo.events import Event
    from rondo.models.base import Model, ModelRequest, ModelResponse
    from rondo.sessions.base import Session
    from rondo.types import Content, FunctionCall, Part

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "AgentTrace",
    "ModelTrace",
    "ToolTrace",
    "TracedRun",
    "capture_content",
    "start_agent",
]


class _TracedAgent(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...


class TracedRun(Protocol):
    """What an agent's span is named and correlated from: an invocation context
    (`rondo.context.InvocationContext`, the layer above, carries the trace it starts)."""

    @property
    def run_id(self) -> str: ...
    @property
    def invocation_id(self) -> str: ...
    @property
    def app_name(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def session(self) -> Session: ...
    @property
    def agent(self) -> _TracedAgent: ...
    @property
    def user_content(self) -> Content | None: ...
    @property
    def trace(self) -> AgentTrace | None: ...


CAPTURE_CONTENT_ENV = (
    "RONDO_OTEL_CAPTURE_CONTENT",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
)
# Environment variables by which the API builds a provider without anyone importing it first.
_PROVIDER_ENV = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")
_NO_OP_PROVIDERS = frozenset(
    {"ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider", "NoOpMeterProvider"}
)
# The GenAI conventions' advice for the duration histogram's buckets (seconds).
_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
# What the GenAI conventions call the providers of rondo's adapters.
_PROVIDERS = {
    "rondo.models.openai": "openai",
    "rondo.models.anthropic": "anthropic",
    "rondo.models.gemini": "gcp.gen_ai",
    "rondo.models.local": "llama_cpp",
}


def capture_content() -> bool:
    """Whether message content may go on spans (opted in by an environment variable)."""
    return any(os.environ.get(name, "").strip().lower() == "true" for name in CAPTURE_CONTENT_ENV)


class _Instruments:
    """The tracer and histograms of one (tracer provider, meter provider) pair."""

    __slots__ = ("duration", "meter_provider", "tokens", "tracer", "tracer_provider")

    def __init__(self, tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
        from rondo._version import __version__

        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer: Tracer = tracer_provider.get_tracer("rondo", __version__)
        meter = meter_provider.get_meter("rondo", __version__)
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
        )
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(_TOKEN_BUCKETS),
        )


_env_may_configure: bool | None = None
_instruments: _Instruments | None = None


def _active() -> _Instruments | None:
    """The instruments to record with, or None when no SDK is configured (nothing to do)."""
    global _env_may_configure, _instruments
    modules = sys.modules
    if "opentelemetry.trace" not in modules and "opentelemetry.metrics" not in modules:
        if _env_may_configure is None:
            _env_may_configure = any(name in os.environ for name in _PROVIDER_ENV)
        if not _env_may_configure:
            return None  # nobody could have configured a provider: skip the 30 ms import
    from opentelemetry import metrics, trace

    tracer_provider = trace.get_tracer_provider()
    meter_provider = metrics.get_meter_provider()
    cached = _instruments
    if (
        cached is not None
        and cached.tracer_provider is tracer_provider
        and cached.meter_provider is meter_provider
    ):
        return cached
    if (
        type(tracer_provider).__name__ in _NO_OP_PROVIDERS
        and type(meter_provider).__name__ in _NO_OP_PROVIDERS
    ):
        return None
    _instruments = cached = _Instruments(tracer_provider, meter_provider)
    return cached


def _ids(ctx: TracedRun) -> dict[str, AttributeValue]:
    session_id = ctx.session.id
    return {
        "gen_ai.conversation.id": session_id,
        "rondo.run_id": ctx.run_id,
        "rondo.invocation_id": ctx.invocation_id,
        # Issue 11 names the session id beside rondo's ids: under rondo's prefix too, so a
        # query by `rondo.*` finds it as well as by the GenAI convention's name.
        "rondo.session_id": session_id,
        "rondo.app_name": ctx.app_name,
        # Whose session it is (google-adk marks its spans so too): the server's trace routes
        # show a user only their own spans, whatever their sessions are named (issue 26).
        "rondo.user_id": ctx.user_id,
        # The ids google-adk's dev UI finds spans by (its Trace tab reads these).
        "gcp.vertex.agent.session_id": session_id,
        "gcp.vertex.agent.invocation_id": ctx.invocation_id,
    }


def _json(value: object) -> str:
    import json  # only when content is captured: `import rondo` stays light

    return json.dumps(value, ensure_ascii=False, default=str)


def _content_json(contents: Iterable[Content | None]) -> str:
    """Contents as the conventions' message list: `[{"role", "parts": [...]}]`, as JSON."""
    messages: list[dict[str, object]] = []
    for content in contents:
        if content is None:
            continue
        messages.append({"role": content.role, "parts": [_part(p) for p in content.parts]})
    return _json(messages)


def _part(part: Part) -> dict[str, object]:
    if part.text is not None:
        return {"type": "thinking" if part.thought else "text", "content": part.text}
    call = part.function_call
    if call is not None:
        return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.args}
    answer = part.function_response
    if answer is not None:
        return {"type": "tool_call_response", "id": answer.id, "response": answer.response}
    return {"type": "blob"}


def _error(span: Span, error_type: str, message: str = "") -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, message or error_type))


def _exception(span: Span, exc: BaseException) -> None:
    span.record_exception(exc)
    _error(span, type(exc).__qualname__, str(exc))


class AgentTrace:
    """The `invoke_agent` span of one agent run; its model and tool spans start from it."""

    __slots__ = ("_ids", "_started", "agent_name", "capture", "instruments", "model", "span")

    def __init__(
        self, instruments: _Instruments, span: Span, ids: dict[str, AttributeValue], agent_name: str
    ) -> None:
        self.instruments = instruments
        self.agent_name = agent_name
        self.span = span
        self._ids = ids
        self.capture = capture_content()
        self._started = time.perf_counter()
        # The model call in flight: the loop ends it with the event it became.
        self.model: ModelTrace | None = None

    def finish(self, error: BaseException | None, answer: Content | None) -> None:
        """End the span (error status when the run raised) and record its duration."""
        span = self.span
        attributes = {"gen_ai.operation.name": "invoke_agent"}
        if error is not None:
            _exception(span, error)
            attributes["error.type"] = type(error).__qualname__
        elif answer is not None and self.capture:
            span.set_attribute("gen_ai.output.messages", _content_json([answer]))
        span.end()
        self.instruments.duration.record(time.perf_counter() - self._started, attributes)

    def note(self, name: str, attributes: dict[str, AttributeValue]) -> None:
        """A span event on this agent's span (a tripped guardrail, a used-up budget: G6)."""
        self.span.add_event(name, attributes)

    def model_call(self, model: Model, request: ModelRequest) -> ModelTrace:
        """Start the `chat {model}` span of one model call."""
        self.model = trace = ModelTrace(self, model, request)
        return trace

    def model_event(self, event: Event) -> None:
        """The model call in flight became `event` (a final one): its span ends with it."""
        current = self.model
        if current is not None:
            self.model = None
            current.finish(event)

    def tool_call(self, call: FunctionCall, description: str) -> ToolTrace:
        """Start the `execute_tool {tool}` span of one tool call."""
        return ToolTrace(self, call, description)

    def child_span(self, name: str, kind: SpanKind, attributes: dict[str, AttributeValue]) -> Span:
        """Start a span under this agent's, with the run's ids added to `attributes`."""
        from opentelemetry import trace

        attributes.update(self._ids)
        return self.instruments.tracer.start_span(
            name,
            context=trace.set_span_in_context(self.span),
            kind=kind,
            attributes=attributes,
        )


def start_agent(parent: TracedRun, ctx: TracedRun) -> AgentTrace | None:
    """Start the `invoke_agent` span of `ctx.agent`'s run (None when nothing records).

    It nests under the parent agent's span when there is one, else under the current span
    (a tool's, when an agent runs as a tool)."""
    instruments = _active()
    if instruments is None:
        return None
    from opentelemetry import trace

    agent = ctx.agent
    outer = parent.trace
    ids = _ids(ctx)
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent.name,
        **ids,
    }
    if agent.description:
        attributes["gen_ai.agent.description"] = agent.description
    model: object = getattr(agent, "model", None)
    model_name = model if isinstance(model, str) else getattr(model, "name", None)
    if isinstance(model_name, str) and model_name:
        attributes["gen_ai.request.model"] = model_name
    span = instruments.tracer.start_span(
        f"invoke_agent {agent.name}",
        context=trace.set_span_in_context(outer.span) if outer is not None else None,
        kind=trace.SpanKind.INTERNAL,
        attributes=attributes,
    )
    agent_trace = AgentTrace(instruments, span, ids, agent.name)
    if agent_trace.capture and ctx.user_content is not None and outer is None:
        span.set_attribute("gen_ai.input.messages", _content_json([ctx.user_content]))
    return agent_trace


def _provider(model: Model) -> str | None:
    named = getattr(model, "provider_name", None)
    if isinstance(named, str) and named:
        return named
    return _PROVIDERS.get(type(model).__module__)


class ModelTrace:
    """The `chat {model}` span of one model call: ended by `finish` with the call's event."""

    __slots__ = ("_agent", "_attributes", "_ended", "_started", "span")

    def __init__(self, agent: AgentTrace, model: Model, request: ModelRequest) -> None:
        from opentelemetry.trace import SpanKind

        self._agent = agent
        name = request.model or model.name
        metric_attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": name,
        }
        provider = _provider(model)
        if provider is not None:
            metric_attributes["gen_ai.provider.name"] = provider
        self._attributes = metric_attributes
        attributes = dict(metric_attributes)
        if provider is not None:
            attributes["gen_ai.system"] = provider  # the conventions' older name, still read
        attributes["gen_ai.agent.name"] = agent.agent_name
        if agent.capture:
            instruction = request.config.system_instruction
            if instruction:
                attributes["gen_ai.system_instructions"] = _json(
                    [{"type": "text", "content": instruction}]
                )
            attributes["gen_ai.input.messages"] = _content_json(request.contents)
        self.span = agent.child_span(f"chat {name}", SpanKind.CLIENT, attributes)
        self._started = time.perf_counter()
        self._ended = False

    async def next(self, responses: AsyncIterator[ModelResponse]) -> ModelResponse:
        """The model's next response, asked with this span current (so the provider SDK's
        own spans, HTTP ones included, nest under it)."""
        from opentelemetry import context, trace

        token = context.attach(trace.set_span_in_context(self.span))
        try:
            return await anext(responses)
        finally:
            context.detach(token)

    def failed(self, exc: BaseException) -> None:
        """The model call raised (a recovering hook may still answer for it)."""
        if self._ended:
            return
        _exception(self.span, exc)
        self._attributes["error.type"] = type(exc).__qualname__

    def response(self, response: ModelResponse) -> None:
        """Record what a final response says: usage, finish reason, a provider's error."""
        span = self.span
        if self._ended:
            return
        usage = response.usage
        if usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            if usage.cached_tokens:
                span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens)
            if usage.cache_write_tokens:
                span.set_attribute(
                    "gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens
                )
            # Issue 25: the call's price; an unknown model is marked unpriced, never given $0.
            if usage.cost_usd is None:
                span.set_attribute("rondo.cost.unpriced", True)
            else:
                span.set_attribute("rondo.cost_usd", usage.cost_usd)
            tokens = self._agent.instruments.tokens
            tokens.record(usage.input_tokens, {**self._attributes, "gen_ai.token.type": "input"})
            tokens.record(usage.output_tokens, {**self._attributes, "gen_ai.token.type": "output"})
        if response.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [str(response.finish_reason)])
        if response.error_code:
            _error(span, str(response.error_code), response.error_message or "")
            self._attributes["error.type"] = str(response.error_code)
        if self._agent.capture and response.content is not None:
            span.set_attribute("gen_ai.output.messages", _content_json([response.content]))

    def finish(self, event: Event | None = None) -> None:
        """End the span; `event` is the record this call became (its id goes on the span)."""
        span = self.span
        if self._ended:
            return
        self._ended = True
        if event is not None:
            span.set_attribute("gcp.vertex.agent.event_id", event.id)
            span.set_attribute("rondo.event_id", event.id)
        span.end()
        self._agent.instruments.duration.record(
            time.perf_counter() - self._started, self._attributes
        )


class ToolTrace:
    """The `execute_tool {tool}` span of one call; ended once its response record exists."""

    __slots__ = ("_agent", "_ended_ns", "_error_type", "_name", "_started", "span")

    def __init__(self, agent: AgentTrace, call: FunctionCall, description: str) -> None:
        from opentelemetry.trace import SpanKind

        self._agent = agent
        self._name = call.name
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            "gen_ai.agent.name": agent.agent_name,
        }
        if call.id:
            attributes["gen_ai.tool.call.id"] = call.id
        if description:
            attributes["gen_ai.tool.description"] = description
        if agent.capture:
            attributes["gen_ai.tool.call.arguments"] = _json(call.args)
        self.span = agent.child_span(f"execute_tool {call.name}", SpanKind.INTERNAL, attributes)
        self._started = time.perf_counter()
        self._ended_ns: int | None = None
        self._error_type: str | None = None

    def attach(self) -> object:
        """Make this span current (the tool's own spans nest under it); returns the token
        `detach` takes."""
        from opentelemetry import context, trace

        return context.attach(trace.set_span_in_context(self.span))

    def detach(self, token: object) -> None:
        from opentelemetry import context

        context.detach(token)  # pyright: ignore[reportArgumentType]

    def failed(self, exc: BaseException) -> None:
        """The tool (or a hook) raised: the span's status is an error."""
        _exception(self.span, exc)
        self._error_type = type(exc).__qualname__

    def done(self, result: dict[str, object] | None) -> None:
        """The call finished: its end time is now, though the span ends with the record."""
        self._ended_ns = time.time_ns()
        elapsed = time.perf_counter() - self._started
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": self._name,
        }
        if self._error_type is not None:
            attributes["error.type"] = self._error_type
        self._agent.instruments.duration.record(elapsed, attributes)
        if result is not None and self._agent.capture:
            self.span.set_attribute("gen_ai.tool.call.result", _json(result))

    def finish(self, event: Event | None) -> None:
        """End the span; `event` is the merged response record (its id goes on the span)."""
        span = self.span
        if event is not None:
            span.set_attribute("gcp.vertex.agent.event_id", event.id)
            span.set_attribute("rondo.event_id", event.id)
        span.end(end_time=self._ended_ns)
