"""What memory stores of an event, and how queries are split into words."""

from __future__ import annotations

import re

from rondo.events import Event

__all__ = ["event_text", "words"]

# Letters and digits: the same token rule as SQLite's unicode61 and PostgreSQL's `simple`
# parser, so the in-memory and SQL searches agree on what a word is.
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The distinct lower-case words of `text`, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


def event_text(event: Event) -> str:
    """The searchable text of an event: its non-thought text ("" when it has none)."""
    if event.partial or event.content is None:
        return ""
    return event.content.text
