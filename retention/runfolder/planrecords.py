"""The records of plan.json and decisions.jsonl, built from the core's decisions: a
decision's line, a change's entry, a cluster's entry and its hold records, each the typed
record of retention.core.planfile (planwrite.py encodes and writes them).

Datetimes stay datetimes, in UTC: encode_line writes them as the API does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from retention.core.approving import cut_seconds, held_cost
from retention.core.model import ClusterDecisions, ClusterPlan, Decision, HoldRecordView
from retention.core.planfile import (
    Body,
    Change,
    ClusterEntry,
    DecisionRecord,
    HoldRecordEntry,
)
from retention.core.planvalues import (
    cluster_restore_points,
    freshness_entry,
    held_changes_entry,
    hold_entry,
)
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import to_utc


def _utc(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo is UTC else to_utc(value)


def patch_body(patch: SnapshotPatch) -> Body:
    """A PATCH's body as the plan and the journal write it (``expires`` still a datetime,
    which encode_line writes as the API does)."""
    body: Body = {}
    if patch.do_not_delete is not None:
        body["doNotDelete"] = patch.do_not_delete
    if patch.expires is not None:
        body["expires"] = patch.expires
    return body


def decision_record(decided: ClusterDecisions, d: Decision) -> DecisionRecord:
    """One line of decisions.jsonl: everything needed to explain this snapshot."""
    t, s = decided.target, d.snapshot
    record: DecisionRecord = {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "clusterName": t.name,
        "kind": t.kind,
        "snapshotId": s.id,
        "created": to_utc(s.created),
        "storageBytes": s.storage_bytes,
        "complete": s.complete,
        "consistent": s.consistent,
        # What compare-and-swap checks at apply time (SnapshotView.observed, unformatted).
        "observed": {"doNotDelete": s.do_not_delete, "expires": _utc(s.expires)},
        "state": d.state,
        "action": d.action,
        "destructive": d.destructive,
        "reasons": d.reasons,
        "policies": d.policies,
        "expiresAfter": _utc(d.expires_after),
        "body": patch_body(d.patch) if d.patch is not None else None,
        "held": d.held,
        "advisory": d.advisory,
        "grace": decided.grace_seconds,
    }
    if (cut := cut_seconds(d)) is not None:
        record["cutSeconds"] = cut
    return record


def change_record(record: DecisionRecord, grace: int) -> Change:
    """One entry of ``changes`` (or ``held``/``advisory``), from the decision's record."""
    action = record["action"]
    # Only decisions with a patch get here.
    assert record["body"] is not None  # noqa: S101
    assert action != "none"  # noqa: S101
    entry: Change = {
        "projectId": record["projectId"],
        "clusterId": record["clusterId"],
        "clusterName": record["clusterName"],
        "snapshotId": record["snapshotId"],
        "created": record["created"],
        "storageBytes": record["storageBytes"],
        "action": action,
        "destructive": record["destructive"],
        "grace": grace,
        "observed": record["observed"],
        "body": record["body"],
        "policy": ", ".join(record["policies"]) or "safety",
        "reasons": record["reasons"],
        "expiresAfter": record["expiresAfter"],
    }
    if record["held"]:
        entry["held"] = record["held"]
    if (cut := record.get("cutSeconds")) is not None:
        entry["cutSeconds"] = cut
    return entry


def cluster_entry(
    plan: ClusterPlan, counts: dict[str, int], entries: Mapping[str, list[DecisionRecord]]
) -> ClusterEntry:
    """The cluster's entry in plan.json's ``clusters``: what it is, its holds and errors,
    ``counts`` of its snapshots, and what the ``entries`` of its lists give back or hold."""
    decided, restorable = plan.decided, plan.restorable
    t = decided.target
    entry: ClusterEntry = {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "name": t.name,
        "kind": t.kind,
        "typeName": t.type_name,
        "members": [
            {
                "clusterId": m.cluster_id,
                "typeName": m.type_name,
                "shardName": m.shard_name,
                "replicaSetName": m.replica_set_name,
            }
            for m in t.members
        ],
        "policies": list(decided.policies),
        "holds": [hold_entry(h) for h in decided.holds],
        "errors": list(decided.errors),
        "counts": dict(sorted(counts.items())),
        "graceSeconds": decided.grace_seconds,
        "releaseProtection": decided.release_protection,
        "bytesGivenBack": _bytes(entries["changes"]),
        "bytesHeld": _bytes(entries["held"]),
        "expiresFrom": min(
            (
                c["expiresAfter"]
                for c in entries["changes"]
                if c["destructive"] and c["expiresAfter"]
            ),
            default=None,
        ),
    }
    if restorable is not None:
        entry["restorePoints"] = cluster_restore_points(restorable)
        if restorable.freshness is not None:
            entry["newestRestorable"] = freshness_entry(restorable.freshness)
    if (cost := held_cost(decided)) is not None:
        entry["heldChanges"] = held_changes_entry(cost)
    return entry


def hold_record_entry(decided: ClusterDecisions, view: HoldRecordView) -> HoldRecordEntry:
    """A hold record as plan.json lists it; the cluster is ``decided``'s when its snapshot
    is among the cluster's (``view.state`` is not None)."""
    record, t, found = view.record, decided.target, view.state is not None
    return {
        "policy": view.policy,
        "snapshotId": record.id,
        "reason": record.reason,
        "ticket": record.ticket,
        "until": record.until,
        "ends": _utc(record.ends),
        "inForce": view.in_force,
        "setting": view.setting,
        "projectId": t.project_id if found else None,
        "clusterId": t.cluster_id if found else None,
        "clusterName": t.name if found else None,
        "state": view.state,
    }


def _bytes(changes: list[DecisionRecord]) -> int:
    return sum(c["storageBytes"] or 0 for c in changes if c["destructive"])
