"""One run at a time: ``fcntl`` locks on files in the reports folder.

A whole-fleet run or an apply holds ``.retention.lock`` exclusively. A shard holds it
shared, which the other shards also may, and its own shard file
(``.retention-shard-I-of-N.lock``) exclusively: shards run side by side, never twice, and
never beside a whole-fleet run or an apply.

Shards of different counts are excluded too: shard 1/4 and shard 1/8 would cover some of
the same clusters. A shard refuses to start (LockHeldError, exit 4, naming the running
shards) while any shard file of another count is held. Looking at the other counts' files
and taking one's own would race (two shards of different counts starting at the same
instant could each look before the other takes), so every run takes its locks while
holding ``.retention-setup.lock`` exclusively: a few milliseconds, waited for up to
SETUP_WAIT seconds. Exclusion, not a refusal as bad configuration (exit 2): a count is
wrong only beside the shards of another count, and a count changed between two runs is
right once the old shards end, so "another run holds the lock, try later" is what it is.

A lock belongs to the open file, so it is released when the process ends however it ends
(a kill included); a stale lock file never blocks the next run. Each holder writes its pid
and start time into the file it holds exclusively, for the message the next run prints.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

from retention.core.timestamps import format_timestamp
from retention.errors import LockHeldError
from retention.ops.clock import Clock
from retention.ops.sharding import Shard

LOCK_NAME = ".retention.lock"
SETUP_NAME = ".retention-setup.lock"
SHARD_PREFIX = ".retention-shard-"
_SHARD_FILE = re.compile(rf"{re.escape(SHARD_PREFIX)}(\d+)-of-(\d+)\.lock")
# Locks are taken in milliseconds; a run that holds the set-up lock longer is stuck.
SETUP_WAIT = 10.0
_POLL = 0.01
RELEASED = "the lock is released when that process ends"


def shard_lock_name(index: int, count: int) -> str:
    """The lock file of shard ``index`` of ``count``."""
    return f"{SHARD_PREFIX}{index}-of-{count}.lock"


@contextmanager
def run_lock(
    folder: Path,
    shard: Shard | None = None,
    *,
    clock: Clock,
    setup_wait: float = SETUP_WAIT,
) -> Iterator[Path]:
    """Hold the fleet's lock of ``folder`` for the block, or raise LockHeldError.

    With ``shard`` the fleet's lock is shared with the other shards of its count and the
    shard's own lock is exclusive; a shard file of another count held is a LockHeldError.
    Yields the file held exclusively, signed with the pid and ``clock``'s time.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as held:
        fleet = held.enter_context((folder / LOCK_NAME).open("a+", encoding="utf-8"))
        with _setting_up(folder, setup_wait, clock):
            if shard is None:
                _take(fleet, folder / LOCK_NAME, fcntl.LOCK_EX)
                _sign(fleet, clock)
                mine = folder / LOCK_NAME
            else:
                _take(fleet, folder / LOCK_NAME, fcntl.LOCK_SH)
                _refuse_other_counts(folder, shard)
                mine = folder / shard_lock_name(shard.index, shard.count)
                own = held.enter_context(mine.open("a+", encoding="utf-8"))
                _take(own, mine, fcntl.LOCK_EX)
                _sign(own, clock)
        yield mine


@contextmanager
def _setting_up(folder: Path, wait: float, clock: Clock) -> Iterator[None]:
    """Hold ``.retention-setup.lock`` exclusively while the run's own locks are taken, so
    that no other run looks at the lock files or takes one meanwhile."""
    path = folder / SETUP_NAME
    with path.open("a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "another process"
                    raise LockHeldError(
                        f"another retention run has held {path} for more than {wait:g} s "
                        f"while taking its locks ({holder}); it should take milliseconds: "
                        f"that process is stuck or stopped, end it ({RELEASED})"
                    ) from None
                time.sleep(_POLL)
        _sign(handle, clock)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _take(handle: IO[str], path: Path, mode: int) -> None:
    try:
        fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
    except BlockingIOError:
        raise LockHeldError(
            f"another retention run holds {path} ({_holders(handle, path)}); it will finish on "
            f"its own, or remove nothing and wait: {RELEASED}"
        ) from None


def _refuse_other_counts(folder: Path, shard: Shard) -> None:
    """LockHeldError when a shard of another count holds its lock in ``folder``."""
    others = [(count, text) for count, text in _held_shards(folder) if count != shard.count]
    if others:
        counts = " and ".join(str(count) for count in sorted({count for count, _ in others}))
        raise LockHeldError(
            f"shards of another --shard-count hold the fleet in {folder} "
            f"({'; '.join(text for _, text in others)}), and this run is shard {shard.label}: "
            "shards of different counts would plan and change some clusters twice. Let the "
            f"running shards finish ({RELEASED}), or stop them, then start every shard of "
            f"the fleet with the same --shard-count (running now: {counts})"
        )


def _held_shards(folder: Path) -> list[tuple[int, str]]:
    """(count, "shard I/N, what its holder wrote") of every shard lock file in ``folder``
    held now, by count and index."""
    found = []
    for entry in folder.glob(f"{SHARD_PREFIX}*.lock"):
        match = _SHARD_FILE.fullmatch(entry.name)
        if match and (text := _held_by(entry)) is not None:
            found.append((int(match[2]), int(match[1]), text))
    found.sort(key=lambda item: item[:2])
    return [(count, f"shard {index}/{count}, {text}") for count, index, text in found]


def _sign(handle: IO[str], clock: Clock) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} since {format_timestamp(clock())}\n")
    handle.flush()


def _holders(handle: IO[str], path: Path) -> str:
    """Who holds ``path``: the shards holding it shared when there are any (the text in the
    fleet's file is then a past holder's), else what the holder wrote."""
    if path.name == LOCK_NAME:
        shards = [text for _count, text in _held_shards(path.parent)]
        if shards:
            return "; ".join(shards)
    handle.seek(0)
    return handle.read().strip() or "another process"


def _held_by(path: Path) -> str | None:
    """What the holder of ``path`` wrote when it is held now, else None. Called under the
    set-up lock, so the probe's own brief lock stands in no one's way."""
    try:
        with path.open(encoding="utf-8") as probe:
            try:
                fcntl.flock(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return probe.read().strip() or "another process"
            return None
    except OSError:
        return None
