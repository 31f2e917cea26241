"""A planning worker that dies while it writes its answer, for tests/test_deciding.py.

Its own small module, not a test file: a spawned worker imports it to unpickle ``DiesWriting``,
and the fewer imports that takes, the sooner the worker is up.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from retention.core.model import SnapshotView, Target
from retention.plan.workers import Shared
from retention.runfolder.planwrite import EncodedCluster


@dataclass(frozen=True)
class DiesWriting(Shared):
    """What a plan's clusters share; the worker deciding cluster ``victim`` dies halfway
    through writing its answer."""

    victim: str = ""

    def decide(
        self,
        target: Target,
        snapshots: Sequence[SnapshotView],
        walk_error: str | None,
        outside: str | None = None,
    ) -> EncodedCluster:
        """The cluster decided, or for the victim a half-written answer and SIGKILL."""
        if target.cluster_id == self.victim:
            die_writing()
        return super().decide(target, snapshots, walk_error, outside)


def die_writing() -> NoReturn:
    """In a pool worker: take the result pipe's lock, write the length of a 1 MiB answer
    and its first KiB, and SIGKILL this process, as the out-of-memory killer stops a worker
    whose answer is larger than the pipe holds.

    The result queue is a local of CPython's ``_process_worker`` (3.11 to 3.13), found up
    the stack; the bytes are what ``Connection.send_bytes`` writes first (a 4-byte
    big-endian length). One write of 1,028 bytes is atomic, so the reader in the main
    process always gets exactly this much, then waits in recv() for the rest."""
    frame = sys._getframe()
    while frame.f_code.co_name != "_process_worker":
        if frame.f_back is None:
            raise RuntimeError("die_writing runs in a ProcessPoolExecutor worker only")
        frame = frame.f_back
    results: Any = frame.f_locals["result_queue"]
    results._wlock.acquire()
    os.write(results._writer.fileno(), struct.pack("!i", 1 << 20) + b"\x80" * 1024)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("SIGKILL returned")
