"""One rule for state values, in every store (SPEC G3): JSON, checked before anything is written.

A state value must come back from every store exactly as it was written, so it must be JSON:

- accepted: `None`, `bool`, `int`, finite `float`, `str`, `list`, and `dict` with `str` keys,
  nested to any depth up to `MAX_DEPTH`. Subclasses of these (a `StrEnum`, an `IntEnum`, an
  `OrderedDict`...) are accepted too: they come back as the base type, equal to what was
  written.
- refused: NaN and ±infinity (not JSON; PostgreSQL's JSONB cannot hold them), `set` and
  `frozenset`, `tuple` (JSON has no tuple: a SQL store would give back a list where the
  in-memory store kept the tuple, and `(1, 2) != [1, 2]`, so one rule for all: use a list),
  `bytes`, dates and times, `Decimal`, pydantic models and every other object; dict keys that
  are not strings; strings with a NUL character or a lone surrogate (PostgreSQL cannot store
  the first, and the second is not UTF-8); nesting deeper than `MAX_DEPTH` (a cycle included).

`temp:` keys follow the same rule although no store keeps them: one rule, whatever the scope.
`check_state_delta` raises `InvalidStateValueError`, whose message names the key path
(`state key 'user:prefs' → 'tags': a set is not JSON; use a list`). Stores call it before
writing anything; `ToolContext` calls it on every state write, so a tool's bad write becomes
that tool's error response.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, NoReturn

from rondo.errors import InvalidStateValueError

__all__ = ["MAX_DEPTH", "InvalidStateValueError", "check_state_delta", "check_state_value"]

MAX_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
_PathItem = str | int


def check_state_delta(delta: Mapping[str, Any], *, what: str = "state key") -> None:
    """Raise `InvalidStateValueError` unless every key is a string and every value JSON.

    `what` names the keys in the message ("state key", "argument"...)."""
    for key, value in delta.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(key, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            _fail(key, [], f"state keys must be strings, not {type(key).__name__}", what)
        if "\x00" in key or (not key.isascii() and _SURROGATE.search(key)):
            _fail(key, [], f"the key {_bad_text(key)}", what)
        # The common case first: a scalar at the top level.
        cls: type[Any] = type(value)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        if cls is str:
            if "\x00" in value or (not value.isascii() and _SURROGATE.search(value)):
                _fail(key, [], f"the string {_bad_text(value)}", what)
        elif cls is int or cls is bool or value is None:
            continue
        elif cls is float:
            if not math.isfinite(value):
                _fail(key, [], _not_finite(value), what)
        else:
            _check(key, value, [], 1, what)


def check_state_value(key: str, value: Any) -> None:
    """`check_state_delta({key: value})`: one state write."""
    check_state_delta({key: value})


def _check(key: Any, value: Any, path: list[_PathItem], depth: int, what: str) -> None:
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, str):
        if "\x00" in value or (not value.isascii() and _SURROGATE.search(value)):
            _fail(key, path, f"the string {_bad_text(value)}", what)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            _fail(key, path, _not_finite(value), what)
        return
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            _fail(key, path, f"nested deeper than {MAX_DEPTH} levels (is it a cycle?)", what)
        if isinstance(value, list):
            for i, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                path.append(i)
                _check(key, item, path, depth + 1, what)
                path.pop()
            return
        for name, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(name, str):
                _fail(key, path, f"the dict key {name!r} is not a string (JSON's keys are)", what)
            if "\x00" in name or (not name.isascii() and _SURROGATE.search(name)):
                _fail(key, path, f"the dict key {name!r} {_bad_text(name)}", what)
            path.append(name)
            _check(key, item, path, depth + 1, what)
            path.pop()
        return
    _fail(key, path, _advice(value), what)


def _fail(key: Any, path: list[_PathItem], problem: str, what: str = "state key") -> NoReturn:
    steps = [f"[{p}]" if isinstance(p, int) else repr(p) for p in path]
    if len(steps) > 6:
        steps = [*steps[:3], "…", *steps[-2:]]
    where = "".join(f" → {step}" for step in steps)
    raise InvalidStateValueError(f"{what} {key!r}{where}: {problem}", key=key, path=tuple(path))


def _not_finite(value: float) -> str:
    shown = "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return f"{shown} is not JSON; use None or a string"


def _bad_text(text: str) -> str:
    if "\x00" in text:
        return "contains a NUL character (\\x00), which PostgreSQL cannot store"
    return "contains a lone surrogate, which is not UTF-8"


def _advice(value: Any) -> str:
    """What is wrong with a value of an unsupported type, and what to store instead."""
    import datetime
    import decimal

    name = type(value).__name__
    if isinstance(value, set | frozenset):
        return f"a {name} is not JSON; use a list"
    if isinstance(value, tuple):
        return "a tuple is not JSON (it would come back as a list); use a list"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"{name} is not JSON; store text (e.g. base64) or save an artifact"
    if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
        hint = "total_seconds()" if isinstance(value, datetime.timedelta) else "isoformat()"
        return f"a {name} is not JSON; store value.{hint}"
    if isinstance(value, decimal.Decimal):
        return "a Decimal is not JSON; use a float, an int or a string"
    if hasattr(value, "model_dump"):
        return f"{_a(name)} is not JSON; store value.model_dump(mode='json')"
    if hasattr(value, "dtype") and hasattr(value, "item"):  # a numpy scalar
        return f"{_a(name)} is not JSON; store value.item()"
    return f"{_a(name)} is not JSON; use a dict, list, str, number, bool or None"


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
