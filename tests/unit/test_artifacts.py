"""Artifact services beyond the shared contract (conformance/test_r_sessions.py, R5)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from rondo import InvalidArtifactNameError, RondoError
from rondo.artifacts import FileArtifactService, InMemoryArtifactService
from rondo.types import Blob, Part

WHERE = {"app_name": "app", "user_id": "u", "session_id": "s"}


def test_invalid_name_error_is_a_rondo_value_error() -> None:
    assert issubclass(InvalidArtifactNameError, RondoError)
    assert issubclass(InvalidArtifactNameError, ValueError)


async def test_concurrent_saves_get_distinct_versions(tmp_path: Path) -> None:
    service = FileArtifactService(tmp_path)
    versions = await asyncio.gather(
        *(
            service.save_artifact(**WHERE, filename="f", artifact=Part(text=str(i)))
            for i in range(20)
        )
    )
    assert sorted(versions) == list(range(20))
    texts = {
        (await service.load_artifact(**WHERE, filename="f", version=v)).text  # type: ignore[union-attr]
        for v in versions
    }
    assert texts == {str(i) for i in range(20)}


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


async def test_filesystem_layout_keeps_bytes_raw_and_names_encoded(tmp_path: Path) -> None:
    service = FileArtifactService(tmp_path)
    blob = Part(inline_data=Blob(mime_type="application/pdf", data=b"%PDF-1.7 raw"))
    await service.save_artifact(**WHERE, filename="reports/q1.pdf", artifact=blob)
    await service.save_artifact(**WHERE, filename="user:.hidden", artifact=Part(text="x"))
    await service.save_artifact(**WHERE, filename=".dotfile", artifact=Part(text="y"))
    version_dir = tmp_path / "app" / "u" / "sessions" / "s" / "reports%2Fq1.pdf" / "0"
    assert await asyncio.to_thread((version_dir / "data").read_bytes) == b"%PDF-1.7 raw"
    tree = await asyncio.to_thread(_tree, tmp_path)
    assert "app/u/user/user%3A.hidden/0/part.json" in tree
    assert "app/u/sessions/s/%2Edotfile/0/part.json" in tree
    keys = await service.list_artifact_keys(**WHERE)
    assert keys == [".dotfile", "reports/q1.pdf", "user:.hidden"]
    assert await service.load_artifact(**WHERE, filename="reports/q1.pdf") == blob


async def test_an_unfinished_write_is_invisible(tmp_path: Path) -> None:
    service = FileArtifactService(tmp_path)
    await service.save_artifact(**WHERE, filename="f", artifact=Part(text="done"))
    staging = tmp_path / "app" / "u" / "sessions" / "s" / "f" / ".tmp-crashed"
    await asyncio.to_thread(os.makedirs, staging)
    assert await service.list_versions(**WHERE, filename="f") == [0]
    assert await service.load_artifact(**WHERE, filename="f") == Part(text="done")
    assert await service.save_artifact(**WHERE, filename="f", artifact=Part(text="next")) == 1


async def test_g1_a_saved_artifact_cannot_be_changed_in_place(tmp_path: Path) -> None:
    service = InMemoryArtifactService()
    part = Part(text="original")
    await service.save_artifact(**WHERE, filename="f", artifact=part)
    with pytest.raises(ValidationError, match="frozen"):
        part.text = "changed by the caller"
    loaded = await service.load_artifact(**WHERE, filename="f")
    assert loaded == Part(text="original")


@pytest.mark.parametrize("bad", ["", "x/../..", "a\\b"])
async def test_empty_ids_and_bad_names_are_refused_by_the_filesystem(
    tmp_path: Path, bad: str
) -> None:
    service = FileArtifactService(tmp_path)
    with pytest.raises(InvalidArtifactNameError):
        await service.save_artifact(
            app_name="app", user_id="u", session_id="s", filename=bad, artifact=Part(text="x")
        )
    with pytest.raises(InvalidArtifactNameError):
        await service.save_artifact(
            app_name="", user_id="u", session_id="s", filename="ok", artifact=Part(text="x")
        )


@pytest.mark.parametrize("make", ["memory", "file"])
async def test_w3_a_name_too_long_for_a_file_name_is_refused_by_every_store(
    make: str, tmp_path: Path
) -> None:
    # Issue 26: one rule in every store, so a name that works in memory works on disk too.
    service = InMemoryArtifactService() if make == "memory" else FileArtifactService(tmp_path)
    with pytest.raises(InvalidArtifactNameError, match="too long"):
        await service.save_artifact(**WHERE, filename="报" * 90, artifact=Part(text="x"))
    longest = "n" * 255  # 255 bytes encoded: the longest file name
    assert await service.save_artifact(**WHERE, filename=longest, artifact=Part(text="x")) == 0
    assert await service.list_artifact_keys(**WHERE) == [longest]


async def test_w3_a_long_non_ascii_user_id_fits_the_file_system(tmp_path: Path) -> None:
    service = FileArtifactService(tmp_path)
    users = ["名" * 128, "名" * 127 + "字"]  # same first characters: distinct directories
    for i, user in enumerate(users):
        where = {**WHERE, "user_id": user}
        await service.save_artifact(**where, filename="user:a", artifact=Part(text=str(i)))
    for i, user in enumerate(users):
        where = {**WHERE, "user_id": user}
        assert await service.load_artifact(**where, filename="user:a") == Part(text=str(i))
    names = [name for _dir, dirs, files in os.walk(tmp_path) for name in dirs + files]
    assert max(len(name.encode()) for name in names) <= 255
