"""The runs of a replica that died, resumed by a surviving one (SPEC D1, W7).

A replica renews the claims of its runs every third of their lease; one that dies (SIGKILL, a
lost machine) stops renewing, and its claims lapse. Every replica looks for lapsed claims of
runs on sessions of its apps as it renews its own (`SessionClaims`), and one of them takes
each over (one statement, `SKIP LOCKED`). It then resumes the session's run as a detached run
of its own, holding the claim it took: no new message, the same run id, no model call or
stored tool result repeated, the call that was in flight sent again under its call id
(`rondo.resume`). Clients follow it as any run — its status reads `running`, its
stream can be rejoined on any replica, it can be cancelled.

It resumes only what the dead replica itself left cut short: a record stored under its claim
(the session moved past the version it claimed at) and an invocation the log shows as
interrupted, or an answer to pending calls stored with nothing after it. A claim with nothing
of that (the replica died before storing anything, or between runs) is freed. Claims that are
not a run's, and the runs that asked to stop with their client (`onDisconnect: "cancel"`: the
client went away with the replica), are never taken over: they are free once they lapse.
"""

from __future__ import annotations

import logging

from rondo.events import Event
from rondo.resume import find_resume_point
from rondo.run_config import RunConfig
from rondo.server.claims import Release
from rondo.server.rejoin import stored_format
from rondo.server.runs import RunHost, RunRequest, launch

__all__ = ["resume_lapsed"]

logger = logging.getLogger("rondo.server")

# Token deltas for whoever rejoins the resumed run: the original request's mode is not known.
_STREAMING = RunConfig(streaming_mode="sse")


def _answer_waiting(events: list[Event]) -> bool:
    """The log ends with an answer to pending calls that no run took up."""
    last = events[-1] if events else None
    if last is None or last.author != "user" or last.content is None:
        return False
    parts = last.content.parts
    return bool(parts) and all(p.function_response is not None for p in parts)


async def resume_lapsed(
    state: RunHost, key: tuple[str, str, str], version: int, release: Release
) -> None:
    """Resume the session's run a dead replica left cut short, holding the claim taken
    over from it (`release` frees it); free the session when there is nothing to resume."""
    app_name, user_id, session_id = key
    try:
        runner = await state.apps.runner(app_name)
        session = await state.sessions.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        if session is None or session.version <= version:
            await release()  # the dead replica stored nothing under its claim
            return
        events = list(session.events)
        point = find_resume_point(events, session.pending, runner.agent)
        if point is None and not _answer_waiting(events):
            await release()
            return
        run_id = point.run_id if point is not None else events[-1].run_id
        fmt = await stored_format(state, key, run_id, wait=False) if run_id else None
        request = RunRequest(
            runner=runner,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            message=None,
            state_delta=None,
            config=_STREAMING,
            release=release,
        )
        # The run owns the claim from here: it frees it when it ends.
        run = await launch(state, request, observe=True, fmt=fmt or "adk")
        logger.info("resumed run %s of session %r (its replica stopped)", run.run_id, session_id)
    except Exception as exc:
        logger.warning("resuming the run of session %r failed: %s", session_id, exc)
        await release()
