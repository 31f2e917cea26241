"""Which ids a plan can carry: the one rule, shared by discovery, the planner, the plan file's
schema, apply and the client's path building.

An id the service hands us becomes a path segment of a later request (a PATCH hours after
the plan, perhaps through a proxy). Percent-encoding keeps any character inside its
segment, but a few things survive encoding: ``.`` and ``..`` still walk the path, many
servers and proxies decode ``%2F`` and ``%5C`` before routing (or refuse them), and control
characters are refused or mangled along the way and would reach logs and terminals raw.
Everything else (spaces, ``:``, ``@``, ``+``, ``%``, any printable unicode) is carried and
encoded, never refused: an unusual id is still an id.

The rule is written twice, on purpose: ``ID_PATTERN`` (with the length bounds and
``FORBIDDEN_PATTERN``) is what the JSON Schema and pydantic check, ``id_problem`` says in
words what is wrong. Tests hold the two in agreement, and jsonschema with them.
"""

from __future__ import annotations

import functools
import re

MAX_ID_LENGTH = 128
# The characters an id may not hold: the two path separators, C0, DEL and C1. Written with
# \u escapes so the pattern means the same to Python's re, pydantic's Rust regex and an
# ECMA-262 validator reading the shipped schema.
_FORBIDDEN = r"/\\\u0000-\u001f\u007f-\u009f"
# Not "." or ".." without a look-ahead (pydantic's regex engine has none): a first
# character that is not a dot, or a dot and then one that is not, or two dots and anything.
ID_PATTERN = rf"^(?:[^.{_FORBIDDEN}]|\.[^.{_FORBIDDEN}]|\.\.[^{_FORBIDDEN}])[^{_FORBIDDEN}]*$"
# A character an id may hold nowhere. The schema says it too, beside ID_PATTERN: Python's
# re (which the jsonschema package uses) lets "$" match before a final newline, so
# ID_PATTERN alone would let "abc\n" through there, though not in ECMA-262 or pydantic.
FORBIDDEN_PATTERN = f"[{_FORBIDDEN}]"
_CARRIED = re.compile(ID_PATTERN)


@functools.lru_cache(maxsize=1 << 14)
def carries(value: str) -> bool:
    """True when a plan can carry ``value`` as one path segment (fast: a plan asks this of
    every snapshot of the fleet, a forecast of the same snapshots at every step)."""
    return len(value) <= MAX_ID_LENGTH and _CARRIED.fullmatch(value) is not None


def id_problem(value: str) -> str | None:
    """Why a plan cannot carry ``value`` as one path segment, in words; None when it can."""
    if not value:
        return "it is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"it is {len(value)} characters long, more than {MAX_ID_LENGTH}"
    if value in (".", ".."):
        return "it is a dot segment, which servers resolve as a step in the path"
    for char in value:
        if char in "/\\":
            return (
                f"it holds {char!r}, which servers and proxies may decode from its "
                "percent-encoding and take as a path separator, or refuse"
            )
        if _is_control(char):
            return f"it holds the control character U+{ord(char):04X}"
    return None


def _is_control(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F
