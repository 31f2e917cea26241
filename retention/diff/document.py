"""A review as one JSON document (`retention diff --format json`): every changed cluster
with every snapshot whose fate changes, in the conventions of the other commands'
documents (camelCase keys; timestamps are datetimes here, written in UTC with ``Z`` by
the command line's emit). docs/commands.md lists the keys.
"""

from __future__ import annotations

from typing import Any

from retention.config.baseline import Baseline
from retention.core.compare import ClusterDiff, SnapshotShift
from retention.core.planvalues import hold_entry, restore_points_entry
from retention.core.policy.loader import PolicySet
from retention.diff.review import Review


def review_document(
    review: Review,
    base: Baseline,
    current: PolicySet,
    *,
    exit_code: int,
    what_if: bool,
) -> dict[str, Any]:
    """The whole review: what was compared, the summary, the changed clusters."""
    t = review.totals()
    return {
        "command": "diff",
        "exitCode": exit_code,
        "base": base.entry(),
        "currentPolicies": sorted(p.name for p in current),
        "evaluatedAt": review.evaluated_at,
        "whatIf": what_if,
        "summary": {
            "clustersCompared": review.compared,
            "clustersChanged": t.changed,
            "clustersKeepingLess": t.keeping_less,
            "snapshotsNoLongerKept": t.stops_keeping,
            "snapshotsNewlyKept": t.newly_keeps,
            "snapshotsNewlyProtected": t.newly_protects,
            "snapshotsNoLongerProtected": t.stops_protecting,
            "bytesGivenBack": t.bytes_given_back,
            "bytesNewlyKept": t.bytes_newly_kept,
            "holdsAdded": t.holds_added,
            "holdsLifted": t.holds_gone,
            "errors": len(review.errors),
        },
        "clusters": [cluster_entry(diff) for diff in review.diffs],
        "unchangedClusters": review.unchanged,
        "errors": review.errors,
    }


def cluster_entry(diff: ClusterDiff) -> dict[str, Any]:
    """One changed cluster, every shift of it."""
    t = diff.target
    return {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "clusterName": t.name,
        "kind": t.kind,
        "policiesBefore": diff.policies_before,
        "policiesAfter": diff.policies_after,
        "keepsLess": diff.keeps_less,
        "snapshotsNoLongerKept": len(diff.of("stops keeping")),
        "snapshotsNewlyKept": len(diff.of("newly keeps")),
        "bytesGivenBack": diff.bytes_given_back,
        "bytesNewlyKept": diff.bytes_newly_kept,
        "shifts": [shift_entry(s) for s in diff.shifts],
        "holdsAdded": [hold_entry(h) for h in diff.holds_added],
        "holdsLifted": [hold_entry(h) for h in diff.holds_gone],
        # Each side's holds in its own words: a fraction hold counts that side's snapshots.
        "holdsBefore": [hold_entry(h) for h in diff.holds_before],
        "holdsAfter": [hold_entry(h) for h in diff.holds_after],
        "errors": diff.errors,
        "restorePointsBefore": (
            restore_points_entry(diff.ladder_before) if diff.ladder_before else None
        ),
        "restorePointsAfter": (
            restore_points_entry(diff.ladder_after) if diff.ladder_after else None
        ),
    }


def shift_entry(shift: SnapshotShift) -> dict[str, Any]:
    """One snapshot whose fate (or protection) changes."""
    return {
        "snapshotId": shift.snapshot_id,
        "created": shift.created,
        "storageBytes": shift.storage_bytes,
        "shift": shift.shift,
        "before": shift.before,
        "after": shift.after,
        "deletableFrom": shift.deletable_from,
        "held": shift.held,
        "whyBefore": shift.why_before,
        "whyAfter": shift.why_after,
    }
