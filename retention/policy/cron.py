"""Cron ticks for ``every`` rules, computed once per expression and zone and shared.

croniter costs tens of microseconds a call and every cluster of a fleet asks for the same
ticks (quarter starts, month starts), so the ticks are kept in a sorted table that grows on
demand in either direction, and an interval is found with a binary search. Deterministic
and without I/O: a cache, not state that changes an answer.
"""

from __future__ import annotations

import bisect
import threading
from datetime import datetime, timedelta, tzinfo

from croniter import croniter

_BATCH = 64


class CronTicks:
    """The sorted ticks of one cron expression on one zone's wall clock."""

    def __init__(self, expression: str, zone: tzinfo) -> None:
        self.expression = expression
        self.zone = zone
        self._ticks: list[datetime] = []
        self._lock = threading.Lock()

    def interval(self, moment: datetime) -> tuple[datetime, datetime]:
        """The ticks ``start <= moment < end`` around an aware ``moment``."""
        with self._lock:
            self._cover(moment)
            i = bisect.bisect_right(self._ticks, moment) - 1
            return self._ticks[i], self._ticks[i + 1]

    def after(self, start: datetime, count: int) -> datetime:
        """The tick ``count`` intervals after the tick ``start``."""
        with self._lock:
            self._cover(start)
            i = bisect.bisect_left(self._ticks, start)
            while i + count >= len(self._ticks):
                self._extend_forward()
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
            self._extend_backward()
        while moment >= self._ticks[-1]:
            self._extend_forward()

    def _extend_forward(self) -> None:
        itr = croniter(self.expression, self._ticks[-1])
        self._ticks.extend(itr.get_next(datetime) for _ in range(_BATCH))

    def _extend_backward(self) -> None:
        itr = croniter(self.expression, self._ticks[0])
        older = [itr.get_prev(datetime) for _ in range(_BATCH)]
        self._ticks[:0] = reversed(older)


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
