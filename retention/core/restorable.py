"""What a cluster can be restored to once its decisions are applied: the ladder of its
restore points (retention.core.restorepoints) and the freshness of its newest restorable
snapshot (retention.core.freshness). Read off decide's result, apart from deciding: a plan
describes every cluster it walked in full, a forecast's steps need only the oldest restore
point. Pure: no I/O, no clock.

Restorable, for the freshness, is any complete, consistent snapshot not awaiting deletion;
the ladder's restore points are those of them the plan leaves in place: the snapshots it
keeps, and those whose destructive change a safety gate holds (not sent, they stay as they
are). A cluster with held changes is described three times, for whoever decides whether to
approve them: today (every restorable snapshot), as the plan stands, and if approved (its
held changes sent too).
"""

from __future__ import annotations

from datetime import datetime

from retention.core.approving import held_changes
from retention.core.decide import uncounted
from retention.core.freshness import freshness
from retention.core.model import ClusterDecisions, Decision, Restorable
from retention.core.restorepoints import ladder_of

# The states of a snapshot the plan leaves in place: the cluster's restore points, when
# complete and consistent.
RESTORE_STATES = frozenset({"kept", "protected", "manual-hold", "unmatched"})


def describe_restore_points(decided: ClusterDecisions, now: datetime) -> Restorable | None:
    """The ladder of the cluster's restore points and the freshness of its backups, as of
    ``now`` (decide's); None when not all its snapshots were read (``decided.walked``):
    part of them may be missing."""
    if not decided.walked:
        return None
    usable = _restorable(decided, now)
    restorable = [d.snapshot.created for d in usable]
    fresh = freshness(
        restorable, now, within=decided.newest_within, any_snapshot=bool(decided.decisions)
    )
    left = _leaves_in_place(decided, usable)
    stays = [d.snapshot.created for d in usable if d.held is not None]
    as_planned = ladder_of([*left, *stays])
    if not held_changes(decided):
        return Restorable(as_planned, fresh)
    return Restorable(as_planned, fresh, ladder_of(restorable), ladder_of(left))


def restore_points(decided: ClusterDecisions, now: datetime) -> list[datetime]:
    """When the cluster's restore points were taken: its complete, consistent snapshots not
    awaiting deletion that the plan leaves in place (kept, protected, held by hand, or of a
    cluster no policy matches: whose decisions say "unmatched" even for one whose expiry
    has passed). A config server's decisions are advisory, never sent: every one of its
    restorable snapshots stays as the service keeps it, whatever they say."""
    return _leaves_in_place(decided, _restorable(decided, now))


def _restorable(decided: ClusterDecisions, now: datetime) -> list[Decision]:
    """The decisions of the complete, consistent snapshots not awaiting deletion: those
    the rules count (``uncounted`` says None)."""
    return [d for d in decided.decisions if uncounted(d.snapshot, now) is None]


def _leaves_in_place(decided: ClusterDecisions, restorable: list[Decision]) -> list[datetime]:
    advisory = decided.target.kind == "config-server"
    return [d.snapshot.created for d in restorable if advisory or d.state in RESTORE_STATES]
