"""Artifact names: which scope they belong to, and refusing names that leave their directory."""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote, unquote

from rondo.errors import InvalidArtifactNameError

__all__ = [
    "MAX_SEGMENT_BYTES",
    "USER_SCOPE_PREFIX",
    "check_name",
    "decode_segment",
    "encode_segment",
    "is_user_scoped",
]

USER_SCOPE_PREFIX = "user:"
_DRIVE = re.compile(r"^[A-Za-z]:")
_SURROGATE = re.compile("[\ud800-\udfff]")
# The longest file name most file systems take (ext4, APFS, NTFS: 255 bytes or UTF-16 units).
MAX_SEGMENT_BYTES = 255
# An id whose encoded segment would be longer is stored under its first characters and a hash
# of the whole; `%%` never occurs in percent-encoding, so such a name is never another id's.
_KEPT = 120


def is_user_scoped(filename: str) -> bool:
    """`user:` names are shared by all of a user's sessions (SPEC R5)."""
    return filename.startswith(USER_SCOPE_PREFIX)


def check_name(filename: str) -> str:
    """Return `filename` if it is a safe artifact name, else raise `InvalidArtifactNameError`.

    Names may contain `/` ("reports/q1.pdf") but no empty, `.` or `..` segment, no
    backslash, no NUL, and may not be absolute — whatever the store does with them, no name
    can point outside its own place.
    """
    if not isinstance(filename, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidArtifactNameError(f"artifact name must be a string, got {filename!r}")
    name = filename[len(USER_SCOPE_PREFIX) :] if is_user_scoped(filename) else filename
    problem = None
    if not name:
        problem = "it is empty"
    elif "\x00" in name:
        problem = "it contains a NUL character"
    elif not name.isascii() and _SURROGATE.search(name):
        problem = "it contains a lone surrogate, which is not UTF-8"
    elif "\\" in name:
        problem = "it contains a backslash"
    elif name.startswith("/") or _DRIVE.match(name):
        problem = "it is an absolute path"
    elif any(seg in ("", ".", "..") for seg in name.split("/")):
        problem = "it has an empty, '.' or '..' path segment"
    if problem is not None:
        raise InvalidArtifactNameError(
            f"invalid artifact name {filename!r}: {problem}; artifact names must stay inside "
            "their directory"
        )
    encoded = len(quote(filename, safe=""))
    if encoded > MAX_SEGMENT_BYTES:
        # Every store refuses it alike, so a name that works in memory works on disk too.
        raise InvalidArtifactNameError(
            f"artifact name {filename[:32]!r}… is too long: {encoded} bytes once "
            f"percent-encoded as a file name, at most {MAX_SEGMENT_BYTES}"
        )
    return filename


def encode_segment(value: str) -> str:
    """`value` as one file-name segment that cannot be `.`, `..` or contain a separator."""
    if not value:
        raise InvalidArtifactNameError("an empty app, user, session or artifact name")
    encoded = quote(value, safe="")
    if len(encoded) > MAX_SEGMENT_BYTES:
        # A long non-ASCII id (128 characters of 3-byte UTF-8 are 1,152 encoded) still fits.
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        encoded = f"{encoded[:_KEPT]}%%{digest}"
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def decode_segment(segment: str) -> str:
    return unquote(segment)
