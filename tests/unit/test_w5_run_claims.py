"""SPEC W5: a run claims its session in a store that several processes share (PostgreSQL).

Two `SqlSessionService` instances on one database stand for two replicas. A claim is held by
one owner until it is released or lapses, and only on a session that exists; a store no other
process writes to grants every claim (the server's in-process check covers it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rondo.sessions.base import BaseSessionService
from rondo.sessions.memory import InMemorySessionService
from rondo.sessions.sql import SqlSessionService
from tests._stores import Backend, postgres_backend, postgres_url

__all__ = ["postgres_backend", "postgres_url"]

IDS = {"app_name": "app", "user_id": "u", "session_id": "s"}


async def _two_replicas(backend: Backend) -> tuple[BaseSessionService, BaseSessionService]:
    one, two = backend.make(), backend.make()
    for session_id in ("s", "other"):
        await one.create_session(app_name="app", user_id="u", session_id=session_id)
    return one, two


@pytest.mark.postgres
async def test_w5_one_owner_at_a_time_across_two_store_instances(
    postgres_backend: Backend,
) -> None:
    one, two = await _two_replicas(postgres_backend)
    assert one.shared
    assert two.shared
    assert await one.claim_run(**IDS, owner="a", ttl=30) == "claimed"
    assert await two.claim_run(**IDS, owner="b", ttl=30) == "busy"  # a's, on the other instance
    assert await one.claim_run(**IDS, owner="a", ttl=30) == "claimed"  # a again: still a's
    other = {**IDS, "session_id": "other"}
    assert await two.claim_run(**other, owner="b", ttl=30) == "claimed"
    assert await one.renew_runs(["a", "nobody"], ttl=30) == 1
    await two.release_run(**IDS, owner="b")  # not b's to free: nothing happens
    assert await two.claim_run(**IDS, owner="b", ttl=30) == "busy"
    await one.release_run(**IDS, owner="a")
    assert await two.claim_run(**IDS, owner="b", ttl=30) == "claimed"
    assert await one.renew_runs(["a"], ttl=30) == 0  # a's claim is gone


@pytest.mark.postgres
async def test_w5_a_session_that_does_not_exist_cannot_be_claimed(
    postgres_backend: Backend,
) -> None:
    one, _ = await _two_replicas(postgres_backend)
    missing = {**IDS, "session_id": "missing"}
    assert await one.claim_run(**missing, owner="a", ttl=30) == "missing"
    assert await one.claim_run(**{**IDS, "user_id": "v"}, owner="a", ttl=30) == "missing"
    await one.delete_session(**IDS)
    assert await one.claim_run(**IDS, owner="a", ttl=30) == "missing"


@pytest.mark.postgres
async def test_w5_a_lapsed_claim_is_taken_by_the_next_run(postgres_backend: Backend) -> None:
    one, two = await _two_replicas(postgres_backend)
    # ttl=0: lapsed as soon as it is written — a replica that died without releasing it.
    assert await one.claim_run(**IDS, owner="dead", ttl=0) == "claimed"
    assert await two.claim_run(**IDS, owner="b", ttl=30) == "claimed"
    assert await one.renew_runs(["dead"], ttl=30) == 0  # the dead owner cannot renew
    assert await one.claim_run(**IDS, owner="c", ttl=30) == "busy"


async def test_w5_a_store_of_one_process_grants_every_claim(tmp_path: Path) -> None:
    for store in (InMemorySessionService(), SqlSessionService(tmp_path / "s.db")):
        assert not store.shared
        assert await store.claim_run(**IDS, owner="a", ttl=30) == "claimed"
        assert await store.claim_run(**IDS, owner="b", ttl=30) == "claimed"
        assert await store.renew_runs(["a"], ttl=30) == 1
        await store.release_run(**IDS, owner="a")
        await store.close()


@pytest.mark.postgres
async def test_w5_a_server_renews_its_claims_until_the_run_ends(
    postgres_backend: Backend,
) -> None:
    pytest.importorskip("fastapi")
    import rondo.server.claims as claims_module
    from rondo.server.errors import NotFoundError, RunInProgressError
    from rondo.server.streams import ActiveRuns

    here, other = await _two_replicas(postgres_backend)
    runs = ActiveRuns()
    claims = claims_module.SessionClaims(here, runs, ttl=1.0)  # renewed every 1/3 s
    with pytest.raises(NotFoundError, match="Session not found: nope"):
        await claims.take("app", "u", "nope")
    assert len(runs) == 0  # the refused claim left nothing held here
    release = await claims.take("app", "u", "s")
    try:
        with pytest.raises(RunInProgressError, match="another run on it has not finished"):
            await claims.take("app", "u", "s")  # refused here, before asking the store
        await asyncio.sleep(1.6)  # past the TTL: only the renewals keep it
        assert await other.claim_run(**IDS, owner="b", ttl=30) == "busy"
    finally:
        await release()
        await release()  # idempotent
        await claims.close()
    assert len(runs) == 0
    assert await other.claim_run(**IDS, owner="b", ttl=30) == "claimed"
