"""The cost footer test app `priced` (see ../_costed.py)."""

from _costed import agent

root_agent = agent("anthropic", "claude-sonnet-4-5")
