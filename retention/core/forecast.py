"""What the policies keep in the future: run the decision model forward, step by step, on a
cluster's snapshots and the ones its cadence will take. Pure: the snapshots, the policies,
the cadence and the times in; a series out.

Each step is a day (or ``step``) of the service and one run of the job, in this order:

1. the service takes the snapshots the cadence gives between the last step and this one,
   each with the expiry the service sets (``NewExpiry``);
2. the service deletes every snapshot whose expiry has passed;
3. the job decides the cluster with ``now`` = the step's time (retention.core.decide, the
   very function a plan runs) and the service applies its changes: a protect sets
   doNotDelete and drops the expiry, an extend or a shorten sets the expiry, a release
   lifts doNotDelete and sets the expiry.

What a forecast assumes, and says: no OPEN alert holds a change (alerts cannot be
foreseen); a ``max_expire_fraction`` hold is approved (``approve_held``, the default: the
question is what the policies keep once they run, and the first run over a long history is
held until someone approves it); the cadence goes on as it is (a cluster whose backups
stopped takes no more); sizes follow the cadence's size and growth; config servers are
advisory, so only the service's own expiries change them.

Counts after each step are the snapshots on the service then, but those whose expiry has
passed (awaiting the service's reaper: no longer restorable, and gone within hours; a plan
counts them, so a forecast says how many of today's it leaves out: ``awaiting_deletion``); the
oldest restore point is the oldest complete, consistent snapshot the run leaves in place
(core.restorable.restore_points). The steady state is the count the last step ends with,
reached on the first step from which the count never again differs from it by more than
``steady_tolerance`` (5%, and at least one snapshot); a count that has not stayed there for a
tenth of the forecast (``trend``) is still growing or falling at the end, not steady.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

import msgspec

from retention.core.cadence import Cadence
from retention.core.decide import awaiting_deletion, decide
from retention.core.model import ClusterDecisions, ClusterView, SnapshotView, Target
from retention.core.policy.loader import LoadedPolicy
from retention.core.restorable import describe_restore_points, restore_points
from retention.core.restorepoints import Ladder


@dataclass(frozen=True)
class Step:
    """The cluster after one step: snapshots on the service, their storage, the oldest
    restore point."""

    at: datetime
    count: int
    storage_bytes: int
    oldest: datetime | None


@dataclass
class ClusterForecast:
    """One cluster's future under its policies."""

    target: Target
    cadence: Cadence
    policies: list[str]
    steps: list[Step] = field(default_factory=list)
    ladder: Ladder | None = None  # the restore points after the last step
    # Today's snapshots past their expiry: a plan counts them, step 0 does not.
    awaiting_deletion: int = 0


def steady_tolerance(count: int) -> int:
    """How far a count may stray from the steady state and still be in it."""
    return max(1, math.ceil(0.05 * count))


def steady_index(counts: Sequence[int]) -> int | None:
    """The first index from which ``counts`` stay within ``steady_tolerance`` of the last
    one (None: no count); a fleet's summed series reaches its steady state by the same rule."""
    if not counts:
        return None
    final = counts[-1]
    tolerance = steady_tolerance(final)
    reached = len(counts) - 1
    for index in range(len(counts) - 1, -1, -1):
        if abs(counts[index] - final) > tolerance:
            break
        reached = index
    return reached


# A count has settled when it stays near its last value for a tenth of the forecast, and
# for at least this many steps: a week of daily runs.
SETTLED_STEPS = 7
Trend = Literal["steady", "growing", "falling", "changing"]


def trend(counts: Sequence[int]) -> Trend:
    """Whether ``counts`` end settled ("steady": within steady_tolerance of the last count
    for the last tenth of the steps, and at least SETTLED_STEPS), else which way they still
    go over that stretch: a policy that keeps 366 dailies grows for a year."""
    index = steady_index(counts)
    # A forecast of a few steps cannot wait a week: half of it will do.
    stretch = min(max(SETTLED_STEPS, len(counts) // 10), max(1, (len(counts) - 1) // 2))
    if index is None or len(counts) - 1 - index >= stretch:
        return "steady"
    earlier = counts[max(0, len(counts) - 1 - stretch)]
    if counts[-1] == earlier:
        return "changing"
    return "growing" if counts[-1] > earlier else "falling"


def forecast_cluster(  # noqa: PLR0913 - a cluster, its policies and cadence, and the times it is run forward over
    target: Target,
    snapshots: Sequence[SnapshotView],
    policies: Sequence[LoadedPolicy],
    cadence: Cadence,
    *,
    start: datetime,
    steps: int,
    step: timedelta,
    lease_for: timedelta,
    approve_held: bool = True,
) -> ClusterForecast:
    """Run the cluster forward ``steps`` steps of ``step`` from ``start`` (step 0 is a run
    at ``start`` on today's snapshots). See the module docstring."""
    result = ClusterForecast(target, cadence, sorted(p.name for p in policies))
    live = {s.id: s for s in snapshots}
    decided: ClusterDecisions | None = None
    for k in range(steps + 1):
        now = start + k * step
        if k:
            _take(live, cadence, start + (k - 1) * step, now)
        reaped = _reap(live, now)  # today's too: a snapshot past its expiry is as good as gone
        if not k:
            result.awaiting_deletion = reaped
        cluster = ClusterView(target, list(live.values()))
        decided = decide(cluster, policies, now=now, lease_for=lease_for, reasons=False)
        _apply(live, decided, approve_held=approve_held)
        result.steps.append(_measure(now, live, decided))
    # The ladder of the last step only: the others need only their oldest restore point.
    restorable = None if decided is None else describe_restore_points(decided, now)
    result.ladder = None if restorable is None else restorable.ladder
    return result


def _take(
    live: dict[str, SnapshotView], cadence: Cadence, after: datetime, until: datetime
) -> None:
    for moment in cadence.taken(after, until):
        expires = cadence.expiry.expires(moment)
        snapshot_id = f"forecast-{moment.isoformat()}"  # strftime took a third of a step's take
        live[snapshot_id] = SnapshotView(
            snapshot_id, moment, True, False, expires, True, cadence.size_at(moment)
        )


def _reap(live: dict[str, SnapshotView], now: datetime) -> int:
    """Take out the snapshots whose expiry has passed; how many there were."""
    gone = [s.id for s in live.values() if awaiting_deletion(s, now)]
    for snapshot_id in gone:
        del live[snapshot_id]
    return len(gone)


def _apply(live: dict[str, SnapshotView], decided: ClusterDecisions, *, approve_held: bool) -> None:
    """The service applies what the run sends (and what an approval lets through)."""
    approvable = all(h.kind == "max_expire_fraction" for h in decided.holds)
    for d in decided.decisions:
        if d.patch is None or d.advisory:
            continue
        if d.held is not None and not (approve_held and approvable):
            continue
        s, patch = d.snapshot, d.patch
        if patch.do_not_delete is True:
            live[s.id] = msgspec.structs.replace(s, do_not_delete=True, expires=None)
        elif patch.do_not_delete is False:
            live[s.id] = msgspec.structs.replace(s, do_not_delete=False, expires=patch.expires)
        else:
            live[s.id] = msgspec.structs.replace(s, expires=patch.expires)


def _measure(now: datetime, live: dict[str, SnapshotView], decided: ClusterDecisions) -> Step:
    return Step(
        now,
        len(live),
        sum(s.storage_bytes or 0 for s in live.values()),
        min(restore_points(decided, now), default=None),
    )
