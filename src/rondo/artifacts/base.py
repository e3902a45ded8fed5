"""The artifact-service interface: versioned named blobs per app/user/session (SPEC R5)."""

from __future__ import annotations

import abc

from rondo.types import Part

__all__ = ["BaseArtifactService"]


class BaseArtifactService(abc.ABC):
    """Stores artifacts. Names starting with `user:` are shared by all of a user's sessions."""

    @abc.abstractmethod
    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        """Store a new version and return its number (0, 1, 2...)."""

    @abc.abstractmethod
    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        """The given version (latest when None), or None if there is none."""

    @abc.abstractmethod
    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        """Names visible to the session (its own and the user's), sorted."""

    @abc.abstractmethod
    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        """Delete every version of an artifact."""

    @abc.abstractmethod
    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        """The stored version numbers of an artifact."""
