"""A run's ``RunSummary``, built from what ``read.collect`` read of its folder.

Every figure is what the run did, not what its plan meant to do: the held changes an
--approve let through count under their actions and no longer as held, a cluster they came
from is approved and not held, and the deletion line counts the destructive changes the
service applied (results.jsonl), not those the plan listed. A dry run did nothing, so its
figures are its plan's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retention.core.guard import APPROVABLE
from retention.report.holdrecords import HoldRecordRow
from retention.report.model import Calendar, ClusterRow, Outcomes
from retention.report.summary import (
    ApprovedCluster,
    ClusterNote,
    Deletion,
    Expiring,
    FailedCluster,
    HeldCluster,
    OutcomeTotals,
    PlanSummary,
    RunInfo,
    RunSummary,
)


def summarize(  # noqa: PLR0913 - one part of the summary from each file and pass the report read
    run: RunInfo,
    plan: PlanSummary,
    *,
    outcomes: Outcomes | None,
    clusters: Sequence[ClusterRow],
    calendar: Calendar,
    hold_records: Sequence[HoldRecordRow],
    bytes_applied: int | None,
    plan_path: Path | None = None,
) -> RunSummary:
    """The run's summary. ``clusters`` are the plan's rows with this run's approvals taken
    in (ClusterRow.approve); ``bytes_applied`` is what the destructive changes the service
    applied take (None: unknown)."""
    by_action = _by_action(plan.by_action, outcomes)
    held = tuple(_held(c) for c in clusters if c.held_now)
    notes = (ClusterNote(*_named(c)) for c in clusters)
    return RunSummary(
        run=run,
        plan=plan,
        outcomes=_totals(outcomes, by_action),
        by_action=by_action,
        clusters_changed=sum(1 for c in clusters if c.changes),
        clusters_with_problems=sum(1 for c in clusters if c.problems),
        held=held,
        held_bytes=sum(c.bytes_held for c in clusters if c.held_now),
        approved=tuple(
            ApprovedCluster(*_named(c), outcomes=dict(c.approval)) for c in clusters if c.approval
        ),
        busiest=tuple(sorted((n for n in notes if n.sent), key=_rank)),
        failed=tuple(_failed(c, outcomes) for c in clusters if c.problems),
        unmanaged=tuple(c.name for c in clusters if not c.policies),
        deletion=_deletion(plan, outcomes, bytes_applied),
        expiring=Expiring(
            week=calendar.total("week"),
            week_planned=calendar.total("week", "planned"),
            month=calendar.total("month"),
            month_planned=calendar.total("month", "planned"),
            as_planned=calendar.as_planned,
        ),
        hold_records_ended=sum(not h.in_force for h in hold_records),
        plan_path=plan_path,
        names=Counter(c.name for c in clusters),
    )


def _by_action(planned: Mapping[str, int], outcomes: Outcomes | None) -> dict[str, int]:
    """The plan's counts by action, with the held changes an --approve let through moved
    from "held" to their actions."""
    counts = dict(planned)
    for tally in outcomes.approved.values() if outcomes is not None else ():
        counts["held"] = max(0, counts.get("held", 0) - sum(tally.actions.values()))
        for action, n in tally.actions.items():
            counts[action] = counts.get(action, 0) + n
    return counts


def _totals(outcomes: Outcomes | None, by_action: Mapping[str, int]) -> OutcomeTotals | None:
    """results.jsonl's outcomes, and as held the changes a gate still holds: one count for
    what was held, whether the executor journalled it or the plan never sent it."""
    if outcomes is None:
        return None
    counts = dict(outcomes.counts)
    counts["held"] = counts.get("held", 0) + by_action.get("held", 0)
    return OutcomeTotals(counts, outcomes.in_doubt)


def _deletion(plan: PlanSummary, outcomes: Outcomes | None, bytes_applied: int | None) -> Deletion:
    if outcomes is None:
        return Deletion(plan.expiring, plan.expires_from, plan.bytes_given_back, as_planned=True)
    return Deletion(outcomes.expired, outcomes.expires_from, bytes_applied, as_planned=False)


def _named(c: ClusterRow) -> tuple[str, str, str, dict[str, int]]:
    """What every note of a cluster starts with: its name, ids and changes by action."""
    return c.name, c.project_id, c.cluster_id, dict(c.by_action)


def _rank(c: ClusterNote) -> tuple[int, str, str, str]:
    return (-c.sent, c.name, c.project_id, c.cluster_id)


def _held(c: ClusterRow) -> HeldCluster:
    approvable = all(h["kind"] in APPROVABLE for h in c.holds)
    return HeldCluster(*_named(c), holds=tuple(c.holds), approvable=approvable, view=c.held_view)


def _failed(c: ClusterRow, outcomes: Outcomes | None) -> FailedCluster:
    """The cluster's first error: its walk's or checks', else its first failed PATCH."""
    first = c.errors[0] if c.errors else _first_failure(c, outcomes)
    return FailedCluster(*_named(c), errors=len(c.errors), failed=c.failed, first=first)


def _first_failure(c: ClusterRow, outcomes: Outcomes | None) -> str:
    listed: list[dict[str, Any]] = outcomes.failures if outcomes is not None else []
    for f in listed:
        if (f.get("projectId"), f.get("clusterId")) == c.key:
            status = f.get("status") if f.get("status") is not None else "no answer"
            return (
                f"{f.get('action')} of {f.get('snapshotId')} {f.get('outcome')} ({status}): "
                f"{f.get('error') or ''}"
            ).rstrip(": ")
    return f"{c.failed} changes failed or were refused: see results.jsonl"
