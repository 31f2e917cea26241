"""Phrases the terminal, the report and doctor share: a byte count, a list of unmanaged
clusters."""

from __future__ import annotations

from collections.abc import Sequence


def size(count: int) -> str:
    """A byte count for people: 1.2 TiB, 340.0 MiB, 0 B."""
    if count < 1024:
        return f"{count} B"
    value = count / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def unmanaged_text(names: Sequence[str], listed: int = 10) -> str:
    """ "3 unmanaged (no policy matches, never changed): a, b, c", the first ``listed``
    names and how many more."""
    more = f" and {len(names) - listed} more" if len(names) > listed else ""
    return f"{len(names)} unmanaged (no policy matches, never changed): " + (
        ", ".join(names[:listed]) + more
    )
