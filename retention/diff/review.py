"""The review as a job: one read-only walk of the fleet, each cluster decided twice (base
policies, current policies) at one ``now``, and the difference kept.

Only the difference of a cluster that changes is kept (core.compare.ClusterDiff: the
snapshots whose fate changes, not every decision), and an unchanged cluster is only
counted, so memory holds the walk's window of clusters and what the change does, whatever
the size of the fleet. One process decides both sides: a review is one pass that nobody
waits on at three in the morning, and twice the CPU of a plan's deciding is still small
beside the walk.

Nothing is sent, written or locked: the client only reads (a read-only key is enough).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from retention.api.client import OpsManagerClient
from retention.config.scope import Scope
from retention.core.compare import ClusterDiff, compare
from retention.core.horizon import lease
from retention.core.policy.loader import PolicySet
from retention.ops.stopping import Stop
from retention.plan.workers import Shared
from retention.walk.inventory import WalkListener, survey_fleet, walk_all


@dataclass
class Review:
    """What the current policies do to the fleet against the base policies."""

    evaluated_at: datetime
    diffs: list[ClusterDiff] = field(default_factory=list)  # changed clusters, largest first
    compared: int = 0  # clusters walked and decided on both sides
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)  # survey and walk errors

    @property
    def keeps_less(self) -> bool:
        """True when the current policies stop keeping a snapshot the base keeps."""
        return any(d.keeps_less for d in self.diffs)

    def totals(self) -> Totals:
        """The counts every output's summary gives."""
        shifts = Counter(s.shift for d in self.diffs for s in d.shifts)
        return Totals(
            changed=len(self.diffs),
            keeping_less=sum(1 for d in self.diffs if d.keeps_less),
            stops_keeping=shifts["stops keeping"],
            newly_keeps=shifts["newly keeps"],
            newly_protects=shifts["newly protects"],
            stops_protecting=shifts["stops protecting"],
            bytes_given_back=sum(d.bytes_given_back for d in self.diffs),
            bytes_newly_kept=sum(d.bytes_newly_kept for d in self.diffs),
            holds_added=sum(len(d.holds_added) for d in self.diffs),
            holds_gone=sum(len(d.holds_gone) for d in self.diffs),
        )


@dataclass(frozen=True)
class Totals:
    """A review in counts: clusters, snapshots by shift, bytes and holds."""

    changed: int
    keeping_less: int  # clusters where the current policies stop keeping a snapshot
    stops_keeping: int
    newly_keeps: int
    newly_protects: int
    stops_protecting: int
    bytes_given_back: int
    bytes_newly_kept: int
    holds_added: int
    holds_gone: int


def review(
    client: OpsManagerClient,
    base: PolicySet,
    scope: Scope,
    *,
    now: datetime,
    listener: WalkListener | None = None,
) -> Review:
    """Walk every target of ``scope`` once, decide each with the ``base`` policies and the
    scope's as of ``now``, and keep the difference; the ``listener`` hears how many targets
    there are, then each one walked. StopRequestedError when the client's stop is asked
    for."""
    concurrency, stop = scope.concurrency, client.stop or Stop()
    found = survey_fleet(client, scope.projects, concurrency=concurrency)
    if listener is not None:
        listener.walks(len(found.targets))
    heard = listener.walk if listener is not None else None
    lease_for = lease(scope.schedule, now, scope.lease_minimum)
    sides = [
        Shared(policies, found.alerts, found.unread, now, lease_for)
        for policies in (base, scope.policies)
    ]
    result = Review(now, errors=list(found.errors))
    for walk in walk_all(client, found.targets, concurrency=concurrency, on_done=heard):
        stop.check("comparing the next cluster")
        target = walk.target
        if walk.error:
            result.errors.append(f"{target.kind} {target.cluster_id}: {walk.error}")
        before, after = (side.plan(target, walk.snapshots, walk.error) for side in sides)
        diff = compare(before, after)
        result.compared += 1
        if diff.changed:
            result.diffs.append(diff)
        else:
            result.unchanged += 1
    result.diffs.sort(key=_largest_first)
    return result


def _largest_first(diff: ClusterDiff) -> tuple[int, int, int, str, str]:
    lost, given_back, shifts = diff.weight
    return (-lost, -given_back, -shifts, diff.target.name, diff.target.cluster_id)
