"""Expiry arithmetic of the decision model: the calendar horizon H(s) and the lease L.

H(s) is the calendar horizon of the most retentive rule that keeps a snapshot, and each
rule's row in ``retention.core.policy.rules`` says how its own is computed: daily N is the start
of its day plus N days in the policy's zone, monthly N the start of its month plus N months
(and so on), within D is created + D, every is its tick plus count intervals, an unlimited
rule 100 years; ``last``, tags and ids have none. L, the lease, is the time until the job's
second-next scheduled run (7 days without a schedule), and never less than the configured
``lease_minimum`` (7 days by default). A kept snapshot needs an expiry of at least
R = max(H, now + L) and, when it has less, is extended to W = max(H, now + 2L): after a run,
no kept snapshot expires within L, which is how long a stopped job (and a stopped service,
whose grooming then catches up) can last without losing one: the outage tolerance.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from croniter import croniter

from retention.core.policy import rules
from retention.core.policy.cron import ticks as cron_ticks
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule
from retention.core.policy.spec import Match
from retention.core.timestamps import LATEST, add_seconds, ceil_to_second

UNLIMITED = RetentionDuration(years=100)
DEFAULT_LEASE = timedelta(days=7)
# lease_minimum's default: a daily job's own lease is about two days, and an outage of the
# service (no API, no new snapshots) of a few days must not cost the restore points kept.
LEASE_MINIMUM = timedelta(days=7)
# How late after its tick a scheduled run may start (a CronJob's pod, a busy node) and still
# be that tick's run, not a run between two ticks.
RUN_STARTS_WITHIN = timedelta(hours=1)


def lease(schedule: str | None, now: datetime, minimum: timedelta = LEASE_MINIMUM) -> timedelta:
    """The lease L at ``now``: the schedule's (schedule_lease), never less than ``minimum``."""
    return max(schedule_lease(schedule, now), minimum)


def previous_run(schedule: str | None, now: datetime) -> datetime | None:
    """The job's last scheduled run before the one at ``now`` (cron, UTC); None without a
    schedule. A tick just before ``now`` (within RUN_STARTS_WITHIN, and half the schedule's
    interval) is this run's own: a scheduled run starts a little after its tick, and that
    tick saw none of the snapshots taken since the run before it."""
    if not schedule:
        return None
    ticks = croniter(schedule, now.astimezone(UTC))
    at: datetime = ticks.get_prev(datetime)
    before: datetime = ticks.get_prev(datetime)
    return before if now - at < min(RUN_STARTS_WITHIN, (at - before) / 2) else at


def schedule_lease(schedule: str | None, now: datetime) -> timedelta:
    """Time from ``now`` to the job's second-next run under ``schedule`` (cron, UTC)."""
    if not schedule:
        return DEFAULT_LEASE
    runs = croniter(schedule, now.astimezone(UTC))
    runs.get_next(datetime)
    second: datetime = runs.get_next(datetime)
    return second - now


def horizon(match: Match, created: datetime, zone: tzinfo) -> datetime | None:
    """The horizon one matched rule gives a snapshot created at ``created``, or None: each
    rule's row in ``rules.RULES`` says how its horizon is computed, or that it has none."""
    rule = rules.BY_NAME[match.rule]
    if rule.horizon == "duration":
        if match.within is None:
            return None
        return _duration_horizon(match.within, created, created.fold, zone)
    if rule.horizon == "cron" and match.every is not None:
        return _intervals_after(match.every, created, created.astimezone(zone), zone)
    if rule.horizon == "calendar" and rule.calendar is not None:
        return _calendar_horizon(rule.calendar, match.count, created, created.fold, zone)
    return None


@functools.lru_cache(maxsize=1 << 16)
def _calendar_horizon(
    calendar: rules.Calendar, count: int, created: datetime, fold: int, zone: tzinfo
) -> datetime:
    # Cached: a forecast decides the same snapshots day after day, and their calendar
    # horizons (the costliest part of a reason) do not change with the day. ``fold`` is
    # part of the key (as in every cache here keyed on a time): the two 02:30 of a
    # fall-back night on one zone's clock are equal datetimes.
    local = created.astimezone(zone)
    if count == -1:
        return _buckets_after(calendar, count, created, local, zone)
    # Each row's horizon is its bucket's start plus count buckets, and the start keeps the
    # item's fold (a fall-back hour's): the same for every item of a bucket with that fold.
    key = (calendar, count, calendar.key(local), local.fold, zone)
    end = _BUCKET_ENDS.get(key)
    if end is None:
        if len(_BUCKET_ENDS) >= _BUCKETS_KEPT:
            _BUCKET_ENDS.clear()
        end = _BUCKET_ENDS[key] = _buckets_after(calendar, count, created, local, zone)
    return end


# A new snapshot of a forecast (or of a plan) mostly lands in a bucket an older one has
# already met: worked out once per bucket.
_BUCKET_ENDS: dict[tuple[rules.Calendar, int, int, int, tzinfo], datetime] = {}
_BUCKETS_KEPT = 1 << 16


@functools.lru_cache(maxsize=1 << 16)
def _duration_horizon(
    within: RetentionDuration, created: datetime, fold: int, zone: tzinfo
) -> datetime:
    # Cached for the same reasons as _calendar_horizon.
    return within.after(created, zone)


def _intervals_after(
    every: EveryRule, created: datetime, local: datetime, zone: tzinfo
) -> datetime:
    if every.count == -1:
        return UNLIMITED.after(created, zone)
    table = cron_ticks(every.cron, zone)
    start, _ = table.interval(local)
    return table.after(start, every.count).astimezone(UTC)


def _buckets_after(
    calendar: rules.Calendar, count: int, created: datetime, local: datetime, zone: tzinfo
) -> datetime:
    if count == -1:
        return UNLIMITED.after(created, zone)
    try:
        return calendar.after(local, count, zone)
    except (OverflowError, ValueError):
        return LATEST


@dataclass(frozen=True)
class Lease:
    """The lease's two expiries at one ``now``: ``floor`` = now + L, ``doubled`` = now + 2L
    (a cluster's decisions share them; each snapshot only adds its horizon)."""

    floor: datetime
    doubled: datetime

    @classmethod
    def at(cls, now: datetime, lease_for: timedelta) -> Lease:
        """The lease ``lease_for`` taken at ``now``."""
        seconds = lease_for.total_seconds()
        return cls(add_seconds(now, seconds), add_seconds(now, 2 * seconds))

    def required_and_written(self, horizon_at: datetime | None) -> tuple[datetime, datetime]:
        """R = max(H, now + L) and W = max(H, now + 2L), W rounded up to the second."""
        if horizon_at is None:
            return self.floor, ceil_to_second(self.doubled)
        return max(self.floor, horizon_at), ceil_to_second(max(self.doubled, horizon_at))
