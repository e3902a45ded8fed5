"""The filesystem artifact service: versioned named blobs in a directory tree (SPEC R5).

    <root>/<app>/<user>/user/<name>/<version>/        `user:` names, shared by the user
    <root>/<app>/<user>/sessions/<session>/<name>/<version>/
        part.json    the Part, without its inline bytes
        data         the inline bytes, raw (no base64)

Every path segment is percent-encoded from the app, user, session or artifact name, so no
name can reach outside its directory; names that try (`..`, `/etc/passwd`) are refused
anyway, with `InvalidArtifactNameError`. A version is written to a temporary directory and
renamed into place, so a reader never sees half of one and two writers never get the same
version number.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path

from rondo.artifacts._names import check_name, decode_segment, encode_segment, is_user_scoped
from rondo.artifacts.base import BaseArtifactService
from rondo.errors import InvalidArtifactNameError
from rondo.types import Part

__all__ = ["FileArtifactService"]

_PART = "part.json"
_DATA = "data"


class FileArtifactService(BaseArtifactService):
    """Artifacts as files under `root` (created on first save)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()

    # -- paths ------------------------------------------------------------------------------

    def _user_dir(self, app_name: str, user_id: str) -> Path:
        return self.root / encode_segment(app_name) / encode_segment(user_id)

    def _scope_dir(self, app_name: str, user_id: str, session_id: str, filename: str) -> Path:
        base = self._user_dir(app_name, user_id)
        if is_user_scoped(filename):
            return base / "user"
        return base / "sessions" / encode_segment(session_id)

    def _artifact_dir(self, app_name: str, user_id: str, session_id: str, filename: str) -> Path:
        check_name(filename)
        path = self._scope_dir(app_name, user_id, session_id, filename) / encode_segment(filename)
        # Belt and braces: the encoding already makes this impossible.
        if not path.is_relative_to(self.root):  # pragma: no cover
            raise InvalidArtifactNameError(f"artifact path {path} escapes {self.root}")
        return path

    @staticmethod
    def _versions(directory: Path) -> list[int]:
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        return sorted(int(n) for n in names if n.isdigit())

    # -- blocking work, run on a worker thread ------------------------------------------------

    def _save(self, directory: Path, artifact: Part) -> int:
        directory.mkdir(parents=True, exist_ok=True)
        staging = directory / f".tmp-{uuid.uuid4().hex}"
        staging.mkdir()
        try:
            blob = artifact.inline_data
            meta = artifact
            if blob is not None:
                (staging / _DATA).write_bytes(blob.data)
                meta = artifact.model_copy(
                    update={"inline_data": blob.model_copy(update={"data": b""})}
                )
            (staging / _PART).write_text(meta.model_dump_json(), encoding="utf-8")
            version = (self._versions(directory) or [-1])[-1] + 1
            while True:
                try:
                    # Atomic, and fails when another writer took this number first.
                    os.rename(staging, directory / str(version))
                    return version
                except OSError:
                    if not (directory / str(version)).exists():
                        raise
                    version += 1
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _load(self, directory: Path, version: int | None) -> Part | None:
        if version is None:
            versions = self._versions(directory)
            if not versions:
                return None
            version = versions[-1]
        if version < 0:
            return None
        path = directory / str(version)
        try:
            part = Part.model_validate_json((path / _PART).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if part.inline_data is not None:
            data = (path / _DATA).read_bytes()
            part = part.model_copy(
                update={"inline_data": part.inline_data.model_copy(update={"data": data})}
            )
        return part

    def _keys(self, app_name: str, user_id: str, session_id: str) -> list[str]:
        names: list[str] = []
        for scope in (
            self._scope_dir(app_name, user_id, session_id, ""),
            self._user_dir(app_name, user_id) / "user",
        ):
            try:
                entries = os.listdir(scope)
            except FileNotFoundError:
                continue
            names.extend(decode_segment(e) for e in entries if self._versions(scope / e))
        return sorted(names)

    # -- the contract -----------------------------------------------------------------------

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        directory = self._artifact_dir(app_name, user_id, session_id, filename)
        return await asyncio.to_thread(self._save, directory, artifact)

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        directory = self._artifact_dir(app_name, user_id, session_id, filename)
        return await asyncio.to_thread(self._load, directory, version)

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        return await asyncio.to_thread(self._keys, app_name, user_id, session_id)

    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        directory = self._artifact_dir(app_name, user_id, session_id, filename)
        await asyncio.to_thread(shutil.rmtree, directory, True)

    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        directory = self._artifact_dir(app_name, user_id, session_id, filename)
        return await asyncio.to_thread(self._versions, directory)
