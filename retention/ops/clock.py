"""The wall clock, read here and nowhere else in the package (the simulator keeps its own).

A ``Clock`` is a callable that returns the current time as an aware UTC datetime. The
command line takes one (``retention.cli.main(argv, clock=...)``, the system clock by
default) and hands it down to everything that needs the time: the lifecycle and its jobs,
the log lines' timestamps, the lock file's line, the client's note of the server's date and
the configuration's schedule warnings. A test gives the product the simulator's clock, so
the two agree on "now" without patching the standard library.

Durations, timeouts and rate limits use ``time.monotonic``, which is not this clock: a
wall clock set back or forward must not stretch a timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeAlias

Clock: TypeAlias = Callable[[], datetime]


def system_clock() -> datetime:
    """The host's clock, now, in UTC."""
    return datetime.now(UTC)


__all__ = ["Clock", "system_clock"]
