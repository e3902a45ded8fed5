"""Artifact services: versioned named blobs per app/user/session (SPEC R5)."""

from rondo.artifacts.base import BaseArtifactService
from rondo.artifacts.filesystem import FileArtifactService
from rondo.artifacts.memory import InMemoryArtifactService

__all__ = ["BaseArtifactService", "FileArtifactService", "InMemoryArtifactService"]
