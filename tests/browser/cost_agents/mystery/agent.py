"""The cost footer test app `mystery` (see ../_costed.py)."""

from _costed import agent

root_agent = agent("acme", "no-such-model-xyz")
