"""The forecast as a job: one read-only walk of the fleet, then per cluster its cadence and
``forecast_cluster`` for the current policies (and the base ones, when given) from one
``now``, ``steps`` steps of ``step``.

Memory holds the walk's window of clusters' snapshots and, per cluster forecast, only its
series as arrays of ints (count, bytes, oldest restore point per step) and the ladder it
ends with: a year of daily steps is about 9 KB a cluster and side, whatever its history.

Nothing is sent, written or locked: the client only reads (a read-only key is enough).
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from retention.api.client import OpsManagerClient
from retention.api.models import SnapshotSchedule
from retention.config.scope import Scope
from retention.core.cadence import Cadence, ScheduleTerms, observed_cadence, schedule_cadence
from retention.core.forecast import (
    ClusterForecast,
    Trend,
    forecast_cluster,
    steady_index,
    trend,
)
from retention.core.horizon import lease
from retention.core.model import SnapshotView, Target
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.loader import PolicySet
from retention.core.restorepoints import Ladder
from retention.errors import HTTPStatusError, MalformedResponseError
from retention.ops.stopping import Stop
from retention.ops.window import ordered
from retention.plan.workers import Deciders
from retention.walk.inventory import Walk, WalkListener, survey_fleet, walk

log = logging.getLogger("retention.forecast")

# What every forecast assumes, in the core's words (retention.core.forecast, .cadence).
ASSUMPTIONS = (
    "no OPEN alert holds a change: alerts cannot be foreseen",
    "a max_expire_fraction hold is approved: the question is what the policies keep once they run",
    "each cluster's cadence goes on as it is: its interval, the expiry the service sets, "
    "its snapshots' size and growth",
    "a cluster whose backups stopped takes no more snapshots",
    "config servers are advisory: only the service's own expiries change them",
)
_NO_OLDEST = -1  # in an ``oldest`` array: no restore point
# From this many clusters a forecast runs them on a pool of worker processes: a year of daily
# steps costs about a tenth of a second a cluster and side, a worker's start half a second.
POOL_FROM = 8


def step_of(text: str) -> timedelta:
    """--step as a duration of days and hours ("1d", "6h", "1d12h"); ValueError otherwise."""
    parsed = RetentionDuration.parse(text)
    if parsed.years or parsed.months:
        raise ValueError(f"{text!r}: a step is in days (d) and hours (h), e.g. 1d or 6h")
    step = timedelta(days=parsed.days, hours=parsed.hours)
    if step <= timedelta(0):
        raise ValueError(f"{text!r}: a step must be at least an hour")
    return step


@dataclass(frozen=True)
class Outlook:
    """One cluster's future under one set of policies, as ints: per step the snapshots on
    the service, their bytes and the oldest restore point (epoch seconds, -1: none)."""

    policies: list[str]
    counts: array[int]
    storage: array[int]
    oldest: array[int]
    ladder: Ladder | None  # the restore points after the last step
    # Today's snapshots past their expiry, which the counts leave out and a plan counts.
    awaiting_deletion: int = 0

    @classmethod
    def of(cls, forecast: ClusterForecast) -> Outlook:
        """The ints of ``forecast`` (its snapshots and Step objects are left behind)."""
        return cls(
            forecast.policies,
            array("q", (s.count for s in forecast.steps)),
            array("q", (s.storage_bytes for s in forecast.steps)),
            array("q", (_epoch(s.oldest) for s in forecast.steps)),
            forecast.ladder,
            forecast.awaiting_deletion,
        )

    @property
    def steady(self) -> int:
        """The index of the step from which the count stays (core.forecast.steady_index);
        the steady state's count and bytes are the last step's."""
        return steady_index(self.counts) or 0

    @property
    def trend(self) -> Trend:
        """Whether the count ends steady, or still growing or falling (core.forecast.trend)."""
        return trend(self.counts)

    def oldest_at(self, index: int) -> datetime | None:
        """The oldest restore point after step ``index``."""
        seconds = self.oldest[index]
        return None if seconds == _NO_OLDEST else datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True)
class ClusterOutlook:
    """A cluster, its cadence, and its future under the current (and base) policies."""

    target: Target
    cadence: Cadence
    current: Outlook
    base: Outlook | None = None


@dataclass
class Forecast:
    """The fleet's future: each cluster's, the fleet's summed series, the errors."""

    evaluated_at: datetime
    days: int
    step: timedelta
    clusters: list[ClusterOutlook] = field(default_factory=list)  # largest change first
    counts: array[int] = field(default_factory=lambda: array("q"))  # the fleet, per step
    storage: array[int] = field(default_factory=lambda: array("q"))
    base_counts: array[int] = field(default_factory=lambda: array("q"))
    base_storage: array[int] = field(default_factory=lambda: array("q"))
    errors: list[str] = field(default_factory=list)
    # Today's snapshots past their expiry, which the counts leave out (a plan counts them).
    awaiting_deletion: int = 0

    def at(self, index: int) -> datetime:
        """The time of step ``index``."""
        return self.evaluated_at + index * self.step

    def add(self, cluster: ClusterOutlook) -> None:
        """Keep ``cluster`` and add its series to the fleet's."""
        self.clusters.append(cluster)
        self.awaiting_deletion += cluster.current.awaiting_deletion
        _add(self.counts, cluster.current.counts)
        _add(self.storage, cluster.current.storage)
        if cluster.base is not None:
            _add(self.base_counts, cluster.base.counts)
            _add(self.base_storage, cluster.base.storage)


def cadence_for(
    schedule: SnapshotSchedule | None, snapshots: Sequence[SnapshotView], now: datetime
) -> Cadence:
    """How a target will take snapshots: its snapshot ``schedule`` when the service has one
    (a cluster; a config server has none), else what its own snapshots show."""
    if schedule is not None and schedule.snapshot_interval_hours:
        return schedule_cadence(schedule_terms(schedule), snapshots, now)
    return observed_cadence(snapshots, now)


def walk_with_schedule(client: OpsManagerClient, target: Target) -> Walk:
    """One target's snapshots and, for a cluster whose walk succeeded, its snapshot schedule:
    read on the walk's thread, so the schedules of a fleet are read ``concurrency`` at a
    time, not one a cluster in the loop that forecasts."""
    walked = walk(client, target)
    # An id a plan cannot carry is never put in a path: its walk made no request either.
    if walked.error or target.kind != "cluster" or target.id_problem() is not None:
        return walked
    try:
        schedule = client.get_snapshot_schedule(target.project_id, target.cluster_id)
    except (HTTPStatusError, MalformedResponseError) as exc:
        # A key that may not read backup configurations, or an answer we cannot read:
        # the cluster's own snapshots still say how it takes them.
        name = walked.target.name
        log.warning("%s: snapshot schedule unread (%s); using its snapshots", name, exc)
        return walked
    return replace(walked, schedule=schedule)


def schedule_terms(schedule: SnapshotSchedule) -> ScheduleTerms:
    """What a forecast reads of a schedule (its reference time is UTC on Ops Manager)."""
    return ScheduleTerms(
        interval_hours=schedule.snapshot_interval_hours or 24,
        reference_hour=schedule.reference_hour_of_day or 0,
        reference_minute=schedule.reference_minute_of_hour or 0,
        retention_days=schedule.snapshot_retention_days,
        daily_days=schedule.daily_snapshot_retention_days,
        weekly_weeks=schedule.weekly_snapshot_retention_weeks,
        monthly_months=schedule.monthly_snapshot_retention_months,
    )


def forecast_fleet(  # noqa: PLR0913 - the fleet, both sides' policies, the times it is run forward over, and who hears it go
    client: OpsManagerClient,
    scope: Scope,
    base: PolicySet | None,
    *,
    now: datetime,
    days: int,
    step: timedelta,
    listener: WalkListener | None = None,
) -> Forecast:
    """Walk every target of ``scope`` once and forecast each ``days`` days ahead in steps
    of ``step`` from ``now``, under the scope's policies (and ``base``), on its workers
    from POOL_FROM clusters; the ``listener`` hears how many targets there are, then each
    one walked. StopRequestedError when the client's stop is asked for."""
    concurrency, stop = scope.concurrency, client.stop or Stop()
    found = survey_fleet(client, scope.projects, concurrency=concurrency)
    if listener is not None:
        listener.walks(len(found.targets))
    result = Forecast(now, days, step, errors=list(found.errors))
    lease_for = lease(scope.schedule, now, scope.lease_minimum)
    run = Forecaster(scope.policies, base, now, steps_in(days, step), step, lease_for)
    walks = ordered(
        lambda target: walk_with_schedule(client, target),
        found.targets,
        workers=concurrency,
        name="walk",
    )

    def whole() -> Iterator[Walk]:
        for walked in walks:
            if listener is not None:
                listener.walk(walked)
            if walked.error:
                target = walked.target
                result.errors.append(f"{target.kind} {target.cluster_id}: {walked.error}")
            else:
                yield walked

    pool = scope.workers if len(found.targets) >= POOL_FROM else 1
    with Deciders(run, pool, job="forecast") as forecasters:
        for outlook in forecasters.decide_all(whole()):
            stop.check("forecasting the next cluster")
            result.add(outlook)
    result.clusters.sort(key=_largest_change_first)
    return result


@dataclass(frozen=True)
class Forecaster:
    """What every cluster of a forecast shares: the policies of each side and the times it
    is run forward over. Runs one walked cluster forward, in this process or on a worker
    of the pool (planning.workers)."""

    current: PolicySet
    base: PolicySet | None
    start: datetime
    steps: int
    step: timedelta
    lease_for: timedelta

    def decide_walk(self, walk: Walk) -> ClusterOutlook:
        """The future of a cluster whose walk succeeded, under both sides."""
        target, snapshots = walk.target, walk.snapshots
        cadence = cadence_for(walk.schedule, snapshots, self.start)
        mine = self.outlook(target, snapshots, self.current, cadence)
        theirs = None if self.base is None else self.outlook(target, snapshots, self.base, cadence)
        return ClusterOutlook(target, cadence, mine, theirs)

    def outlook(
        self,
        target: Target,
        snapshots: Sequence[SnapshotView],
        policies: PolicySet,
        cadence: Cadence,
    ) -> Outlook:
        """``target`` run forward under the ``policies`` that match it."""
        matching = policies.matching(target.project_id, target.name, target.kind)
        forecast = forecast_cluster(
            target, snapshots, matching, cadence,
            start=self.start, steps=self.steps, step=self.step, lease_for=self.lease_for,
        )  # fmt: skip
        return Outlook.of(forecast)


def steps_in(days: int, step: timedelta) -> int:
    """How many steps of ``step`` fit in ``days`` days (at least one)."""
    return max(1, timedelta(days=days) // step)


def _largest_change_first(cluster: ClusterOutlook) -> tuple[int, int, str, str]:
    """Against a base: the largest difference in the steady count first; else the largest
    change from today to the steady state; then by name."""
    mine = cluster.current
    if cluster.base is not None:
        theirs = cluster.base
        change = abs(mine.counts[-1] - theirs.counts[-1])
        bytes_change = abs(mine.storage[-1] - theirs.storage[-1])
    else:
        change = abs(mine.counts[-1] - mine.counts[0])
        bytes_change = abs(mine.storage[-1] - mine.storage[0])
    return (-change, -bytes_change, cluster.target.name, cluster.target.cluster_id)


def _add(total: array[int], series: array[int]) -> None:
    if not total:
        total.extend(series)
        return
    for index, value in enumerate(series):
        total[index] += value


def _epoch(moment: datetime | None) -> int:
    return _NO_OLDEST if moment is None else int(moment.timestamp())
