"""SPEC W5: a run claims its session in a store that several processes share (PostgreSQL).

Two `SqlSessionService` instances on one database stand for two replicas. A claim is held by
one owner until it is released or lapses; a store no other process writes to grants every
claim (the server's in-process check covers it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rondo.sessions.memory import InMemorySessionService
from rondo.sessions.sql import SqlSessionService
from tests._stores import Backend, postgres_backend, postgres_url

__all__ = ["postgres_backend", "postgres_url"]

IDS = {"app_name": "app", "user_id": "u", "session_id": "s"}


@pytest.mark.postgres
async def test_w5_one_owner_at_a_time_across_two_store_instances(
    postgres_backend: Backend,
) -> None:
    one, two = postgres_backend.make(), postgres_backend.make()
    assert one.shared
    assert two.shared
    assert await one.claim_run(**IDS, owner="a", ttl=30)
    assert not await two.claim_run(**IDS, owner="b", ttl=30)  # held by a, on the other instance
    assert await one.claim_run(**IDS, owner="a", ttl=30)  # a again: still a's
    assert await two.claim_run(**{**IDS, "session_id": "other"}, owner="b", ttl=30)
    assert await one.renew_run(**IDS, owner="a", ttl=30)
    await two.release_run(**IDS, owner="b")  # not b's to free: nothing happens
    assert not await two.claim_run(**IDS, owner="b", ttl=30)
    await one.release_run(**IDS, owner="a")
    assert await two.claim_run(**IDS, owner="b", ttl=30)
    assert not await one.renew_run(**IDS, owner="a", ttl=30)  # a's claim is gone


@pytest.mark.postgres
async def test_w5_a_lapsed_claim_is_taken_by_the_next_run(postgres_backend: Backend) -> None:
    one, two = postgres_backend.make(), postgres_backend.make()
    # ttl=0: lapsed as soon as it is written — a replica that died without releasing it.
    assert await one.claim_run(**IDS, owner="dead", ttl=0)
    assert await two.claim_run(**IDS, owner="b", ttl=30)
    assert not await one.renew_run(**IDS, owner="dead", ttl=30)  # the dead owner cannot renew
    assert not await one.claim_run(**IDS, owner="c", ttl=30)


async def test_w5_a_store_of_one_process_grants_every_claim(tmp_path: Path) -> None:
    for store in (InMemorySessionService(), SqlSessionService(tmp_path / "s.db")):
        assert not store.shared
        assert await store.claim_run(**IDS, owner="a", ttl=30)
        assert await store.claim_run(**IDS, owner="b", ttl=30)
        assert await store.renew_run(**IDS, owner="a", ttl=30)
        await store.release_run(**IDS, owner="a")
        await store.close()
