"""A cluster's snapshot cadence for a forecast: from the service's snapshot schedule when it
has one, else from its own recent snapshots. Pure.

Observed: the complete snapshots of the last ``OBSERVED_DAYS`` days give the interval (their
median gap), the size (the median of those that say theirs) and its growth (the least-squares
slope of size against time, when sizes grow), and the newest one gives the expiry the
service sets (its expiry less its creation; a job's run has not touched it yet). A
cluster whose newest complete snapshot is older than twice its interval and an hour (the
freshness check's default) has stopped: it takes no more. The schedule gives the interval,
the time of day the snapshots are aligned to and the retention of each kind of snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from statistics import median, median_low

from retention.core.forecast import Cadence, NewExpiry
from retention.core.model import SnapshotView

OBSERVED_DAYS = 30
_STOPPED_SLACK = timedelta(hours=1)


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
