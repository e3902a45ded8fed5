"""Cassettes: record a model's exchanges once, replay them offline forever (SPEC O4).

    model = record(OpenAIModel("gpt-4o-mini"), "weather.jsonl")   # a real run, written as it goes
    model = replay("weather.jsonl")                               # later: offline, deterministic

A cassette is JSON lines: a header, then one line per model call, written and flushed as the
call completes (an interrupted run keeps the calls it finished). Each line holds the request
as compared on replay and every response the model yielded — streamed chunks included — or
the error it raised.

What a replay compares, in this order: the model name, the system instruction, the tool
declarations (by name: description and parameters), the generation config (temperature,
limits, tool choice, response schema and MIME type, thinking settings, stop sequences, seed,
provider `extra` with secrets redacted), then the contents, part by part. What it does not:
function-call ids (renumbered in order of appearance, because the loop or the provider makes
new ones each run), `labels` (billing metadata), the streaming flag (a streamed recording
replays to a non-streaming call as its final aggregate), and the local tool table. Inline data
in requests is kept as a SHA-256 digest and size. `replay(..., ignore={"instruction"})`
leaves whole fields out of the comparison.

A live model's connections are recorded too, frame by frame both ways, and replayed with the
same frames (`rondo.testing.live_cassette`): `record`/`replay` and `rondo run --record/--replay`
take live models as they take the others.

Cassettes hold no credentials: nothing of the model object but its name and capabilities is
written, keys in `extra` that look like credentials (key, token, secret, password, auth,
cookie, header...) are replaced by "<redacted>", and so is any value of such an environment
variable wherever it appears in a line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import AsyncGenerator, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import rondo.errors
from rondo.errors import ModelError, RondoError
from rondo.models.base import (
    Model,
    ModelCapabilities,
    ModelRequest,
    ModelResponse,
    model_capabilities,
)
from rondo.models.live import LiveResponse, LostReason, is_live_model
from rondo.types import Content

__all__ = [
    "CASSETTE_VERSION",
    "CassetteError",
    "CassetteMismatchError",
    "CassettePlayer",
    "CassetteRecorder",
    "RecordingModel",
    "ReplayModel",
    "record",
    "replay",
    "request_record",
]

CASSETTE_VERSION = 1
REDACTED = "<redacted>"
Compared = Literal["model", "instruction", "tools", "config", "contents"]
FIELDS: tuple[Compared, ...] = ("model", "instruction", "tools", "config", "contents")
# A live connection is also compared on how it is opened (`LiveConnectConfig`).
_LIVE_FIELD = "live"

_SECRET_NAME = re.compile(
    r"key|token|secret|passw|auth|cookie|credential|header|signature", re.IGNORECASE
)
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
_MIN_SECRET = 8
_SHOWN = 80


class CassetteError(RondoError):
    """A cassette that cannot be read, written or used."""


class CassetteMismatchError(CassetteError):
    """A replayed run asked the model something the recording does not hold."""


# -- what is written ---------------------------------------------------------------------------


class RecordedError(BaseModel):
    """The exception a recorded model call raised (with a `ModelError`'s details)."""

    model_config = ConfigDict(extra="forbid")

    type: str
    message: str
    status_code: int | None = None
    retryable: bool | None = None
    provider: str | None = None
    model: str | None = None

    @classmethod
    def of(cls, exc: Exception) -> RecordedError:
        if isinstance(exc, ModelError):
            return cls(
                type=type(exc).__name__,
                message=str(exc),
                status_code=exc.status_code,
                retryable=exc.retryable,
                provider=exc.provider,
                model=exc.model,
            )
        return cls(type=type(exc).__name__, message=str(exc))


class LiveFrame(BaseModel):
    """One frame of a live connection, either way: what was sent (as compared on replay),
    what was received, or how the connection failed (`lost`: a recoverable case)."""

    model_config = ConfigDict(extra="forbid")

    sent: dict[str, Any] | None = None
    received: LiveResponse | None = None
    error: RecordedError | None = None
    lost: LostReason | None = None


class LiveCall(BaseModel):
    """A live connection (SPEC L1): how it was opened and its frames, in order."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] = Field(default_factory=dict[str, Any])
    frames: list[LiveFrame] = Field(default_factory=list[LiveFrame])


class Exchange(BaseModel):
    """One model call: the request as compared, the responses as yielded, or the error.
    For a live model, one connection: the request it was opened with and its frames (`live`).

    A call is written when its final response arrives, before the loop acts on it; should the
    model yield more after that, they follow in a `continued` line of the same `exchange`
    (a live connection is written at each end of a turn, and when it closes or fails).
    """

    model_config = ConfigDict(extra="forbid")

    exchange: int
    model: str
    capabilities: dict[str, bool] = Field(default_factory=dict[str, bool])
    stream: bool = False
    request: dict[str, Any] = Field(default_factory=dict[str, Any])
    responses: list[ModelResponse] = Field(default_factory=list[ModelResponse])
    live: LiveCall | None = None
    error: RecordedError | None = None
    # The consumer stopped the call before the model's final response (a cancelled run).
    interrupted: bool = False
    continued: bool = False


def _redact(value: Any) -> Any:
    if isinstance(value, Mapping):
        items = cast(Mapping[str, Any], value).items()
        return {k: REDACTED if _SECRET_NAME.search(str(k)) else _redact(v) for k, v in items}
    if isinstance(value, list | tuple):
        return [_redact(v) for v in cast(Sequence[Any], value)]
    return value


def _secret_values() -> list[str]:
    return [
        json.dumps(value, ensure_ascii=False)[1:-1]
        for name, value in os.environ.items()
        if _SECRET_ENV.search(name) and len(value) >= _MIN_SECRET
    ]


def _scrub(line: str) -> str:
    for secret in _secret_values():
        line = line.replace(secret, REDACTED)
    return line


def _blob_digest(blob: Mapping[str, Any]) -> dict[str, Any]:
    data = str(blob.get("data", ""))
    return {
        "mime_type": blob.get("mime_type"),
        "sha256": hashlib.sha256(data.encode()).hexdigest(),
        "base64_size": len(data),
    }


class _CallIds:
    """Renumbers function-call ids in order of appearance, keeping calls paired with results."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, holder: dict[str, Any]) -> None:
        original = holder.get("id")
        if isinstance(original, str):
            holder["id"] = self.seen.setdefault(original, f"call#{len(self.seen) + 1}")


def content_record(content: Content, ids: _CallIds) -> dict[str, Any]:
    """A content as compared: call ids renumbered by `ids`, inline data as its digest."""
    dumped = {
        "role": content.role,
        **content.model_dump(mode="json", exclude_defaults=True, exclude={"role"}),
    }
    for part in cast(list[dict[str, Any]], dumped.get("parts", [])):
        for key in ("function_call", "function_response"):
            if key in part:
                ids(part[key])
        if "inline_data" in part:
            part["inline_data"] = _blob_digest(part["inline_data"])
    return dumped


def _contents(request: ModelRequest) -> list[dict[str, Any]]:
    ids = _CallIds()
    return [content_record(content, ids) for content in request.contents]


def request_record(request: ModelRequest) -> dict[str, Any]:
    """The request as a cassette stores and compares it (see the module docstring)."""
    config = request.config
    settings = config.model_dump(
        mode="json",
        # The cache hints say how to send a request, not what it asks (the key is per session).
        exclude={
            "system_instruction",
            "tools",
            "labels",
            "extra",
            "prompt_cache",
            "prompt_cache_key",
        },
        exclude_none=True,
    )
    if config.extra:
        settings["extra"] = _redact(config.extra)
    return {
        "model": request.model,
        "instruction": config.system_instruction,
        "tools": [t.model_dump(mode="json") for t in config.tools],
        "config": settings,
        "contents": _contents(request),
    }


class CassetteRecorder:
    """Appends the exchanges of one or more models to one cassette file.

    The file is started afresh unless `append` is set (then new exchanges follow the old).
    """

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = Path(path)
        self.count = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if append and self.path.is_file() and self.path.stat().st_size:
                self.count = len(_read(self.path))
            else:
                self.path.write_text(json.dumps({"rondo_cassette": CASSETTE_VERSION}) + "\n")
        except OSError as exc:
            raise CassetteError(f"cannot write the cassette {self.path}: {exc}") from exc

    def wrap(self, model: Model) -> RecordingModel:
        """`model`, with every call it answers written to this cassette (every frame of
        every connection, for a live model)."""
        if is_live_model(model):
            from rondo.testing.live_cassette import RecordingLiveModel

            return RecordingLiveModel(model, self)
        return RecordingModel(model, self)

    def write(self, exchange: Exchange) -> None:
        line = _scrub(exchange.model_dump_json(exclude_defaults=True))
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()


class RecordingModel:
    """A model that answers like the one it wraps and writes each exchange to a cassette."""

    def __init__(self, model: Model, recorder: CassetteRecorder) -> None:
        self.model = model
        self.recorder = recorder
        self.name = model.name
        self.capabilities = model_capabilities(model)

    def __repr__(self) -> str:
        return f"RecordingModel({self.model!r}, {str(self.recorder.path)!r})"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncGenerator[ModelResponse, None]:
        call = _Call(self, request_record(request), stream)
        responses = self.model.generate(request, stream=stream)
        try:
            async for response in responses:
                # A copy before the loop sees it: the loop fills in call ids in place.
                call.add(response.model_copy(deep=True))
                yield response
            call.finished = True
        except Exception as exc:
            call.error = RecordedError.of(exc)
            raise
        finally:
            aclose = getattr(responses, "aclose", None)
            try:
                if aclose is not None:
                    await aclose()
            finally:
                call.close()


class _Call:
    """One recorded call: written when the final response arrives, and again if more follows."""

    def __init__(self, model: RecordingModel, asked: dict[str, Any], stream: bool) -> None:
        self.model = model
        self.asked = asked
        self.stream = stream
        self.index: int | None = None  # the exchange number, once written
        self.pending: list[ModelResponse] = []
        self.error: RecordedError | None = None
        self.finished = False

    def add(self, response: ModelResponse) -> None:
        self.pending.append(response)
        if not response.partial:
            self.flush()

    def close(self) -> None:
        # The loop stops reading once it has the final response; that is no interruption.
        interrupted = not self.finished and self.error is None and bool(self.pending)
        if self.index is None or self.pending or self.error is not None:
            self.flush(interrupted=interrupted or (self.index is None and not self.finished))

    def flush(self, *, interrupted: bool = False) -> None:
        recorder = self.model.recorder
        continued = self.index is not None
        if self.index is None:
            self.index = recorder.count
            recorder.count += 1
        recorder.write(
            Exchange(
                exchange=self.index,
                model=self.model.name,
                capabilities=_capabilities(self.model.capabilities),
                stream=self.stream,
                request={} if continued else self.asked,
                responses=self.pending,
                error=self.error,
                interrupted=interrupted and self.error is None,
                continued=continued,
            )
        )
        self.pending = []


def _capabilities(caps: ModelCapabilities) -> dict[str, bool]:
    return {
        "response_schema_with_tools": caps.response_schema_with_tools,
        "response_schema": caps.response_schema,
        "streaming": caps.streaming,
    }


def record(model: Model, path: str | Path, *, append: bool = False) -> RecordingModel:
    """Wrap `model` so that every exchange is written to the cassette at `path` as it ends."""
    return CassetteRecorder(path, append=append).wrap(model)


# -- reading and replaying -----------------------------------------------------------------------


def _read(path: Path) -> list[Exchange]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise CassetteError(f"no such cassette: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"cannot read the cassette {path}: {exc}") from None
    if not lines or _header(lines[0]) != CASSETTE_VERSION:
        raise CassetteError(
            f"{path} is not a rondo cassette (version {CASSETTE_VERSION}): its first line "
            f'must be {{"rondo_cassette": {CASSETTE_VERSION}}}'
        )
    exchanges: dict[int, Exchange] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            exchange = Exchange.model_validate_json(line)
        except ValidationError as exc:
            raise CassetteError(f"{path} line {number} is not a cassette exchange: {exc}") from None
        first = exchanges.get(exchange.exchange)
        if first is None:
            exchanges[exchange.exchange] = exchange
        else:  # more responses of a call already written
            first.responses.extend(exchange.responses)
            if first.live is not None and exchange.live is not None:
                first.live.frames.extend(exchange.live.frames)
            first.error = exchange.error or first.error
            first.interrupted = exchange.interrupted
    return list(exchanges.values())


def _header(line: str) -> Any:
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError:
        return None
    return cast(dict[str, Any], data).get("rondo_cassette") if isinstance(data, dict) else None


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _text_difference(path: str, recorded: str, got: str) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, got, strict=False)) if a != b),
        min(len(recorded), len(got)),
    )
    start = max(0, at - 20)
    lead = "…" if start else ""
    return (
        f"{path} (from character {at}): recorded {_show(lead + recorded[start:])}, "
        f"got {_show(lead + got[start:])}"
    )


def _difference(path: str, recorded: Any, got: Any) -> str | None:
    """Where `got` first differs from `recorded`, and how; None when they are equal."""
    if isinstance(recorded, dict) and isinstance(got, dict):
        a, b = cast(dict[str, Any], recorded), cast(dict[str, Any], got)
        for key in [*a, *(k for k in b if k not in a)]:
            if key not in b:
                return f"{path}.{key}: recorded {_show(a[key])}, got nothing"
            if key not in a:
                return f"{path}.{key}: not recorded, got {_show(b[key])}"
            found = _difference(f"{path}.{key}", a[key], b[key])
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(got, list):
        a_list, b_list = cast(list[Any], recorded), cast(list[Any], got)
        for index, (x, y) in enumerate(zip(a_list, b_list, strict=False)):
            found = _difference(f"{path}[{index}]", x, y)
            if found:
                return found
        if len(a_list) != len(b_list):
            return _length_difference(path, a_list, b_list)
        return None
    if recorded == got and type(cast(object, recorded)) is type(cast(object, got)):
        return None
    if isinstance(recorded, str) and isinstance(got, str):
        return _text_difference(path, recorded, got)
    return f"{path}: recorded {_show(recorded)}, got {_show(got)}"


def _length_difference(path: str, recorded: list[Any], got: list[Any]) -> str:
    common = min(len(recorded), len(got))
    counts = f"{path}: {len(got)} items, recorded {len(recorded)}"
    if len(got) > len(recorded):
        return f"{counts}; new {path}[{common}]: {_show(got[common])}"
    return f"{counts}; missing {path}[{common}]: {_show(recorded[common])}"


def _tools_difference(recorded: list[Any], got: list[Any]) -> str | None:
    a = {str(t.get("name")): t for t in cast(list[dict[str, Any]], recorded)}
    b = {str(t.get("name")): t for t in cast(list[dict[str, Any]], got)}
    for name in a:
        if name not in b:
            return f"tools: the recorded tool {name!r} is not declared"
    for name in b:
        if name not in a:
            return f"tools: {name!r} is declared but was not recorded"
    for name, declaration in a.items():
        found = _difference(f"tools[{name!r}]", declaration, b[name])
        if found:
            return found
    return None


def request_difference(
    recorded: Mapping[str, Any], got: Mapping[str, Any], ignore: Collection[str] = ()
) -> str | None:
    """The first difference between two request records, in the order the module doc gives."""
    for field in FIELDS:
        if field in ignore:
            continue
        a, b = recorded.get(field), got.get(field)
        if field == "tools":
            found = _tools_difference(list(a or []), list(b or []))
        else:
            found = _difference(field, a, b)
        if found:
            return found
    if _LIVE_FIELD in recorded or _LIVE_FIELD in got:
        return _difference(_LIVE_FIELD, recorded.get(_LIVE_FIELD), got.get(_LIVE_FIELD))
    return None


def _raise_recorded(error: RecordedError) -> None:
    cls: Any = getattr(rondo.errors, error.type, None)
    known = error.type in rondo.errors.__all__ and isinstance(cls, type)
    if known and issubclass(cls, ModelError):
        raise cls(
            error.message,
            status_code=error.status_code,
            retryable=error.retryable,
            provider=error.provider,
            model=error.model,
        )
    if known and issubclass(cls, RondoError):
        raise cls(error.message)
    raise ModelError(f"(replayed) {error.type}: {error.message}")


class CassettePlayer:
    """Answers model calls from a cassette; shared by the `ReplayModel`s of its models.

    Calls are matched in recorded order; a call that matches a later unused exchange exactly
    takes that one instead (concurrent agents may call in a different order). Otherwise the
    call raises `CassetteMismatchError` naming the first difference from the next exchange.
    """

    def __init__(self, path: str | Path, *, ignore: Collection[str] = ()) -> None:
        unknown = set(ignore) - set(FIELDS)
        if unknown:
            raise CassetteError(
                f"cannot ignore {', '.join(sorted(unknown))}: the fields are {', '.join(FIELDS)}"
            )
        self.path = Path(path)
        self.ignore = frozenset(ignore)
        self.exchanges = _read(self.path)
        self.used = [False] * len(self.exchanges)
        self.calls = 0
        # Live connections that closed with recorded frames never sent (see `check_finished`).
        self.live_leftovers: list[str] = []

    @property
    def model_names(self) -> list[str]:
        return list(dict.fromkeys(e.model for e in self.exchanges))

    @property
    def remaining(self) -> int:
        return self.used.count(False)

    def model(self, name: str | None = None) -> ReplayModel:
        """The replay of the model called `name` (default: the cassette's only model)."""
        names = self.model_names
        if name is None:
            if len(names) > 1:
                raise CassetteError(
                    f"{self.path} holds several models ({', '.join(names)}): name one"
                )
            name = names[0] if names else "replay"
        elif name not in names:
            if len(names) != 1:
                raise CassetteError(
                    f"{self.path} holds no exchange of model {name!r} "
                    f"(it holds: {', '.join(names) or 'none'})"
                )
            name = names[0]  # one model recorded: it answers whoever asks
        first = next((e for e in self.exchanges if e.model == name), None)
        if first is not None and first.live is not None:
            from rondo.testing.live_cassette import ReplayLiveModel

            return ReplayLiveModel(self, name, ModelCapabilities())
        caps = (
            ModelCapabilities(**dict[str, Any](first.capabilities))
            if first
            else ModelCapabilities()
        )
        return ReplayModel(self, name, caps)

    def answer(self, request: ModelRequest, *, live: dict[str, Any] | None = None) -> Exchange:
        """The recorded exchange for this call (a live connection: `live` is how it is
        opened), marked used; `CassetteMismatchError` if none."""
        self.calls += 1
        asked = json.loads(json.dumps(request_record(request)))
        if live is not None:
            asked["live"] = live
        unused = [
            i
            for i, used in enumerate(self.used)
            if not used and (self.exchanges[i].live is not None) == (live is not None)
        ]
        if not unused:
            raise CassetteMismatchError(
                f"{self.path}: model call {self.calls} runs past the cassette, which holds "
                f"{len(self.exchanges)} exchange{'' if len(self.exchanges) == 1 else 's'}"
            )
        for index in unused:
            if request_difference(self._asked(index), asked, self.ignore) is None:
                self.used[index] = True
                return self.exchanges[index]
        expected = unused[0]
        found = request_difference(self._asked(expected), asked, self.ignore)
        raise CassetteMismatchError(
            f"{self.path}: model call {self.calls} differs from exchange {expected + 1} of "
            f"{len(self.exchanges)} at {found}"
        )

    def _asked(self, index: int) -> dict[str, Any]:
        exchange = self.exchanges[index]
        if exchange.live is None:
            return exchange.request
        return {**exchange.request, "live": exchange.live.config}

    def check_finished(self) -> None:
        """Raise `CassetteMismatchError` if the run made fewer calls than were recorded (or
        sent fewer frames on a live connection)."""
        for problem in self.live_leftovers:
            raise CassetteMismatchError(f"{self.path}: {problem}")
        if self.remaining:
            raise CassetteMismatchError(
                f"{self.path}: the run made {self.calls} model call"
                f"{'' if self.calls == 1 else 's'} but the cassette holds "
                f"{len(self.exchanges)}; {self.remaining} were never asked for"
            )


class ReplayModel:
    """A model that answers from a cassette, offline: no SDK, no key, no network."""

    def __init__(self, player: CassettePlayer, name: str, capabilities: ModelCapabilities) -> None:
        self.player = player
        self.name = name
        self.capabilities = capabilities

    def __repr__(self) -> str:
        return f"ReplayModel({self.name!r}, {str(self.player.path)!r})"

    def check_finished(self) -> None:
        self.player.check_finished()

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncGenerator[ModelResponse, None]:
        exchange = self.player.answer(request)
        for response in _replayed(
            exchange.responses, recorded_stream=exchange.stream, stream=stream
        ):
            yield response
        if exchange.error is not None:
            _raise_recorded(exchange.error)


def _replayed(
    responses: Iterable[ModelResponse], *, recorded_stream: bool, stream: bool
) -> list[ModelResponse]:
    # Fresh copies on every replay: the loop assigns call ids in place.
    copies = [r.model_copy(deep=True) for r in responses]
    if recorded_stream and not stream:
        return [r for r in copies if not r.partial]
    return copies


def replay(
    path: str | Path, *, model: str | None = None, ignore: Collection[str] = ()
) -> ReplayModel:
    """A model answering from the cassette at `path` (its only model, or the one named)."""
    return CassettePlayer(path, ignore=ignore).model(model)
