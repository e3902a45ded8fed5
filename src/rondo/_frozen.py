"""Read-only lists and maps for the containers inside records (SPEC G1).

pydantic's `frozen=True` refuses `record.field = ...` but leaves a record's lists and dicts
mutable, so `event.content.parts.append(...)` would change stored history in place. Records
hold these subclasses instead: they compare, iterate, serialize and copy like the builtins,
and refuse every change with `FrozenRecordError`. The record types use the classes themselves
as pydantic after-validators: a C-level call per container, no Python frame (a fresh replica
validates 20,000 of them at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from rondo.errors import FrozenRecordError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["ReadOnlyDict", "ReadOnlyList", "empty_list", "empty_map", "replaced"]

T = TypeVar("T")
M = TypeVar("M", bound="BaseModel")


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    """Every changing method of both containers."""
    raise FrozenRecordError(
        "records are immutable (SPEC G1): build a new one with "
        "record.model_copy(update={field: new_value})"
    )


class ReadOnlyList(list[T]):
    """A list that refuses changes."""

    __slots__ = ()

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # pyright: ignore[reportAssignmentType]
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # pyright: ignore[reportAssignmentType]

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy and pickle rebuild it from its items (not by appending to it).
        return (type(self), (list(self),))


class ReadOnlyDict(dict[Any, Any]):
    """A dict that refuses changes."""

    __slots__ = ()

    __setitem__ = __delitem__ = pop = popitem = clear = __ior__ = _refuse  # pyright: ignore[reportAssignmentType]
    update = setdefault = _refuse  # pyright: ignore[reportAssignmentType]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


# The shared empty containers: record fields default to them (nothing to copy per record).
_EMPTY_MAP: dict[Any, Any] = ReadOnlyDict()
_EMPTY_LIST: list[Any] = ReadOnlyList()


def empty_map() -> dict[Any, Any]:
    """The shared empty read-only map (a `default_factory`)."""
    return _EMPTY_MAP


def empty_list() -> list[Any]:
    """The shared empty read-only list (a `default_factory`)."""
    return _EMPTY_LIST


_new = object.__new__
_put = object.__setattr__


def replaced(record: M, /, **update: Any) -> M:
    """`record.model_copy(update=update)` for the frozen record types, in a handful of C
    calls: pydantic's copies the record's dict and sets through `copy.copy` (~17 Python
    calls), a cost the tool loop paid on every call id it added or stripped (issue 25.5).
    Records are immutable, so sharing the unchanged field values is what a shallow copy does
    anyway. Not for models with extra fields."""
    copied = _new(type(record))
    _put(copied, "__dict__", {**record.__dict__, **update})
    _put(copied, "__pydantic_fields_set__", record.__pydantic_fields_set__.union(update))
    _put(copied, "__pydantic_extra__", None)
    _put(copied, "__pydantic_private__", record.__pydantic_private__)
    return copied
