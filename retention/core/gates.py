"""The holds on a cluster's destructive changes, after each snapshot is decided.

Ids a plan cannot carry (retention.core.ids) hold the cluster: such a snapshot gets no
change, and a kept one may need an extension that cannot be sent. Matching OPEN alerts, a
failed walk, and more than max_expire_fraction of the counted snapshots expiring hold every
destructive change of the cluster; protect and extend still go ahead.
"""

from __future__ import annotations

from collections.abc import Sequence

from retention.core.ids import carries, id_problem
from retention.core.merged import Merged
from retention.core.model import AlertView, ClusterPlan, Hold, note
from retention.core.wording import counted


def hold_uncarried(plan: ClusterPlan) -> None:
    """Snapshots whose ids a plan cannot carry get no change (the rules still count them),
    and hold the cluster: a kept one may need an extension that cannot be sent, so what the
    rules leave to expire beside it waits for a person."""
    odd = [d for d in plan.decisions if not carries(d.snapshot.id)]
    if not odd:  # every real cluster: one regular-expression match a snapshot
        return
    named: list[str] = []
    for d in odd:
        why = id_problem(d.snapshot.id)
        d.reasons = [
            *d.reasons,
            note("id", f"its id cannot be carried by a plan ({why}): never changed"),
        ]
        d.action, d.patch, d.expires_after = "none", None, d.snapshot.expires
        if len(named) < 3:
            named.append(f"{d.snapshot.id!r}: {why}")
    more = f"; and {len(odd) - 3} more" if len(odd) > 3 else ""
    plan.holds.append(
        Hold(
            "id",
            f"{counted(len(odd), 'snapshot id')} cannot be carried by a plan "
            f"({'; '.join(named)}{more}): never "
            "changed, and the cluster's destructive changes are held",
        )
    )


def hold_destructive(
    plan: ClusterPlan, merged: Merged, alerts: Sequence[AlertView], walk_error: str | None
) -> None:
    """Hold every destructive change of the cluster when a gate says so, or an id hold
    (added by hold_uncarried, with or without destructive changes) is already there."""
    # Most decisions change nothing: their action says so before the property is asked.
    destructive = [d for d in plan.decisions if d.action != "none" and d.destructive]
    if not destructive:
        return
    holds: list[Hold] = []
    if walk_error:
        holds.append(Hold("walk", f"incomplete information: {walk_error}"))
    for alert in sorted(alerts, key=lambda a: a.id):
        if alert.event_type in merged.hold_on_alerts and alert.names(plan.target):
            reason = f"OPEN alert {alert.event_type} ({alert.id})"
            setting = merged.alert_setting(alert.event_type)
            holds.append(Hold("alert", reason, alert_id=alert.id, setting=setting))
    eligible = sum(d.state not in ("incomplete", "awaiting-deletion") for d in plan.decisions)
    share = len(destructive) / eligible if eligible else 1.0
    if share > merged.max_expire_fraction:
        # The share is of the snapshots that count; the tables count all of them, so the
        # reason says how the two differ.
        left_out = len(plan.decisions) - eligible
        aside = (
            f"; {left_out} of the cluster's {counted(len(plan.decisions), 'snapshot')} not counted "
            "(incomplete or awaiting deletion)"
            if left_out
            else ""
        )
        holds.append(
            Hold(
                "max_expire_fraction",
                f"{len(destructive)} of {counted(eligible, 'snapshot')} would expire "
                f"({share:.0%}), "
                f"more than max_expire_fraction {merged.max_expire_fraction:g}{aside}",
                setting=merged.fraction_setting(),
            )
        )
    plan.holds.extend(holds)
    if plan.holds:
        text = "; ".join(h.reason for h in plan.holds)
        for decision in destructive:
            decision.held = text
