"""Agents: the LLM agent and workflow agents."""

from rondo.agents.base import BaseAgent
from rondo.agents.llm import Agent, LlmAgent
from rondo.agents.workflow import LoopAgent, ParallelAgent, SequentialAgent

__all__ = ["Agent", "BaseAgent", "LlmAgent", "LoopAgent", "ParallelAgent", "SequentialAgent"]
