"""Test helpers that ship with rondo: a scripted model, the stream-contract checker, cassettes
(record a model's exchanges, replay them offline) and ADK eval sets from a test.

Production code never imports this package.
"""

from rondo.testing.cassette import (
    CassetteError,
    CassetteMismatchError,
    CassettePlayer,
    CassetteRecorder,
    RecordingModel,
    ReplayModel,
    record,
    replay,
)
from rondo.testing.contract import StreamContractError, check_stream
from rondo.testing.evals import evaluate, evaluate_async
from rondo.testing.function_model import FunctionModel
from rondo.testing.live import ScriptedLiveModel
from rondo.testing.scripted import ScriptedModel

__all__ = [
    "CassetteError",
    "CassetteMismatchError",
    "CassettePlayer",
    "CassetteRecorder",
    "FunctionModel",
    "RecordingModel",
    "ReplayModel",
    "ScriptedLiveModel",
    "ScriptedModel",
    "StreamContractError",
    "check_stream",
    "evaluate",
    "evaluate_async",
    "record",
    "replay",
]
