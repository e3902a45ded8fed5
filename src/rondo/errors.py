"""The exception tree. Every error rondo raises on purpose derives from `RondoError`.

    RondoError
    ├── ConfigurationError (also ValueError)   bad agent/tool/runner set-up, found at construction
    │   ├── DuplicateAgentNameError
    │   ├── InvalidCallbackError (also TypeError)
    │   ├── ToolDefinitionError
    │   └── ModelNotFoundError                  unknown model string or missing extra/API key
    ├── LlmCallsLimitExceeded                   RunConfig.max_llm_calls reached
    ├── InstructionError (also KeyError)        a required `{placeholder}` has no value
    ├── ContentsError                           history that cannot be turned into a valid request
    ├── TransferError                           `actions.transfer_to_agent` names no legal agent
    ├── ModelError                              a model failure nobody recovered from
    ├── ScriptExhaustedError                    `rondo.testing.ScriptedModel` ran past its script
    ├── InvalidArtifactNameError (also ValueError)  an artifact name that leaves its directory
    ├── InvalidStateValueError (also ValueError)    a state value that is not JSON (SPEC G3)
    └── SessionError
        ├── SessionNotFoundError
        ├── SessionExistsError                  create_session with an id already in use
        ├── StaleSessionError                   append through an out-of-date session handle
        ├── SchemaVersionError                  the database holds an older/newer schema
        └── InvalidIdError (also ValueError)    an empty or malformed app name, user or session id

Tool failures are *not* exceptions for the run: they become `{"error": ...}` function responses
the model can react to (SPEC T3). `ToolArgumentsError` and `ToolNotFoundError` exist so hooks
(`on_tool_error`) can tell those cases apart.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "ContentsError",
    "DuplicateAgentNameError",
    "InstructionError",
    "InvalidArtifactNameError",
    "InvalidCallbackError",
    "InvalidIdError",
    "InvalidStateValueError",
    "LlmCallsLimitExceeded",
    "ModelError",
    "ModelNotFoundError",
    "RondoError",
    "SchemaVersionError",
    "ScriptExhaustedError",
    "SessionError",
    "SessionExistsError",
    "SessionNotFoundError",
    "StaleSessionError",
    "ToolArgumentsError",
    "ToolDefinitionError",
    "ToolError",
    "ToolNotFoundError",
    "TransferError",
]


class RondoError(Exception):
    """Base class of every error rondo raises on purpose."""


class ConfigurationError(RondoError, ValueError):
    """An agent, tool, model or runner was configured in a way that cannot work."""


class DuplicateAgentNameError(ConfigurationError):
    """Two agents in one tree share a name (names address agents for transfer)."""


class InvalidCallbackError(ConfigurationError, TypeError):
    """A callback or instruction provider is not callable."""


class ToolDefinitionError(ConfigurationError):
    """A tool cannot be described to a model (unsupported parameter, bad name...)."""


class ModelNotFoundError(ConfigurationError):
    """A model string names no known provider, or the provider's extra or key is missing."""


class LlmCallsLimitExceeded(RondoError):
    """The invocation would exceed `RunConfig.max_llm_calls`."""


class InstructionError(RondoError, KeyError):
    """An instruction template refers to a state key or artifact that does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class ContentsError(RondoError):
    """The session history cannot be turned into a valid model request."""


class TransferError(RondoError):
    """An agent transfer names an agent that is not a legal target."""


class ModelError(RondoError):
    """A model call failed and no `on_model_error` hook recovered it."""


class ScriptExhaustedError(RondoError):
    """`ScriptedModel` was called more times than its script has items."""


class InvalidArtifactNameError(RondoError, ValueError):
    """An artifact name is empty or tries to leave its directory (`..`, `/x`, `a\\b`...)."""


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


class SessionNotFoundError(SessionError, LookupError):
    """The session does not exist."""


class SessionExistsError(SessionError):
    """A session with this id already exists."""


class StaleSessionError(SessionError):
    """The session changed in the store since this handle was read; nothing was stored."""


class SchemaVersionError(SessionError):
    """The database schema version does not match this version of rondo."""


class InvalidIdError(SessionError, ValueError):
    """An app name, user id or session id that is empty, too long or holds a character it may
    not have (see `rondo.sessions.base.check_ids`)."""


class ToolError(RondoError):
    """Base class for tool-call failures that become `{"error": ...}` responses."""


class ToolNotFoundError(ToolError, LookupError):
    """The model called a tool that the agent does not have."""


class ToolArgumentsError(ToolError, ValueError):
    """The model's arguments do not match the tool's parameters."""
