"""The in-memory artifact service: versioned named blobs in a dict (SPEC R5)."""

from __future__ import annotations

from rondo.artifacts._names import check_name, is_user_scoped
from rondo.artifacts.base import BaseArtifactService
from rondo.types import Part

__all__ = ["InMemoryArtifactService"]

_Scope = tuple[str, str, str | None]  # (app, user, session or None for `user:` names)


class InMemoryArtifactService(BaseArtifactService):
    """Artifacts in a dict; every saved version is kept. Nothing is persisted."""

    def __init__(self) -> None:
        self._store: dict[_Scope, dict[str, list[Part]]] = {}

    @staticmethod
    def _scope(app_name: str, user_id: str, session_id: str, filename: str) -> _Scope:
        check_name(filename)
        return (app_name, user_id, None if is_user_scoped(filename) else session_id)

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        scope = self._scope(app_name, user_id, session_id, filename)
        versions = self._store.setdefault(scope, {}).setdefault(filename, [])
        # Parts are frozen (SPEC G1): the caller's part can be kept as it is.
        versions.append(artifact)
        return len(versions) - 1

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        scope = self._scope(app_name, user_id, session_id, filename)
        versions = self._store.get(scope, {}).get(filename)
        if not versions:
            return None
        if version is None:
            return versions[-1]
        if 0 <= version < len(versions):
            return versions[version]
        return None

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        own = self._store.get((app_name, user_id, session_id), {})
        shared = self._store.get((app_name, user_id, None), {})
        return sorted(
            name for names in (own, shared) for name, versions in names.items() if versions
        )

    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        scope = self._scope(app_name, user_id, session_id, filename)
        self._store.get(scope, {}).pop(filename, None)

    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        scope = self._scope(app_name, user_id, session_id, filename)
        return list(range(len(self._store.get(scope, {}).get(filename, []))))
