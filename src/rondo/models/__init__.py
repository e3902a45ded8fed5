"""Models: the protocol, request/response data and provider adapters (loaded lazily)."""

from typing import TYPE_CHECKING, Any

from rondo.models.base import (
    FunctionDeclaration,
    GenerateConfig,
    Model,
    ModelCapabilities,
    ModelRequest,
    ModelResponse,
)
from rondo.models.live import (
    LiveConnectConfig,
    LiveConnection,
    LiveModel,
    LiveRequest,
    LiveResponse,
)
from rondo.models.registry import register_provider, resolve_model
from rondo.types import Usage

if TYPE_CHECKING:
    from rondo.models._retry import RetryPolicy

__all__ = [
    "FunctionDeclaration",
    "GenerateConfig",
    "LiveConnectConfig",
    "LiveConnection",
    "LiveModel",
    "LiveRequest",
    "LiveResponse",
    "Model",
    "ModelCapabilities",
    "ModelRequest",
    "ModelResponse",
    "RetryPolicy",
    "Usage",
    "register_provider",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    if name == "RetryPolicy":  # loaded on use: only provider adapters need it
        from rondo.models._retry import RetryPolicy

        return RetryPolicy
    raise AttributeError(f"module 'rondo.models' has no attribute {name!r}")
