"""One run at a time: an exclusive ``fcntl`` lock on a file in the reports folder.

The lock belongs to the open file, so it is released when the process ends however it ends
(a kill included); a stale lock file never blocks the next run. The file records the pid
and start time of the holder, for the message the next run prints.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from retention.errors import LockHeldError
from retention.timestamps import format_timestamp

LOCK_NAME = ".retention.lock"


@contextmanager
def run_lock(folder: Path, name: str = LOCK_NAME) -> Iterator[Path]:
    """Hold the lock ``name`` of ``folder`` for the block, or raise LockHeldError.

    Shards of one fleet take a lock each, so they run side by side but never twice.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    handle = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise LockHeldError(
                f"another retention run holds {path} ({holder}); it will finish on its own, "
                "or remove nothing and wait: the lock is released when that process ends"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {format_timestamp(datetime.now(UTC))}\n")
        handle.flush()
        yield path
    finally:
        handle.close()
