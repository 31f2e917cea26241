"""Cron ticks for ``every`` rules, computed once per expression and zone and shared.

croniter costs tens of microseconds a call and every cluster of a fleet asks for the same
ticks (quarter starts, month starts), so the ticks are kept in a sorted table that grows on
demand in either direction, and an interval is found with a binary search. Deterministic
and without I/O: a cache, not state that changes an answer.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from datetime import datetime, timedelta, tzinfo

from croniter import CroniterError, croniter

from retention.core.timestamps import EARLIEST, LATEST

_BATCH = 64
# More intervals than this are not tabulated (a million minute ticks would cost 30 s and
# 50 MB): an every-rule that far out keeps until LATEST, which is what "keep" means.
MAX_INTERVALS = 100_000
_PAST_THE_END = (ValueError, OverflowError, CroniterError)


class CronTicks:
    """The sorted ticks of one cron expression on one zone's wall clock."""

    def __init__(self, expression: str, zone: tzinfo) -> None:
        self.expression = expression
        self.zone = zone
        self._ticks: list[datetime] = []
        self._lock = threading.Lock()
        # croniter cannot go past year 9999 (a restic vector keeps "9999y"): the table ends.
        self._ended = False

    def interval(self, moment: datetime) -> tuple[datetime, datetime]:
        """The ticks ``start <= moment < end`` around an aware ``moment``."""
        with self._lock:
            self._cover(moment)
            i = bisect.bisect_right(self._ticks, moment) - 1
            return self._ticks[i], self._ticks[i + 1]

    def after(self, start: datetime, count: int) -> datetime:
        """The tick ``count`` intervals after the tick ``start``; LATEST when that is past
        the representable range or more than MAX_INTERVALS away."""
        if count > MAX_INTERVALS:
            return LATEST
        with self._lock:
            self._cover(start)
            i = bisect.bisect_left(self._ticks, start)
            while i + count >= len(self._ticks):
                if not self._extend_forward():
                    return LATEST
            return self._ticks[i + count]

    def _cover(self, moment: datetime) -> None:
        if not self._ticks:
            local = moment.astimezone(self.zone)
            # Ticks are whole minutes; a second later makes a tick at `moment` itself count.
            first: datetime = croniter(self.expression, local + timedelta(seconds=1)).get_prev(
                datetime
            )
            self._ticks = [first]
        while moment < self._ticks[0]:
            if not self._extend_backward():
                self._ticks.insert(0, EARLIEST)
                break
        while moment >= self._ticks[-1]:
            if not self._extend_forward():
                self._ticks.append(LATEST)
                break

    def _extend_forward(self) -> bool:
        """Add the next ticks; False when there are none left to add."""
        if self._ended:
            return False
        itr = croniter(self.expression, self._ticks[-1])
        newer: list[datetime] = []
        try:
            newer.extend(itr.get_next(datetime) for _ in range(_BATCH))
        except _PAST_THE_END:
            self._ended = True
        self._ticks.extend(newer)
        return bool(newer)

    def _extend_backward(self) -> bool:
        """Add the previous ticks; False when there are none left to add."""
        itr = croniter(self.expression, self._ticks[0])
        older: list[datetime] = []
        with contextlib.suppress(*_PAST_THE_END):
            older.extend(itr.get_prev(datetime) for _ in range(_BATCH))
        self._ticks[:0] = reversed(older)
        return bool(older)


_TABLES: dict[tuple[str, str], CronTicks] = {}
_TABLES_LOCK = threading.Lock()


def ticks(expression: str, zone: tzinfo) -> CronTicks:
    """The shared tick table of ``expression`` on ``zone``."""
    key = (expression, str(zone))
    with _TABLES_LOCK:
        table = _TABLES.get(key)
        if table is None:
            table = _TABLES[key] = CronTicks(expression, zone)
        return table
