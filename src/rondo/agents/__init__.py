"""Agents: the LLM agent and workflow agents."""

from rondo.agents.base import BaseAgent
from rondo.agents.llm import Agent, LlmAgent
from rondo.agents.workflow import LoopAgent, ParallelAgent, SequentialAgent

__all__ = ["Agent", "BaseAgent", "LlmAgent", "LoopAgent", "ParallelAgent", "SequentialAgent"]

# Team and Harness load on first use (from rondo import Team, Harness).
