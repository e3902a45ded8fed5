"""A DBOS worker process for test_d2_dbos.py: consumes the rondo invocation queue.

    python _dbos_worker.py SYSTEM_DB_URL SESSIONS_URL EXECUTOR_ID LEDGER_DIR BLOCK

With BLOCK=1 the first call of the first tool step hangs (after printing STOPPED), so the
test can SIGKILL the worker in the middle of a run.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from dbos import DBOS

from rondo.durable.dbos import DbosEngine
from rondo.sessions.sql import SqlSessionService
from tests.integration._d1_crash_child import Ledger, build_runner

APP_VERSION = "rondo-d2-test-1"


async def main(system_url: str, sessions_url: str, executor: str, ledger: str, block: bool) -> None:
    DBOS(
        config={
            "name": "rondo-d2",
            "system_database_url": system_url,
            "application_version": APP_VERSION,
            "executor_id": executor,
            "notification_listener_polling_interval_sec": 0.05,
        }
    )

    def make_runner():
        return build_runner(SqlSessionService(sessions_url), Ledger(Path(ledger)), hang_first=block)

    engine = DbosEngine(make_runner, polling_interval_sec=0.1)
    DBOS.launch()
    await engine.start()
    print("READY", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(a[0], a[1], a[2], a[3], a[4] == "1"))
