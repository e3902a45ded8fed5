"""Issue 21.2 and 21.7 in the store: what replicas on one PostgreSQL share about runs.

Two `SqlSessionService` instances on one database stand for two replicas. The lifecycle
frames one keeps, the other reads back in order after any id (and they go with their
session); the claim of a run whose replica died is taken over by exactly one other replica,
and only a run's claim that asked for it; a store of one process shares neither.
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
KEY = ("app", "u", "s")


@pytest.mark.postgres
async def test_21_2_frames_kept_by_one_replica_read_back_by_another(
    postgres_backend: Backend,
) -> None:
    one, two = postgres_backend.make(), postgres_backend.make()
    await one.create_session(**IDS)
    kept, read = one.run_frames, two.run_frames
    assert kept is not None
    assert read is not None
    run = (*KEY, "run-1")
    assert await read.format(run) is None
    await kept.keep(run, "lifecycle", [(1, 0, "a"), (1, 1, "b"), (2, 0, "c")])
    await kept.keep(run, "lifecycle", [(2, 0, "c"), (3, 2, "d")])  # kept twice: once
    assert await read.after(run, (0, -1)) == [(1, 0, "a"), (1, 1, "b"), (2, 0, "c"), (3, 2, "d")]
    assert await read.after(run, (1, 1)) == [(2, 0, "c"), (3, 2, "d")]
    assert await read.after(run, (3, 2)) == []
    assert await read.format(run) == "lifecycle"
    assert await read.last(run) == (3, 2)
    await kept.keep((*KEY, "run-2"), "adk", [(1, 0, "x")])
    assert await read.of_session(KEY) == {
        "run-1": ("lifecycle", (3, 2)),
        "run-2": ("adk", (1, 0)),
    }
    assert await read.prune() == 0  # all younger than a day
    await two.delete_session(**IDS)  # the frames go with their session
    assert await read.of_session(KEY) == {}
    await kept.keep(run, "lifecycle", [(1, 0, "a")])
    assert await read.prune(keep=0) == 1
    # A process that never used the table deletes a session: the next prune takes its frames.
    await one.create_session(**IDS)
    await kept.keep(run, "lifecycle", [(1, 0, "a")])
    await postgres_backend.make().delete_session(**IDS)
    assert await read.of_session(KEY) == {"run-1": ("lifecycle", (1, 0))}
    assert await read.prune() == 1
    assert await read.of_session(KEY) == {}


@pytest.mark.postgres
async def test_21_7_a_dead_replicas_run_claim_is_taken_over_once(
    postgres_backend: Backend,
) -> None:
    one, two = postgres_backend.make(), postgres_backend.make()
    await one.create_session(**IDS)
    await one.create_session(**{**IDS, "session_id": "r"})
    await one.create_session(**{**IDS, "session_id": "x"})
    version = (await one.get_session(**IDS)).version  # type: ignore[union-attr]
    # ttl=0: lapsed at once, as the claims of a replica that died.
    assert await one.claim_run(**IDS, owner="dead", ttl=0, resume=True) == "claimed"
    assert await one.claim_run(**{**IDS, "session_id": "r"}, owner="d2", ttl=0) == "claimed"
    assert await one.claim_run(**{**IDS, "session_id": "x"}, owner="d3", ttl=30, resume=True)
    # While it lapsed less than a lease ago, the run reads as about to go on.
    assert not await two.run_claimed(**IDS)
    assert await two.run_claimed(**IDS, lapsed_within=30)
    assert not await two.run_claimed(**{**IDS, "session_id": "r"}, lapsed_within=30)

    taken = await asyncio.gather(
        one.take_lapsed_run(owner="a", ttl=30, app_names=["app"]),
        two.take_lapsed_run(owner="b", ttl=30, app_names=["app"]),
    )
    assert [t for t in taken if t is not None] == [(KEY, version)]  # one replica, only `s`
    assert await two.run_claimed(**IDS)  # held again, by the one that took it
    assert await one.claim_run(**IDS, owner="c", ttl=30) == "busy"
    for replica in (one, two):  # nothing else to take: `r` was not a run to resume
        assert await replica.take_lapsed_run(owner="e", ttl=30, app_names=["app"]) is None
    await one.claim_run(**{**IDS, "session_id": "r"}, owner="f", ttl=0, resume=True)
    assert await two.take_lapsed_run(owner="g", ttl=30, app_names=["other"]) is None


async def test_21_a_store_of_one_process_shares_no_frames_nor_claims(tmp_path: Path) -> None:
    for store in (InMemorySessionService(), SqlSessionService(tmp_path / "s.db")):
        assert store.run_frames is None
        assert await store.take_lapsed_run(owner="a", ttl=30, app_names=["app"]) is None
        assert not await store.run_claimed(**IDS, lapsed_within=30)
