"""Expiry arithmetic of the decision model: the calendar horizon H(s) and the lease L.

H(s) is the calendar horizon of the most retentive rule that keeps a snapshot: daily N is
the start of its day plus N days in the policy's zone, monthly N the start of its month
plus N months (and so on), within D is created + D, every is its tick plus count intervals,
an unlimited rule 100 years; ``last`` has none. L, the lease, is the time until the job's
second-next scheduled run (7 days without a schedule). A kept snapshot needs an expiry of
at least R = max(H, now + L) and, when it has less, is extended to W = max(H, now + 2L).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from croniter import croniter

from retention.policy.cron import ticks as cron_ticks
from retention.policy.duration import RetentionDuration, add_date
from retention.policy.engine import Match
from retention.timestamps import LATEST, add_seconds, ceil_to_second

UNLIMITED = RetentionDuration(years=100)
DEFAULT_LEASE = timedelta(days=7)


def lease(schedule: str | None, now: datetime) -> timedelta:
    """Time from ``now`` to the job's second-next run under ``schedule`` (cron, UTC)."""
    if not schedule:
        return DEFAULT_LEASE
    runs = croniter(schedule, now.astimezone(UTC))
    runs.get_next(datetime)
    second: datetime = runs.get_next(datetime)
    return second - now


def horizon(match: Match, created: datetime, zone: tzinfo) -> datetime | None:
    """The horizon one matched rule gives a snapshot created at ``created``, or None."""
    local = created.astimezone(zone)
    rule = match.rule
    if rule in ("within", "within_hourly", "within_daily", "within_weekly", "within_monthly",
                "within_yearly"):  # fmt: skip
        return match.within.after(created, zone) if match.within else None
    if rule == "every" and match.every is not None:
        if match.every.count == -1:
            return UNLIMITED.after(created, zone)
        table = cron_ticks(match.every.cron, zone)
        start, _ = table.interval(local)
        return table.after(start, match.every.count).astimezone(UTC)
    if rule in ("hourly", "daily", "weekly", "monthly", "yearly"):
        if match.count == -1:
            return UNLIMITED.after(created, zone)
        return _calendar(rule, local, match.count, zone)
    return None  # last, tags, ids: no calendar horizon


def _calendar(rule: str, local: datetime, count: int, zone: tzinfo) -> datetime:
    try:
        if rule == "hourly":
            # Hours are absolute: the start of its hour, then count real hours.
            start = local.replace(minute=0, second=0, microsecond=0)
            return (start + timedelta(hours=count)).astimezone(UTC)
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
        if rule == "daily":
            moved = add_date(midnight, 0, 0, count, zone)
        elif rule == "weekly":
            monday = midnight - timedelta(days=midnight.weekday())
            moved = add_date(monday, 0, 0, 7 * count, zone)
        elif rule == "monthly":
            moved = add_date(midnight.replace(day=1), 0, count, 0, zone)
        else:
            moved = add_date(midnight.replace(month=1, day=1), count, 0, 0, zone)
        return moved.astimezone(UTC)
    except (OverflowError, ValueError):
        return LATEST


def required_and_written(
    horizon_at: datetime | None, now: datetime, lease_for: timedelta
) -> tuple[datetime, datetime]:
    """R = max(H, now + L), the expiry a kept snapshot needs, and W = max(H, now + 2L)."""
    floor = add_seconds(now, lease_for.total_seconds())
    written = add_seconds(now, 2 * lease_for.total_seconds())
    if horizon_at is not None:
        floor = max(floor, horizon_at)
        written = max(written, horizon_at)
    return floor, ceil_to_second(written)
