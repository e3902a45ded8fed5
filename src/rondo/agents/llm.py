"""`Agent`: the LLM agent. Its loop lives in `rondo.flow`; this module is configuration."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from rondo._callbacks import Callbacks, normalize_callbacks
from rondo._frozen import ReadOnlyDict
from rondo._runs import runner_for
from rondo.agents.base import BaseAgent, Item
from rondo.errors import ConfigurationError, InvalidCallbackError, OutputValidationError

# Models, tools and pydantic load when an agent is built, not when the class is imported
# (`from rondo import Agent` stays cheap: issue 8).
if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from rondo._runs import AgentRunner
    from rondo.context import InvocationContext
    from rondo.events import Event
    from rondo.flow.context_strategies import ContextStrategy
    from rondo.flow.views import AgentMode
    from rondo.hooks import (
        AfterAgentCallback,
        AfterModelCallback,
        AfterToolCallback,
        BeforeAgentCallback,
        BeforeModelCallback,
        BeforeToolCallback,
        OnModelErrorCallback,
        OnToolErrorCallback,
    )
    from rondo.lifecycle import LifecycleEvent
    from rondo.models.base import GenerateConfig, Model
    from rondo.models.live import LiveRequestQueue
    from rondo.outcome import RunResult
    from rondo.run_config import RunConfig
    from rondo.tools.base import BaseTool, BaseToolset
    from rondo.types import Message

__all__ = ["Agent", "InstructionProvider", "LlmAgent"]

InstructionProvider = Callable[..., object]

# A JSON answer a model wrapped in a Markdown code fence.
_FENCED_JSON = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n?[ \t]*```", re.S)


class Agent(BaseAgent):
    """An LLM agent: a model, instructions, tools and callbacks (DESIGN §4).

    `model` may be a `Model`, a model string (`"openai:gpt-4o-mini"`, `"local:smollm2"`) or
    None to use the parent agent's model.
    """

    def __init__(
        self,
        name: str,
        model: Model | str | None = None,
        instruction: str | InstructionProvider = "",
        description: str = "",
        tools: Sequence[BaseTool | BaseToolset | Callable[..., object]] = (),
        sub_agents: Sequence[BaseAgent] = (),
        output_key: str | None = None,
        output_schema: Any = None,
        include_contents: Literal["default", "none"] = "default",
        global_instruction: str | InstructionProvider = "",
        generate_config: GenerateConfig | None = None,
        disallow_transfer_to_parent: bool = False,
        disallow_transfer_to_peers: bool = False,
        mode: AgentMode = "chat",
        before_model_callback: BeforeModelCallback | Sequence[BeforeModelCallback] | None = None,
        after_model_callback: AfterModelCallback | Sequence[AfterModelCallback] | None = None,
        on_model_error_callback: OnModelErrorCallback
        | Sequence[OnModelErrorCallback]
        | None = None,
        before_tool_callback: BeforeToolCallback | Sequence[BeforeToolCallback] | None = None,
        after_tool_callback: AfterToolCallback | Sequence[AfterToolCallback] | None = None,
        on_tool_error_callback: OnToolErrorCallback | Sequence[OnToolErrorCallback] | None = None,
        before_agent_callback: BeforeAgentCallback | Sequence[BeforeAgentCallback] | None = None,
        after_agent_callback: AfterAgentCallback | Sequence[AfterAgentCallback] | None = None,
        max_concurrent_tool_calls: int | None = None,
        input_guardrails: Sequence[object] = (),
        output_guardrails: Sequence[object] = (),
        tool_input_guardrails: Sequence[object] = (),
        tool_output_guardrails: Sequence[object] = (),
        context_strategies: ContextStrategy | Sequence[ContextStrategy] | None = None,
    ) -> None:
        super().__init__(
            name=name,
            description=description,
            sub_agents=sub_agents,
            before_agent_callback=before_agent_callback,
            after_agent_callback=after_agent_callback,
        )
        from rondo.models.base import GenerateConfig, Model
        from rondo.models.registry import resolve_model
        from rondo.tools.base import BaseTool, BaseToolset
        from rondo.tools.function import as_tool

        if isinstance(model, str):
            model = resolve_model(model)
        elif model is not None and not isinstance(cast(Any, model), Model):
            raise ConfigurationError(
                f"model must be a Model, a model string or None, got {type(model).__name__}"
            )
        self.model: Model | None = model
        for label, value in (
            ("instruction", instruction),
            ("global_instruction", global_instruction),
        ):
            if not isinstance(value, str) and not callable(value):
                raise InvalidCallbackError(f"{label} must be a string or a callable")
        self.instruction = instruction
        self.global_instruction = global_instruction
        self.tools: list[BaseTool | BaseToolset] = [
            t if isinstance(t, BaseToolset) else as_tool(t) for t in tools
        ]
        names = [t.name for t in self.tools if isinstance(t, BaseTool)]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigurationError(f"agent {name!r} has several tools named {dupes}")
        if include_contents not in ("default", "none"):
            raise ConfigurationError("include_contents must be 'default' or 'none'")
        if mode not in ("chat", "task", "single_turn"):
            raise ConfigurationError("mode must be 'chat', 'task' or 'single_turn'")
        if generate_config is not None and not isinstance(generate_config, GenerateConfig):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("generate_config must be a rondo.models.GenerateConfig")
        self.output_key = output_key
        self.output_schema = output_schema
        self._output_adapter: TypeAdapter[Any] | None = None
        if output_schema is not None:
            from pydantic import TypeAdapter

            try:
                self._output_adapter = TypeAdapter(output_schema)
                self._output_json_schema = self._output_adapter.json_schema()
            except Exception as exc:
                raise ConfigurationError(
                    f"output_schema of agent {name!r} cannot be described as JSON schema: {exc}"
                ) from exc
        self.include_contents: Literal["default", "none"] = include_contents
        self.generate_config = generate_config
        self.disallow_transfer_to_parent = disallow_transfer_to_parent
        self.disallow_transfer_to_peers = disallow_transfer_to_peers
        self.mode: AgentMode = mode
        if max_concurrent_tool_calls is not None and (
            isinstance(max_concurrent_tool_calls, bool)
            or not isinstance(max_concurrent_tool_calls, int)  # pyright: ignore[reportUnnecessaryIsInstance]
            or max_concurrent_tool_calls < 1
        ):
            raise ConfigurationError(
                "max_concurrent_tool_calls must be a positive int (1: one call after another) "
                f"or None (no limit), got {max_concurrent_tool_calls!r}"
            )
        # How many of one step's calls run at once (T2: all, by default); 1 runs them one
        # after another in call order, each ending before the next starts (seed 002 §4.C).
        self.max_concurrent_tool_calls = max_concurrent_tool_calls
        self.before_model_callbacks: Callbacks = normalize_callbacks(
            before_model_callback, "before_model_callback"
        )
        self.after_model_callbacks: Callbacks = normalize_callbacks(
            after_model_callback, "after_model_callback"
        )
        self.on_model_error_callbacks: Callbacks = normalize_callbacks(
            on_model_error_callback, "on_model_error_callback"
        )
        self.before_tool_callbacks: Callbacks = normalize_callbacks(
            before_tool_callback, "before_tool_callback"
        )
        self.after_tool_callbacks: Callbacks = normalize_callbacks(
            after_tool_callback, "after_tool_callback"
        )
        self.on_tool_error_callbacks: Callbacks = normalize_callbacks(
            on_tool_error_callback, "on_tool_error_callback"
        )
        # G6: checks that block before what they guard (`rondo.guardrails`); empty tuples
        # cost the loop nothing.
        from rondo.guardrails import (
            InputGuardrail,
            OutputGuardrail,
            ToolInputGuardrail,
            ToolOutputGuardrail,
            as_guardrails,
        )

        self.input_guardrails: tuple[InputGuardrail, ...] = as_guardrails(
            input_guardrails, InputGuardrail, "input_guardrails"
        )
        self.output_guardrails: tuple[OutputGuardrail, ...] = as_guardrails(
            output_guardrails, OutputGuardrail, "output_guardrails"
        )
        self.tool_input_guardrails: tuple[ToolInputGuardrail, ...] = as_guardrails(
            tool_input_guardrails, ToolInputGuardrail, "tool_input_guardrails"
        )
        self.tool_output_guardrails: tuple[ToolOutputGuardrail, ...] = as_guardrails(
            tool_output_guardrails, ToolOutputGuardrail, "tool_output_guardrails"
        )
        # K3: what the model sees of a long history (`rondo.flow.context_strategies`).
        self.context_strategies: tuple[ContextStrategy, ...] = ()
        if context_strategies is not None:
            from rondo.flow.context_strategies import normalize_strategies

            self.context_strategies = normalize_strategies(context_strategies)
        self._default_runner: AgentRunner | None = None

    transfers: ClassVar[bool] = True

    # -- configuration derived from the tree ------------------------------------------------

    @property
    def reached_by_call(self) -> bool:
        return self.mode != "chat"

    @property
    def canonical_model(self) -> Model:
        """This agent's model, or the nearest ancestor's."""
        agent: BaseAgent | None = self
        while agent is not None:
            if isinstance(agent, Agent) and agent.model is not None:
                return agent.model
            agent = agent.parent_agent
        raise ConfigurationError(f"agent {self.name!r} has no model and no ancestor with one")

    @property
    def output_adapter(self) -> TypeAdapter[Any] | None:
        return self._output_adapter

    @property
    def output_json_schema(self) -> dict[str, object] | None:
        return self._output_json_schema if self._output_adapter is not None else None

    def parse_output(self, text: str) -> Any:
        """The final answer validated against `output_schema`. JSON in a fenced block
        (```json ... ```) is read too; an answer that does not fit raises
        `OutputValidationError` (never passed off as the result)."""
        from pydantic import ValidationError

        adapter = self._output_adapter
        if adapter is None:
            raise ConfigurationError(f"agent {self.name!r} has no output_schema")
        candidates = [text]
        fenced = _FENCED_JSON.search(text)
        if fenced is not None:
            candidates.append(fenced.group(1))
        problem: ValidationError | None = None
        for candidate in candidates:
            try:
                return adapter.validate_json(candidate)
            except ValidationError as exc:
                problem = problem or exc
        if self._output_json_schema.get("type") == "string":
            return adapter.validate_python(text)  # a plain-text answer to a string schema
        assert problem is not None
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}"
            for err in problem.errors()[:5]
        )
        raise OutputValidationError(
            f"the answer of agent {self.name!r} does not match its output_schema ({details})",
            text=text,
        ) from problem

    def answer_of(self, text: str) -> dict[str, object]:
        """With an output schema, the validated answer (an `{"error": ...}` response when it
        does not fit); else the text."""
        if self._output_adapter is None or not text:
            return super().answer_of(text)
        try:
            value = self.parse_output(text)
        except OutputValidationError as exc:
            return {"error": str(exc)}
        dumped = self._output_adapter.dump_python(value, mode="json")
        return dumped if isinstance(dumped, dict) else {"result": dumped}  # pyright: ignore[reportUnknownVariableType]

    # -- running ------------------------------------------------------------------------------

    def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        from rondo.flow.loop import Flow

        return Flow(self, self.canonical_model).run(ctx)

    def run_live(
        self, parent_context: InvocationContext, queue: LiveRequestQueue
    ) -> AsyncGenerator[Item, None]:
        """The agent's live call (SPEC L1): audio and text from `queue` over one connection
        of its live model, inside the same hooks and span as a turn (`run_async`)."""
        from rondo.flow.live import run_live_call

        return self._run_around(parent_context, lambda ctx: run_live_call(self, ctx, queue))

    def with_output_key(self, event: Event) -> Event:
        """E3: the event with the agent's final non-thought text saved to `state[output_key]`
        (and, with an output schema, the validated object's JSON to `{output_key}_parsed`);
        the same event when there is nothing to save."""
        key = self.output_key
        if key is None or event.partial or not event.is_final_response():
            return event
        text = event.text
        if not text:
            return event
        delta = {**event.actions.state_delta, key: text}
        if self._output_adapter is not None:
            try:
                parsed = self.parse_output(text)
            except OutputValidationError:
                pass  # the run reports it (RunResult.error); the text is still saved
            else:
                delta[f"{key}_parsed"] = self._output_adapter.dump_python(parsed, mode="json")
        actions = event.actions.model_copy(update={"state_delta": ReadOnlyDict(delta)})
        return event.model_copy(update={"actions": actions})

    # -- convenience entry points -----------------------------------------------------------

    def _runner(self) -> AgentRunner:
        if self._default_runner is None:
            self._default_runner = runner_for(self)
        return self._default_runner

    async def run(
        self,
        message: Message,
        *,
        session_id: str | None = None,
        user_id: str = "user",
        run_config: RunConfig | None = None,
    ) -> RunResult:
        """Run one message and return the result (output, records, session id)."""
        return await self._runner().run_to_result(
            user_id=user_id, session_id=session_id, new_message=message, run_config=run_config
        )

    def run_sync(
        self,
        message: Message,
        *,
        session_id: str | None = None,
        user_id: str = "user",
        run_config: RunConfig | None = None,
    ) -> RunResult:
        """`run` for synchronous code; works inside a running event loop too."""
        from rondo._sync import run_coroutine_sync

        return run_coroutine_sync(
            lambda: self.run(message, session_id=session_id, user_id=user_id, run_config=run_config)
        )

    async def stream(
        self,
        message: Message,
        *,
        session_id: str | None = None,
        user_id: str = "user",
        run_config: RunConfig | None = None,
    ) -> AsyncGenerator[LifecycleEvent, None]:
        """The lifecycle stream of one message (`RunStart` … `RunEnd`)."""
        runner = self._runner()
        if session_id is None:
            session_id = await runner.new_session_id(user_id)
        async with aclosing(
            runner.stream_async(
                user_id=user_id, session_id=session_id, new_message=message, run_config=run_config
            )
        ) as events:
            async for event in events:
                yield event


LlmAgent = Agent
