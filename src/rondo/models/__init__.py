"""Models: the protocol, request/response data and provider adapters (loaded lazily)."""

from rondo.models.base import (
    FunctionDeclaration,
    GenerateConfig,
    Model,
    ModelCapabilities,
    ModelRequest,
    ModelResponse,
)
from rondo.models._retry import RetryPolicy
from rondo.models.registry import register_provider, resolve_model
from rondo.types import Usage

__all__ = [
    "FunctionDeclaration",
    "GenerateConfig",
    "Model",
    "ModelCapabilities",
    "ModelRequest",
    "ModelResponse",
    "RetryPolicy",
    "Usage",
    "register_provider",
    "resolve_model",
]
