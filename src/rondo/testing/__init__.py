"""Test helpers that ship with rondo: a scripted model and the stream-contract checker.

Production code never imports this package.
"""

from rondo.testing.contract import StreamContractError, check_stream
from rondo.testing.scripted import ScriptedModel

__all__ = ["ScriptedModel", "StreamContractError", "check_stream"]
