"""Issue 25.5: the cheaper pieces of a run's answers are the same as what they replace."""

from __future__ import annotations

import uuid

from starlette.responses import Response

from rondo.server.adk_routes import _json  # pyright: ignore[reportPrivateUsage]
from rondo.sessions.memory import _new_id  # pyright: ignore[reportPrivateUsage]


def test_25_5_a_new_session_id_is_a_uuid4_in_hex() -> None:
    ids = {_new_id() for _ in range(2_000)}
    assert len(ids) == 2_000
    for value in list(ids)[:200]:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_25_5_a_json_answer_has_starlettes_headers() -> None:
    body = b'{"id":"s"}'
    plain = Response(body, media_type="application/json")
    assert _json({"id": "s"}).raw_headers == plain.raw_headers
    tagged = Response(body, media_type="application/json")
    tagged.headers["ETag"] = '"3"'
    answer = _json({"id": "s"}, '"3"')
    assert answer.raw_headers == tagged.raw_headers
    assert answer.body == body
    assert answer.status_code == 200
    assert answer.headers["etag"] == '"3"'
