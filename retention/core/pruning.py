"""Which run folders ``reports.keep`` lets go, and why each other one stays: a pure function
of the folders' facts, the time and the setting (retention.prune.folders gathers the facts
and removes the folders).

A folder is removed only when all of these hold: it is older than ``keep`` (by the UTC time
in its name), it is not the newest successful run, and nothing in it can still be undone
(every expiry its journal wrote, or may have written, has passed; a journal that cannot be
read keeps its folder). Every folder gets a verdict with its reason, like restic's forget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from retention.core.policy.duration import RetentionDuration
from retention.core.timestamps import format_timestamp


@dataclass(frozen=True)
class FolderFacts:
    """What pruning needs to know of one run folder."""

    name: str
    made: datetime  # the UTC time in its name
    # A whole plan, not stopped, and a journal (if any) with no failure or PATCH in doubt.
    successful: bool
    # The last moment its journal's destructive changes can be undone: the latest expiry it
    # wrote (or may have written). None: nothing to undo (a plan, a dry run, an undo).
    undo_until: datetime | None = None
    # Why the undo window cannot be told (an unreadable journal line, a change that left a
    # snapshot without an expiry): the folder stays.
    undo_unknown: str | None = None
    size: int = 0  # bytes, its files together
    # What a folder without a plan is, in words (an empty one, a plan a signal stopped);
    # None for the folder of a plan, a run, an apply or an undo.
    what: str | None = None


@dataclass(frozen=True)
class Verdict:
    """A folder, whether pruning removes it, and why."""

    name: str
    remove: bool
    why: str
    size: int = 0
    what: str | None = None  # FolderFacts.what


def prune_verdicts(
    folders: Sequence[FolderFacts], *, now: datetime, keep: RetentionDuration
) -> list[Verdict]:
    """A verdict for each folder, oldest first (the order of their names)."""
    cutoff = keep.before(now)
    successful = [f for f in folders if f.successful]
    newest = max(successful, key=lambda f: (f.made, f.name)).name if successful else None
    out: list[Verdict] = []
    for f in sorted(folders, key=lambda f: (f.made, f.name)):
        if f.name == newest:
            why, remove = "the newest successful run: always kept", False
        elif f.made > cutoff:
            why, remove = f"younger than {keep} (the keep duration)", False
        elif f.undo_unknown is not None:
            why, remove = f"kept: {f.undo_unknown}", False
        elif f.undo_until is not None and f.undo_until > now:
            until = format_timestamp(f.undo_until)
            why, remove = f"its undo window is open until {until}", False
        else:
            left = "nothing left to undo" if f.undo_until is not None else "nothing to undo"
            why, remove = f"older than {keep}, {left}", True
        out.append(Verdict(f.name, remove, why, f.size, f.what))
    return out
