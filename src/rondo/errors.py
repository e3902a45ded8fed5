"""The exception tree. Every error rondo raises on purpose derives from `RondoError`.

    RondoError
    ├── ConfigurationError (also ValueError)   bad agent/tool/runner set-up, found at construction
    │   ├── DuplicateAgentNameError
    │   ├── InvalidCallbackError (also TypeError)  not callable, or returned the wrong type
    │   ├── ToolDefinitionError
    │   ├── ModelNotFoundError                  unknown model string or missing extra
    │   └── MissingAPIKeyError                  a provider's API key is not set (names the variable)
    ├── InvalidMessageError (also TypeError)    `new_message` of a type rondo cannot send
    ├── ReadOnlyStateError (also TypeError)     a write to a read-only state view
    ├── FrozenRecordError (also TypeError)      a change to a list or map inside a record
    ├── BudgetExceeded                          a RunConfig budget is used up: the run ends cleanly
    │   └── LlmCallsLimitExceeded               RunConfig.max_llm_calls reached (raised, SPEC F7)
    ├── GuardrailTripped                        a guardrail's tripwire fired (SPEC G6)
    ├── InstructionError (also KeyError)        a required `{placeholder}` has no value
    ├── ContentsError                           history that cannot be turned into a valid request
    ├── TransferError                           `actions.transfer_to_agent` names no legal agent
    ├── OutputValidationError (also ValueError)  a final answer that does not fit the output schema
    ├── ModelError                              a model call failed and nobody recovered it
    │   ├── ModelRateLimitError                 429 / quota (retryable)
    │   ├── ModelTimeoutError (also TimeoutError)  the call timed out (retryable)
    │   ├── ModelConnectionError                the connection failed or dropped (retryable)
    │   ├── ModelServerError                    5xx (retryable)
    │   ├── ModelBadRequestError                the request is wrong (400, 404, 413, 422)
    │   ├── ModelAuthError                      the key is wrong or lacks permission (401, 403)
    │   └── ModelResponseError                  the model's answer cannot be used (bad tool call)
    ├── ScriptExhaustedError                    `rondo.testing.ScriptedModel` ran past its script
    ├── InvalidArtifactNameError (also ValueError)  an artifact name that leaves its directory
    ├── DurableReplayError                      a durable engine's record and the log disagree
    ├── CliError                                a problem the `rondo` command reports in one line
    ├── RemoteAgentError                        a remote (A2A) agent could not answer
    │   ├── RemoteAgentUnreachableError (also ConnectionError)  no connection to it
    │   ├── RemoteAgentTimeoutError (also TimeoutError)  it did not answer in time
    │   ├── AgentCardError                      its agent card is missing or not a valid card
    │   └── RemoteAgentFailedError              it answered with an error or a failed task
    ├── InvalidStateValueError (also ValueError)    a state value that is not JSON (SPEC G3)
    ├── SessionError
    │   ├── StoreUnavailableError (also ConnectionError)  the store is down or stays locked
    │   ├── SessionNotFoundError (also LookupError)
    │   ├── SessionExistsError                  create_session with an id already in use
    │   ├── StaleSessionError                   append through an out-of-date session handle
    │   ├── InvocationNotFoundError (also LookupError)  rewind/fork to an invocation the session lacks
    │   ├── SchemaVersionError                  the database holds an older/newer schema
    │   ├── InvalidIdError (also ValueError)    an empty or malformed app name, user or session id
    │   └── InvalidPageError (also ValueError)  list_sessions: a limit below 1, a foreign page token
    └── ToolError                               a tool call that becomes an `{"error": ...}` response
        ├── ToolNotFoundError (also LookupError)  the model called a tool the agent lacks
        ├── ToolArgumentsError (also ValueError)  arguments that do not fit the tool's parameters
        ├── ToolResultError (also TypeError)    a result that cannot go back to the model
        └── ToolTimeoutError (also TimeoutError)  the tool ran past its `timeout`

Tool failures are *not* exceptions for the run: they become `{"error": ...}` function responses
the model can react to (SPEC T3). `ToolArgumentsError`, `ToolNotFoundError` and
`ToolResultError` (and `ToolTimeoutError`) are what `on_tool_error` hooks receive for those cases, so they can tell them
apart.

A provider failure is raised as the `ModelError` subclass that fits, with the SDK's exception as
`__cause__`, the HTTP `status_code` when there is one, and `retryable` (the adapters already
retried it per their `RetryPolicy`; this says whether trying again later may work).
"""

from __future__ import annotations

__all__ = [
    "AgentCardError",
    "BudgetExceeded",
    "CliError",
    "ConfigurationError",
    "ContentsError",
    "DuplicateAgentNameError",
    "DurableReplayError",
    "FrozenRecordError",
    "GuardrailTripped",
    "InstructionError",
    "InvalidArtifactNameError",
    "InvalidCallbackError",
    "InvalidIdError",
    "InvalidMessageError",
    "InvalidPageError",
    "InvalidStateValueError",
    "InvocationNotFoundError",
    "LlmCallsLimitExceeded",
    "MissingAPIKeyError",
    "ModelAuthError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelRateLimitError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "OutputValidationError",
    "ReadOnlyStateError",
    "RemoteAgentError",
    "RemoteAgentFailedError",
    "RemoteAgentTimeoutError",
    "RemoteAgentUnreachableError",
    "RondoError",
    "SchemaVersionError",
    "ScriptExhaustedError",
    "SessionError",
    "SessionExistsError",
    "SessionNotFoundError",
    "StaleSessionError",
    "StoreUnavailableError",
    "ToolArgumentsError",
    "ToolDefinitionError",
    "ToolError",
    "ToolNotFoundError",
    "ToolResultError",
    "ToolTimeoutError",
    "TransferError",
]


class RondoError(Exception):
    """Base class of every error rondo raises on purpose."""


class ConfigurationError(RondoError, ValueError):
    """An agent, tool, model or runner was configured in a way that cannot work."""


class DuplicateAgentNameError(ConfigurationError):
    """Two agents in one tree share a name (names address agents for transfer)."""


class InvalidCallbackError(ConfigurationError, TypeError):
    """A callback or instruction provider is not callable, or returned a value of a type its
    hook cannot use."""


class ToolDefinitionError(ConfigurationError):
    """A tool cannot be described to a model (unsupported parameter, bad name...)."""


class ModelNotFoundError(ConfigurationError):
    """A model string names no known provider, or the provider's extra is not installed."""


class MissingAPIKeyError(ConfigurationError):
    """A provider's API key is not set. `variables` are the environment variables it reads."""

    def __init__(self, message: str, *, variables: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.variables = variables


class InvalidMessageError(RondoError, TypeError):
    """A message (`new_message`) of a type rondo cannot send."""


class FrozenRecordError(RondoError, TypeError):
    """A change to a list or map inside a record (`content.parts`, a call's `args`,
    `actions.state_delta`, ...): records are frozen all the way to their containers (SPEC G1);
    build a new one with `model_copy(update=...)`."""


class ReadOnlyStateError(RondoError, TypeError):
    """A write to a state view that is read-only (instruction providers, the invocation)."""


class BudgetExceeded(RondoError):
    """A budget of `RunConfig.budget` / `RunConfig.session_budget` is used up (SPEC G6).

    `budget` names it (`"model_calls"`, `"tool_calls"`, `"total_tokens"`, `"cost_usd"`,
    `"wall_time"`, `"repeated_calls"`), `scope` is `"run"` or `"session"`, `limit` what it
    allows and `used` what was used when it stopped (None: unknown, an unpriced call under a
    cost budget). The run ends cleanly: the runner stores a record naming the budget and
    reports this error in `RunResult.error` / `RunEnd.error` instead of raising it.
    """

    # Whether the runner turns this error into a clean end of the run (stored record, RunEnd)
    # rather than letting it propagate.
    ends_run_cleanly = True

    def __init__(
        self,
        message: str,
        *,
        budget: str = "",
        limit: float | None = None,
        used: float | None = None,
        scope: str = "run",
    ) -> None:
        super().__init__(message)
        self.budget = budget
        self.limit = limit
        self.used = used
        self.scope = scope
        # The agent (and branch) that was running when the budget stopped it, and whether
        # the record that says why is stored already (else the runner stores one).
        self.agent_name = ""
        self.branch = ""
        self.recorded = False


class LlmCallsLimitExceeded(BudgetExceeded):
    """The invocation would exceed `RunConfig.max_llm_calls` (raised out of the run, F7)."""

    ends_run_cleanly = False

    def __init__(self, message: str, *, limit: int | None = None, used: int | None = None):
        super().__init__(message, budget="max_llm_calls", limit=limit, used=used)


class GuardrailTripped(RondoError):
    """A guardrail's tripwire fired (SPEC G6). `guardrail` is its name; `stage` where it ran
    (`"input"`, `"output"`, `"tool_input"`, `"tool_output"`); `output_info` what the guardrail
    returned beside the verdict; `message` what the user (or, for a tool guardrail, the model)
    is told instead.

    An input or output guardrail ends the run cleanly: its record is stored and the error is
    reported in `RunResult.error` / `RunEnd.error`. A tool guardrail's trip becomes the call's
    `{"error": ...}` response (the tool did not run, or its result was withheld).
    """

    ends_run_cleanly = True

    def __init__(
        self,
        message: str,
        *,
        guardrail: str = "",
        stage: str = "input",
        output_info: object = None,
        replacement: str | None = None,
    ) -> None:
        super().__init__(message)
        self.guardrail = guardrail
        self.stage = stage
        self.output_info = output_info
        self.replacement = replacement
        self.agent_name = ""
        self.branch = ""
        self.recorded = False


class InstructionError(RondoError, KeyError):
    """An instruction template refers to a state key or artifact that does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class ContentsError(RondoError):
    """The session history cannot be turned into a valid model request."""


class TransferError(RondoError):
    """An agent transfer names an agent that is not a legal target."""


class ModelError(RondoError):
    """A model call failed and no `on_model_error` hook recovered it.

    `status_code` is the provider's HTTP status, when there is one; `retryable` says whether
    the same call may succeed later (rate limits, timeouts, dropped connections, 5xx)."""

    retryable: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        status_code: int | None = None,
        retryable: bool | None = None,
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        if retryable is not None:
            self.retryable = retryable
        self.provider = provider
        self.model = model


class ModelRateLimitError(ModelError):
    """The provider refused the call for rate or quota limits (429)."""

    retryable = True


class ModelTimeoutError(ModelError, TimeoutError):
    """The model call timed out."""

    retryable = True


class ModelConnectionError(ModelError):
    """The connection to the provider failed or dropped."""

    retryable = True


class ModelServerError(ModelError):
    """The provider failed (5xx, overloaded)."""

    retryable = True


class ModelBadRequestError(ModelError):
    """The provider rejected the request itself (400, 404, 413, 422): retrying cannot help."""


class ModelAuthError(ModelError):
    """The API key is wrong, expired or lacks permission (401, 403)."""


class ModelResponseError(ModelError):
    """The model answered with something the run cannot use (e.g. an invalid function call)."""


class OutputValidationError(RondoError, ValueError):
    """The agent's final answer does not fit its `output_schema` (after the model had its
    chances to fix it). `text` is the answer as the model wrote it."""

    def __init__(self, message: str, *, text: str = "") -> None:
        super().__init__(message)
        self.text = text


class ScriptExhaustedError(RondoError):
    """`ScriptedModel` was called more times than its script has items."""


class InvalidArtifactNameError(RondoError, ValueError):
    """An artifact name is empty or tries to leave its directory (`..`, `/x`, `a\\b`...)."""


class RemoteAgentError(RondoError):
    """A remote agent (over A2A) could not be used. `url` is where it was asked."""

    def __init__(self, message: str, *, url: str = "") -> None:
        super().__init__(message)
        self.url = url


class RemoteAgentUnreachableError(RemoteAgentError, ConnectionError):
    """The remote agent cannot be reached (refused connection, unknown host, dropped stream)."""


class RemoteAgentTimeoutError(RemoteAgentError, TimeoutError):
    """The remote agent did not answer within the agent's timeout."""


class AgentCardError(RemoteAgentError):
    """The remote agent's card is missing, not JSON, or not a usable A2A agent card."""


class RemoteAgentFailedError(RemoteAgentError):
    """The remote agent answered with an error, or its task failed, was canceled or rejected."""


class CliError(RondoError):
    """A problem the `rondo` command reports in one line (bad path, an agent that does not
    load, options that do not go together)."""


class DurableReplayError(RondoError):
    """A durable engine handed back a recorded step where the session log says the call has
    not happened: its record and the log disagree (SPEC D2)."""


class InvalidStateValueError(RondoError, ValueError):
    """A state value is not JSON (a set, NaN, bytes, an object...): nothing was written.

    `key` is the state key written; `path` the keys and list indexes inside its value that lead
    to the offending part (empty when it is the value itself).
    """

    def __init__(self, message: str, *, key: object = None, path: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.key = key
        self.path = path


class SessionError(RondoError):
    """Base class of session-store errors."""


class StoreUnavailableError(SessionError, ConnectionError):
    """The session store could not be reached (the database is down, restarting or its
    connection broke) or stayed locked by another process. A failed append was not
    acknowledged; read the session again before going on (a resume continues the run)."""


class SessionNotFoundError(SessionError, LookupError):
    """The session does not exist."""


class SessionExistsError(SessionError):
    """A session with this id already exists."""


class StaleSessionError(SessionError):
    """The session changed in the store since this handle was read; nothing was stored."""


class InvocationNotFoundError(SessionError, LookupError):
    """A rewind or fork names an invocation that is not in the session's visible history
    (google-adk's name; also raised for one already rewound away)."""


class SchemaVersionError(SessionError):
    """The database schema version does not match this version of rondo."""


class InvalidPageError(SessionError, ValueError):
    """`list_sessions` was asked for a page that cannot exist: a limit below 1, or a page token
    this store did not issue."""


class InvalidIdError(SessionError, ValueError):
    """An app name, user id or session id that is empty, too long or holds a character it may
    not have (see `rondo.sessions.base.check_ids`)."""


class ToolError(RondoError):
    """Base class for tool-call failures that become `{"error": ...}` responses."""


class ToolNotFoundError(ToolError, LookupError):
    """The model called a tool that the agent does not have."""


class ToolArgumentsError(ToolError, ValueError):
    """The model's arguments do not match the tool's parameters."""


class ToolResultError(ToolError, TypeError):
    """A tool returned a value that cannot be sent back to the model (not JSON)."""


class ToolTimeoutError(ToolError, TimeoutError):
    """A tool ran past its `timeout`; the model sees it as the call's error response."""
