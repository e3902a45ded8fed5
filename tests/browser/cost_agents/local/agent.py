"""The cost footer test app `local` (see ../_costed.py)."""

from _costed import agent

root_agent = agent("local", "smollm2")
