"""The console script and ``python -m retention``: start again with a malloc limit when the
command walks a fleet, then load the command line inside a guard, so that a Ctrl-C while
Python loads it (a second on a busy machine) exits 130 with one word, not an import
traceback. Both happen before the command line is imported: the exec no longer pays for
loading it twice.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

from retention.errors import EXIT_INTERRUPTED
from retention.ops.stopping import early_stop

WALKING_COMMANDS = frozenset({"plan", "run", "apply", "demo"})


def reexec_with_arena_limit(argv: Sequence[str]) -> None:
    """Start again with MALLOC_ARENA_MAX=2 for the commands that walk a fleet (glibc only).

    glibc gives each busy thread a malloc arena of its own and never hands fragmented
    ones back: with eight walk threads parsing half-megabyte pages, a 2,000-cluster plan
    peaked at 296 MiB of RSS while its live data stayed under 10 MiB; with two arenas it
    peaks at 59 MiB (benchmarks/plan_memory.py). glibc reads the limit at start-up (a
    mallopt call from Python came too late to hold), hence the one exec. A value already
    set, by a container image say, is respected.
    """
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return
    if not WALKING_COMMANDS.intersection(argv):
        return
    os.environ["MALLOC_ARENA_MAX"] = "2"
    os.execv(sys.executable, [sys.executable, "-m", "retention", *argv])  # noqa: S606


def run() -> None:
    """Console-script entry point."""
    reexec_with_arena_limit(sys.argv[1:])
    # Before anything is loaded: a SIGTERM now, before any request, ends the process
    # (retention.ops.stopping.early_stop); the commands that send requests install their own.
    signal.signal(signal.SIGTERM, early_stop)
    try:
        from retention.cli import main  # noqa: PLC0415 - loaded inside the Ctrl-C guard
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    sys.exit(main())
