"""A cluster's snapshot cadence for a forecast: from the service's snapshot schedule when it
has one, else from its own recent snapshots. Pure.

Observed: the complete snapshots of the last ``OBSERVED_DAYS`` days give the interval (their
median gap), the size (the median of those that say theirs) and its growth (the least-squares
slope of size against time, when sizes grow), and the newest one gives the expiry the
service sets (its expiry less its creation; a job's run has not touched it yet). A
cluster whose newest complete snapshot is older than twice its interval and an hour (the
freshness check's default) has stopped: it takes no more. The schedule gives the interval,
the time of day the snapshots are aligned to and the retention of each kind of snapshot.

``Cadence`` and ``NewExpiry`` live here rather than beside the forecast that reads them
(core.forecast): that module is compiled (tools/compiled.py), and these travel back from
the forecast's worker processes, which a compiled module's classes cannot do.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from statistics import median, median_low
from typing import Literal

from retention.core.model import SnapshotView
from retention.core.timestamps import add_date

CadenceSource = Literal["schedule", "observed", "stopped", "none"]
_SUNDAY = 6  # datetime.weekday()

OBSERVED_DAYS = 30
_STOPPED_SLACK = timedelta(hours=1)


@dataclass(frozen=True)
class NewExpiry:
    """The expiry the service gives a snapshot it takes: ``after`` its creation (None: no
    expiry). Under a schedule, the snapshot taken at the schedule's reference time of day
    (``reference``, seconds after midnight UTC) is the daily one; on a Sunday also the
    weekly one, on the 1st of a month the monthly one; it expires after the longest term
    of its kinds. (The service does not document how it picks them; this is the reading
    the docs' defaults suggest, the weekly on the default ``fullIncrementalDayOfWeek``.)"""

    after: timedelta | None
    daily: timedelta | None = None
    weekly: timedelta | None = None
    monthly_months: int | None = None
    reference: int | None = None

    def expires(self, created: datetime) -> datetime | None:
        """The expiry of a snapshot taken at ``created``."""
        ends = [] if self.after is None else [created + self.after]
        utc = created.astimezone(UTC)
        if self.reference == utc.hour * 3600 + utc.minute * 60 + utc.second:
            if self.daily:
                ends.append(created + self.daily)
            if self.weekly and utc.weekday() == _SUNDAY:
                ends.append(created + self.weekly)
            if self.monthly_months and utc.day == 1:
                ends.append(add_date(utc, 0, self.monthly_months, 0, UTC))
        return max(ends, default=None)


@dataclass(frozen=True)
class Cadence:
    """How a cluster will take snapshots: every ``interval`` from ``next_at`` on, each of
    ``size_bytes`` growing by ``growth_per_day`` bytes a day, with the service's expiry.
    ``interval`` None: it takes no more (its backups stopped, or it never had a cadence)."""

    source: CadenceSource
    interval: timedelta | None = None
    next_at: datetime | None = None
    size_bytes: int | None = None
    growth_per_day: float = 0.0
    expiry: NewExpiry = field(default_factory=lambda: NewExpiry(None))

    def taken(self, after: datetime, until: datetime) -> Iterator[datetime]:
        """The times of the snapshots taken in (``after``, ``until``]."""
        if self.interval is None or self.next_at is None or self.interval <= timedelta(0):
            return
        skip = max(0, math.floor((after - self.next_at) / self.interval) + 1)
        moment = self.next_at + skip * self.interval
        while moment <= until:
            if moment > after:
                yield moment
            moment += self.interval

    def size_at(self, moment: datetime) -> int | None:
        """The size of a snapshot taken at ``moment``."""
        if self.size_bytes is None or self.next_at is None:
            return self.size_bytes
        days = (moment - self.next_at).total_seconds() / 86400
        return max(0, round(self.size_bytes + self.growth_per_day * days))


@dataclass(frozen=True)
class ScheduleTerms:
    """What a forecast reads of the service's snapshot schedule (api's SnapshotSchedule)."""

    interval_hours: int
    reference_hour: int = 0
    reference_minute: int = 0
    offset_minutes: int = 0  # the reference time's offset from UTC
    retention_days: int | None = None
    daily_days: int | None = None
    weekly_weeks: int | None = None
    monthly_months: int | None = None


def observed_cadence(snapshots: Sequence[SnapshotView], now: datetime) -> Cadence:
    """The cadence the cluster's own snapshots show (see the module docstring)."""
    recent = sorted(
        (s for s in snapshots if s.complete and now - timedelta(days=OBSERVED_DAYS) <= s.created),
        key=lambda s: s.created,
    )
    recent_times = sorted({s.created for s in recent})
    if len(recent_times) < 2:
        return Cadence("stopped" if snapshots else "none")
    interval = timedelta(
        seconds=median_low((b - a).total_seconds() for a, b in pairwise(recent_times))
    )
    newest = recent_times[-1]
    if now - newest > 2 * interval + _STOPPED_SLACK:
        return Cadence("stopped")
    size, growth = _sizes(recent)
    last = max(recent, key=lambda s: s.created)
    after = None if last.expires is None else last.expires - last.created
    return Cadence("observed", interval, newest + interval, size, growth, NewExpiry(after))


def schedule_cadence(
    terms: ScheduleTerms, snapshots: Sequence[SnapshotView], now: datetime
) -> Cadence:
    """The cadence of the service's schedule, its sizes from the cluster's snapshots."""
    observed = observed_cadence(snapshots, now)
    if observed.source == "stopped":
        return observed
    interval = timedelta(hours=max(1, terms.interval_hours))
    zone = timezone(timedelta(minutes=terms.offset_minutes))
    anchor = datetime(2000, 1, 3, terms.reference_hour, terms.reference_minute, tzinfo=zone)
    newest = max((s.created for s in snapshots if s.complete), default=now)
    steps = (newest - anchor) // interval + 1
    expiry = NewExpiry(
        _days(terms.retention_days),
        _days(terms.daily_days),
        None if not terms.weekly_weeks else timedelta(weeks=terms.weekly_weeks),
        terms.monthly_months or None,
        reference=(
            anchor.astimezone(UTC) - anchor.astimezone(UTC).replace(hour=0, minute=0)
        ).seconds,
    )
    return Cadence(
        "schedule",
        interval,
        (anchor + steps * interval).astimezone(UTC),
        observed.size_bytes,
        observed.growth_per_day,
        expiry,
    )


def _days(count: int | None) -> timedelta | None:
    return None if count is None else timedelta(days=count)


def _sizes(recent: Sequence[SnapshotView]) -> tuple[int | None, float]:
    """The median size of the snapshots that say theirs, and its growth in bytes a day
    (0 unless sizes grow)."""
    sized = [(s.created, s.storage_bytes) for s in recent if s.storage_bytes is not None]
    if not sized:
        return None, 0.0
    size = int(median(b for _, b in sized))
    if len(sized) < 3:
        return size, 0.0
    t0 = sized[0][0]
    xs = [(t - t0).total_seconds() / 86400 for t, _ in sized]
    ys = [float(b) for _, b in sized]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return size, 0.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    # The size at the newest snapshot on the fitted line, growing from there.
    fitted = my + slope * (xs[-1] - mx)
    return (round(fitted), slope) if slope > 0 else (size, 0.0)
