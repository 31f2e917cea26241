"""One run at a time: ``fcntl`` locks on files in the reports folder.

A whole-fleet run or an apply holds ``.retention.lock`` exclusively. A shard holds it
shared, which the other shards also may, and its own shard file exclusively: shards run
side by side, never twice, and never beside a whole-fleet run or an apply.

A lock belongs to the open file, so it is released when the process ends however it ends
(a kill included); a stale lock file never blocks the next run. Each holder writes its pid
and start time into the file it holds exclusively, for the message the next run prints.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from retention.errors import LockHeldError
from retention.timestamps import format_timestamp

LOCK_NAME = ".retention.lock"
SHARD_PREFIX = ".retention-shard-"


def shard_lock_name(index: int, count: int) -> str:
    """The lock file of shard ``index`` of ``count``."""
    return f"{SHARD_PREFIX}{index}-of-{count}.lock"


@contextmanager
def run_lock(folder: Path, shard: str | None = None) -> Iterator[Path]:
    """Hold the fleet's lock of ``folder`` for the block, or raise LockHeldError.

    With ``shard`` (a name from ``shard_lock_name``) the fleet's lock is shared with the
    other shards and the shard's own lock is exclusive. Yields the file held exclusively.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as held:
        fleet = held.enter_context((folder / LOCK_NAME).open("a+", encoding="utf-8"))
        if shard is None:
            _take(fleet, folder / LOCK_NAME, fcntl.LOCK_EX)
            _sign(fleet)
            yield folder / LOCK_NAME
            return
        _take(fleet, folder / LOCK_NAME, fcntl.LOCK_SH)
        own = held.enter_context((folder / shard).open("a+", encoding="utf-8"))
        _take(own, folder / shard, fcntl.LOCK_EX)
        _sign(own)
        yield folder / shard


def _take(handle: IO[str], path: Path, mode: int) -> None:
    try:
        fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
    except BlockingIOError:
        raise LockHeldError(
            f"another retention run holds {path} ({_holders(handle, path)}); it will finish on "
            "its own, or remove nothing and wait: the lock is released when that process ends"
        ) from None


def _sign(handle: IO[str]) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} since {format_timestamp(datetime.now(UTC))}\n")
    handle.flush()


def _holders(handle: IO[str], path: Path) -> str:
    """Who holds ``path``: the shards holding it shared when there are any (the text in the
    fleet's file is then a past holder's), else what the holder wrote."""
    if path.name == LOCK_NAME:
        shards = [
            f"{entry.name.removeprefix(SHARD_PREFIX).removesuffix('.lock')}: {text}"
            for entry in sorted(path.parent.glob(f"{SHARD_PREFIX}*.lock"))
            if (text := _held_by(entry)) is not None
        ]
        if shards:
            return "shards " + "; ".join(shards)
    handle.seek(0)
    return handle.read().strip() or "another process"


def _held_by(path: Path) -> str | None:
    """What the holder of ``path`` wrote when it is held now, else None."""
    try:
        with path.open(encoding="utf-8") as probe:
            try:
                fcntl.flock(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return probe.read().strip() or "another process"
            return None
    except OSError:
        return None
