"""Durability: resuming interrupted invocations from the session log (SPEC D1), and the one
seam where a durable-execution engine plugs in (D2)."""

from __future__ import annotations

from rondo.resume import ResumePoint, find_interrupted

__all__ = ["ResumePoint", "find_interrupted"]
