"""Issue 26 item 3 (SPEC W3, W5): a store failure mid-stream ends the stream properly.

PostgreSQL (a private cluster) stops while a run waits between two events: the SSE stream ends
with its error event — not a cut connection — naming no database, host or SQL; once the
database is back the session runs again well before the 30 s a stale claim would block it.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from rondo.server.claims import CLAIM_TTL
from tests._pgcluster import PgCluster, pg_cluster
from tests.server._attack import message
from tests.server._live import serve, sse_events

__all__ = ["pg_cluster"]

APPS = Path(__file__).parent / "attack_apps"

pytestmark = pytest.mark.postgres


def test_w3_attack_postgres_going_away_mid_stream_ends_with_the_error_event(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    from rondo.server import create_app

    gate = tmp_path / "gate"
    app = create_app(APPS, db=pg_cluster.url, loopback_only=True)
    with serve(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert http.post("/apps/gate/users/u/sessions/s").status_code == 200
        body = message("gate", "u", "s", str(gate))
        with http.stream("POST", "/run_sse", json=body) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            first: list[str] = []
            for line in lines:  # up to the call's data line (after its `id:`): the run waits
                if line:
                    first.append(line)
                if line.startswith("data: "):
                    break
            pg_cluster.stop("immediate")
            gate.touch()
            rest = [line for line in lines if line]  # to the end of the stream
        # Each frame: an optional `id:` line (SPEC W7), one `data:` line, a blank line.
        text = "".join(
            f"{line}\n" if line.startswith("id: ") else f"{line}\n\n" for line in [*first, *rest]
        )
        *events, last = sse_events(text)
        assert "functionCall" in events[0]["content"]["parts"][0]
        assert last["error_details"]["error_type"] == "StoreUnavailableError"
        assert "send the request again" in last["error"]
        for leak in ("127.0.0.1", str(pg_cluster.port), "postgres", "SELECT", "INSERT"):
            assert leak not in last["error"], leak
        pg_cluster.start()
        back = time.monotonic()
        status = 0
        while status != 200 and time.monotonic() - back < CLAIM_TTL:
            answer = http.post("/run", json=body)  # the gate is open now: no wait
            status = answer.status_code
            assert status in (200, 409, 503), answer.text
        # The claim the failed run held was released once the store answered, not left to lapse.
        assert status == 200, "the session stayed busy until its claim lapsed"
