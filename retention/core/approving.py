"""What approving a held cluster costs, in the words a reviewer decides with: the restore
points approving takes away (its ladder as the plan stands against its ladder if approved),
the held changes summed up, and how far each change cuts an expiry the snapshot already
has. Pure: decisions and ladders in, values out.

A cut is the time a change takes off an expiry the snapshot already has (set by the
service's own schedule or by a person): a snapshot due to expire in 2027-10 that the plan
shortens to the grace period loses ten months. A cut of ``LONG_CUT`` or more is long: the
change a reviewer most needs to see, flagged wherever the change is shown.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from retention.core.model import ClusterDecisions, Decision
from retention.core.restorepoints import Ladder, Tier
from retention.core.wording import counted, plural

# A cut of at least this much is flagged: more than a month taken off an existing expiry.
LONG_CUT = timedelta(days=30)


def cut_seconds(decision: Decision) -> int | None:
    """How many seconds ``decision``'s change takes off the snapshot's existing expiry
    (None: it writes no earlier expiry than the snapshot has, or the snapshot has none)."""
    cut = cut_of(decision)
    return None if cut is None else cut.seconds


def is_long_cut(seconds: int | None) -> bool:
    """True for a cut of ``LONG_CUT`` or more."""
    return seconds is not None and seconds >= LONG_CUT.total_seconds()


def cut_span(seconds: int) -> str:
    """ "306 days", "5 hours": a cut in the largest unit that reads whole."""
    days = seconds // 86400
    if days >= 1:
        return counted(days, "day")
    return counted(max(1, seconds // 3600), "hour")


def cut_words(seconds: int) -> str:
    """ "cut by 306 days", "cut by 5 hours" (cut_span)."""
    return f"cut by {cut_span(seconds)}"


@dataclass(frozen=True)
class Cut:
    """What a change takes off a snapshot's expiry: which snapshot, how many seconds, the
    expiry it has and the one the change writes."""

    snapshot_id: str
    seconds: int
    expires: datetime
    after: datetime


def cut_of(decision: Decision) -> Cut | None:
    """The cut of ``decision``'s change (None: it writes no expiry a second or more earlier
    than the one the snapshot has, or the snapshot has none)."""
    patch, current = decision.patch, decision.snapshot.expires
    if patch is None or patch.expires is None or current is None:
        return None
    seconds = int((current - patch.expires).total_seconds())
    return Cut(decision.snapshot.id, seconds, current, patch.expires) if seconds >= 1 else None


@dataclass(frozen=True)
class HeldCost:
    """A held cluster's changes summed up: how many by action, the storage they would give
    back, the oldest snapshot they touch, the largest cut of an existing expiry and how many
    cuts are long."""

    by_action: dict[str, int]
    storage_bytes: int
    oldest_id: str
    oldest_created: datetime
    largest_cut: Cut | None
    long_cuts: int


def held_changes(decided: ClusterDecisions) -> list[Decision]:
    """The changes of ``decided`` a safety gate holds and an approval would send: none for
    a config server, whose changes are advisory (never sent, held or not)."""
    if decided.target.kind != "cluster":
        return []
    return [d for d in decided.decisions if d.held is not None and d.patch is not None]


def held_cost(decided: ClusterDecisions) -> HeldCost | None:
    """The cost of approving ``decided``'s held changes (None: there is none to approve)."""
    held = held_changes(decided)
    if not held:
        return None
    oldest = min(held, key=lambda d: (d.snapshot.created, d.snapshot.id))
    cuts = [cut for d in held if (cut := cut_of(d)) is not None]
    largest = max(cuts, key=lambda c: (c.seconds, c.snapshot_id), default=None)
    return HeldCost(
        by_action=dict(sorted(Counter(d.action for d in held).items())),
        storage_bytes=sum(d.snapshot.storage_bytes or 0 for d in held if d.destructive),
        oldest_id=oldest.snapshot.id,
        oldest_created=oldest.snapshot.created,
        largest_cut=largest,
        long_cuts=sum(1 for cut in cuts if is_long_cut(cut.seconds)),
    )


def removed_words(as_planned: Ladder, if_approved: Ladder) -> str:
    """What approving takes from the restore points, read off the two ladders: "approving
    removes 238 restore points: daily 8-30, weekly 10-52; oldest moves from 2025-11-01 to
    2026-08-31", or that it removes none."""
    lost = as_planned.points - if_approved.points
    if lost <= 0:
        return "approving removes no restore point"
    parts = [text for tier in as_planned.tiers if (text := _tier_loss(tier, if_approved))]
    what = f"approving removes {counted(lost, 'restore point')}"
    if parts:
        what += ": " + ", ".join(parts)
    if if_approved.oldest is None:
        return what + "; none is left"
    if as_planned.oldest is not None and as_planned.oldest != if_approved.oldest:
        what += f"; oldest moves from {_day(as_planned.oldest)} to {_day(if_approved.oldest)}"
    return what


def _tier_loss(tier: Tier, if_approved: Ladder) -> str | None:
    """The stretch of ``tier`` that approving leaves without its points: "daily 8-30" (the
    8th to the 30th day back), "weekly (all 52 weeks)", or None when it keeps the tier."""
    same = (tier.grain, tier.unit)
    kept = next((t for t in if_approved.tiers if (t.grain, t.unit) == same), None)
    if kept is None:
        return f"{tier.every} (all {counted(tier.span, tier.unit)})"
    if kept.span >= tier.span:
        return None
    first, last = kept.span + 1, tier.span
    stretch = str(first) if first == last else f"{first}-{last}"
    if tier.grain == "sub-daily":  # its unit is hours or days: say which
        stretch += f" {plural(tier.unit, last)}"
    return f"{tier.every} {stretch}"


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")
