"""The holds on a cluster's destructive changes, after each snapshot is decided.

Ids a plan cannot carry (retention.core.ids) hold the cluster: such a snapshot gets no
change, and a kept one may need an extension that cannot be sent. Matching OPEN alerts, a
failed walk, and more than max_expire_fraction of the counted snapshots expiring hold every
destructive change of the cluster; protect and extend still go ahead.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from retention.core.ids import carries, id_problem
from retention.core.merged import Merged
from retention.core.model import AlertView, Decision, Hold, Target, note
from retention.core.wording import counted, decimal_text, share_above


def hold_uncarried(decisions: list[Decision]) -> tuple[list[Decision], Hold | None]:
    """Snapshots whose ids a plan cannot carry get no change (the rules still count them),
    and hold the cluster: a kept one may need an extension that cannot be sent, so what the
    rules leave to expire beside it waits for a person. The decisions with theirs changed,
    and the hold (``decisions`` itself and None when every id is carried)."""
    odd = [d for d in decisions if not carries(d.snapshot.id)]
    if not odd:  # every real cluster: one regular-expression match a snapshot
        return decisions, None
    named = "; ".join(f"{d.snapshot.id!r}: {id_problem(d.snapshot.id)}" for d in odd[:3])
    more = f"; and {len(odd) - 3} more" if len(odd) > 3 else ""
    hold = Hold(
        "id",
        f"{counted(len(odd), 'snapshot id')} cannot be carried by a plan ({named}{more}): "
        "never changed, and the cluster's destructive changes are held",
    )
    return [d if carries(d.snapshot.id) else _never_changed(d) for d in decisions], hold


def _never_changed(d: Decision) -> Decision:
    """The decision of a snapshot whose id a plan cannot carry: no change, and why."""
    why = id_problem(d.snapshot.id)
    reason = note("id", f"its id cannot be carried by a plan ({why}): never changed")
    return msgspec.structs.replace(
        d, reasons=[*d.reasons, reason], action="none", patch=None, expires_after=d.snapshot.expires
    )


def gate_holds(
    decisions: Sequence[Decision],
    target: Target,
    merged: Merged,
    alerts: Sequence[AlertView],
    walk_error: str | None,
    outside: str | None = None,
) -> list[Hold]:
    """The holds the gates put on the cluster's destructive changes: a failed walk, matching
    OPEN alerts, changes made outside retention (``outside``: why, when the ledger saw any,
    and a policy says safety.hold_on_outside_change), more than max_expire_fraction
    expiring; none when it has no destructive change."""
    # Most decisions change nothing: their action says so before the property is asked.
    destructive = sum(d.action != "none" and d.destructive for d in decisions)
    if not destructive:
        return []
    holds: list[Hold] = []
    if walk_error:
        holds.append(Hold("walk", f"incomplete information: {walk_error}"))
    for alert in sorted(alerts, key=lambda a: a.id):
        if alert.event_type in merged.hold_on_alerts and alert.names(target):
            reason = f"OPEN alert {alert.event_type} ({alert.id})"
            setting = merged.alert_setting(alert.event_type)
            holds.append(Hold("alert", reason, alert_id=alert.id, setting=setting))
    if outside and merged.hold_on_outside_change:
        holds.append(Hold("outside", outside, setting=merged.outside_setting()))
    eligible = sum(d.state not in ("incomplete", "awaiting-deletion") for d in decisions)
    share = destructive / eligible if eligible else 1.0
    if share > merged.max_expire_fraction:
        # The share is of the snapshots that count; the tables count all of them, so the
        # reason says how the two differ.
        left_out = len(decisions) - eligible
        aside = (
            f"; {left_out} of the cluster's {counted(len(decisions), 'snapshot')} not counted "
            "(incomplete or awaiting deletion)"
            if left_out
            else ""
        )
        # The share with the decimals that show it above the limit: 95.2%, never a
        # rounded 95% "more than" 0.95.
        limit = merged.max_expire_fraction
        percent = share_above(destructive, eligible, limit) if eligible else "100%"
        holds.append(
            Hold(
                "max_expire_fraction",
                f"{destructive} of {counted(eligible, 'snapshot')} would expire ({percent}), "
                f"more than max_expire_fraction {decimal_text(limit)}{aside}",
                setting=merged.fraction_setting(),
            )
        )
    return holds


def held(decisions: list[Decision], holds: Sequence[Hold]) -> list[Decision]:
    """``decisions`` with every destructive change held by ``holds`` (``decisions`` itself
    when there is no hold)."""
    if not holds:
        return decisions
    text = "; ".join(h.reason for h in holds)
    return [
        msgspec.structs.replace(d, held=text) if d.action != "none" and d.destructive else d
        for d in decisions
    ]
