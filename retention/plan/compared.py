"""Deciding a walked cluster with the ledger beside it: the walk compared with what the
ledger last knew of the cluster (core.outside.cluster_drift), a cluster with a change made
outside retention that nobody acknowledged held, then decided as any plan decides it.

It runs where the cluster is decided: on a worker process of the plan's pool, which reads
the ledger on a connection of its own (retention.ledger.sight), or in the plan's process
for a small plan. Either way the plan's main process, which walks the fleet and writes the
plan, only records what comes back: a steady plan of the bench fleet compares 600,000
snapshots, as much CPU as that process has to spare for the whole plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from retention.core.model import Target
from retention.core.outside import ClusterDrift, cluster_drift, hold_reason, with_alerts
from retention.ledger.sight import LedgerSight
from retention.plan.workers import Shared, pack_snapshots, unpack_snapshots
from retention.runfolder.planwrite import EncodedCluster
from retention.walk.inventory import Walk


@dataclass(frozen=True)
class Decided:
    """One walked target, decided and encoded, and what the ledger's comparison found of it
    (None: a plan without a ledger)."""

    target: Target
    cluster: EncodedCluster
    drift: ClusterDrift | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # From a worker back to the plan: a cluster's new snapshots (all of the fleet's, on
        # a ledger's first plan) go as one msgpack blob, as the walks come (workers.py):
        # pickle takes ten times as long with them, on the plan's busiest process.
        drift = self.drift
        if drift is None or not drift.new:
            return (Decided, (self.target, self.cluster, drift))
        bare = replace(drift, new=[])
        return (_decided, (self.target, self.cluster, bare, pack_snapshots(drift.new)))


def _decided(target: Target, cluster: EncodedCluster, drift: ClusterDrift, new: bytes) -> Decided:
    return Decided(target, cluster, replace(drift, new=unpack_snapshots(new)))


@dataclass(frozen=True)
class Comparing:
    """A plan's deciding (``shared``), each walk first compared with the ledger (``sight``;
    None: no ledger) as it was at ``walked`` (the plan's time, not a what-if's)."""

    shared: Shared
    sight: LedgerSight | None
    walked: datetime

    def decide_walk(self, walk: Walk) -> Decided:
        """The walked cluster compared, held if the comparison says so, and decided."""
        if self.sight is None:
            return Decided(walk.target, self.shared.decide_walk(walk))
        target = walk.target
        drift = self.drift(self.sight, walk)
        reason = hold_reason(drift.outside, self.sight.attention_of(target), target.name)
        cluster = self.shared.decide(target, walk.snapshots, walk.error, reason)
        return Decided(target, cluster, drift)

    def drift(self, sight: LedgerSight, walk: Walk) -> ClusterDrift:
        """What changed of the walked target since the ledger last looked (nothing for a
        walk that failed: what it did not list is not gone), its audit alerts named; a walk
        that lists exactly what the last one did, with no change of ours since, reads no
        snapshot row of the ledger (LedgerSight.compare)."""
        if walk.error is not None:
            return ClusterDrift()
        target = walk.target
        found = sight.compare(target, walk.snapshots)
        drift = cluster_drift(
            target, found.known, found.walked, self.walked, unchanged=found.unchanged
        )
        drift.digest, drift.version = found.digest, found.version
        if drift.outside:
            alerts = self.shared.alerts.get(target.project_id, [])
            drift.outside = with_alerts(drift.outside, alerts, {target.cluster_id: target})
        return drift
