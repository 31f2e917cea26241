"""Processes a command spawns (the plan's deciders, the evidence's chain verifier): they
leave stopping to the command that spawned them, and end when it is gone."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# How often a child looks whether the command that spawned it is still there.
PARENT_POLL = 1.0


@contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread: a child spawned meanwhile starts with
    them blocked (the mask is inherited), so a stop while it imports neither kills it nor
    prints a traceback of its own; ``leave_stops_to`` then ignores them for good. Blocked,
    not ignored: a signal meanwhile stays pending for this process instead of being lost."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def leave_stops_to(parent: int) -> None:
    """In a child: ignore SIGINT and SIGTERM (a Ctrl-C reaches the whole process group;
    the command that spawned it decides what a stop means), and end once ``parent`` is
    gone. ``parent``: its pid as it gave it, not os.getppid() now: a child still starting
    when the command was killed would take its new parent (init) for the command."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    threading.Thread(target=_end_with, args=(parent,), name="parent-watch", daemon=True).start()


def _end_with(parent: int) -> None:
    """End this child once the command that spawned it is gone (killed: kill -9, the
    out-of-memory killer): it would otherwise go on for nobody, holding its memory and, with
    a ledger, a database connection."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(0)
