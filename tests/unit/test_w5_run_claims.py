"""SPEC W5: a run claims its session in a store that several processes share (PostgreSQL).

Two `SqlSessionService` instances on one database stand for two replicas. A claim is held by
one owner until it is released or lapses; a store no other process writes to grants every
claim (the server's in-process check covers it).
"""

from __future__ import annotations

import asyncio
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
    assert await one.renew_runs(["a", "nobody"], ttl=30) == 1
    await two.release_run(**IDS, owner="b")  # not b's to free: nothing happens
    assert not await two.claim_run(**IDS, owner="b", ttl=30)
    await one.release_run(**IDS, owner="a")
    assert await two.claim_run(**IDS, owner="b", ttl=30)
    assert await one.renew_runs(["a"], ttl=30) == 0  # a's claim is gone


@pytest.mark.postgres
async def test_w5_a_lapsed_claim_is_taken_by_the_next_run(postgres_backend: Backend) -> None:
    one, two = postgres_backend.make(), postgres_backend.make()
    # ttl=0: lapsed as soon as it is written — a replica that died without releasing it.
    assert await one.claim_run(**IDS, owner="dead", ttl=0)
    assert await two.claim_run(**IDS, owner="b", ttl=30)
    assert await one.renew_runs(["dead"], ttl=30) == 0  # the dead owner cannot renew
    assert not await one.claim_run(**IDS, owner="c", ttl=30)


async def test_w5_a_store_of_one_process_grants_every_claim(tmp_path: Path) -> None:
    for store in (InMemorySessionService(), SqlSessionService(tmp_path / "s.db")):
        assert not store.shared
        assert await store.claim_run(**IDS, owner="a", ttl=30)
        assert await store.claim_run(**IDS, owner="b", ttl=30)
        assert await store.renew_runs(["a"], ttl=30) == 1
        await store.release_run(**IDS, owner="a")
        await store.close()


@pytest.mark.postgres
async def test_w5_a_server_renews_its_claims_until_the_run_ends(
    postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastapi")
    import rondo.server.claims as claims_module
    from rondo.server.errors import RunInProgressError
    from rondo.server.streams import ActiveRuns

    monkeypatch.setattr(claims_module, "CLAIM_TTL", 1.0)  # renewed every 1/3 s
    here, other = postgres_backend.make(), postgres_backend.make()
    claims = claims_module.SessionClaims(here, ActiveRuns())
    release = await claims.take("app", "u", "s")
    try:
        with pytest.raises(RunInProgressError, match="another run on it has not finished"):
            await claims.take("app", "u", "s")  # refused here, before asking the store
        await asyncio.sleep(1.6)  # past the TTL: only the renewals keep it
        assert not await other.claim_run(**IDS, owner="b", ttl=30)
    finally:
        await release()
        await release()  # idempotent
        await claims.close()
    assert await other.claim_run(**IDS, owner="b", ttl=30)
