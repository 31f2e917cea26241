"""The plan file's entries made from the core's values, and back: a cluster's restore
points (the ladder and its tiers), its freshness and a hold, as plan.json and the review
and forecast documents write them (retention.core.planfile holds the model)."""

from __future__ import annotations

from retention.core.approving import HeldCost, removed_words
from retention.core.freshness import Freshness
from retention.core.model import Hold, Restorable
from retention.core.planfile import (
    FreshnessEntry,
    HeldChangesEntry,
    HoldEntry,
    RestorePointsEntry,
    TierEntry,
)
from retention.core.restorepoints import Ladder, Missing, Tier


def restore_points_entry(ladder: Ladder) -> RestorePointsEntry:
    """A ladder as plan.json and the JSON outputs carry it."""
    return {
        "count": ladder.points,
        "newest": ladder.newest,
        "oldest": ladder.oldest,
        "gaps": ladder.has_gaps,
        "tiers": [
            {
                "grain": t.grain,
                "every": t.every,
                "everySeconds": t.every_seconds,
                "reaches": t.reaches,
                "points": t.points,
                "span": t.span,
                "unit": t.unit,
                "missing": [
                    {
                        "after": m.after,
                        "before": m.before,
                        "count": m.count,
                        "unit": m.unit,
                        "first": m.first,
                        "last": m.last,
                    }
                    for m in t.missing
                ],
                "text": t.words(),
            }
            for t in ladder.tiers
        ],
        "text": ladder.words(),
    }


def cluster_restore_points(restorable: Restorable) -> RestorePointsEntry:
    """A cluster's ``restorePoints`` in plan.json: its ladder as the plan stands and, when
    it has held changes, its three ladders and what approving removes."""
    entry = restore_points_entry(restorable.ladder)
    today, if_approved = restorable.today, restorable.if_approved
    if today is not None and if_approved is not None:
        entry["today"] = restore_points_entry(today)
        entry["asPlanned"] = restore_points_entry(restorable.ladder)
        entry["ifApproved"] = restore_points_entry(if_approved)
        entry["approving"] = removed_words(restorable.ladder, if_approved)
    return entry


def held_changes_entry(cost: HeldCost) -> HeldChangesEntry:
    """A held cluster's ``heldChanges`` in plan.json."""
    cut = cost.largest_cut
    return {
        "byAction": cost.by_action,
        "bytes": cost.storage_bytes,
        "oldestSnapshotId": cost.oldest_id,
        "oldestCreated": cost.oldest_created,
        "largestCut": None
        if cut is None
        else {
            "snapshotId": cut.snapshot_id,
            "cutSeconds": cut.seconds,
            "expires": cut.expires,
            "expiresAfter": cut.after,
        },
        "longCuts": cost.long_cuts,
    }


def tier_of(entry: TierEntry) -> Tier:
    """A tier of a ``restorePoints`` entry as ``restore_points_entry`` wrote it, so that its
    words come from ``retention.core.restorepoints`` alone."""
    missing = tuple(Missing(**m) for m in entry["missing"])
    return Tier(
        entry["grain"],
        entry["everySeconds"],
        entry["reaches"],
        entry["points"],
        entry["span"],
        entry["unit"],
        missing,
    )


def freshness_entry(fresh: Freshness) -> FreshnessEntry:
    """The freshness of a cluster's backups as plan.json carries it."""
    return {
        "newest": fresh.newest,
        "ageSeconds": fresh.age_seconds,
        "withinSeconds": fresh.within_seconds,
        "expectedFrom": fresh.source,
        "stale": fresh.stale,
        "text": fresh.words(),
    }


def hold_entry(hold: Hold) -> HoldEntry:
    """A cluster's hold as plan.json (and the diff's JSON) writes it."""
    return {
        "kind": hold.kind,
        "reason": hold.reason,
        "alertId": hold.alert_id,
        "setting": hold.setting,
    }
