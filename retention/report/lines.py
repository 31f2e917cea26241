"""The terminal summary of a plan, in the spirit of ``terraform plan``: counts per action,
per cluster, the holds that need a human, and the errors. Lines of text, which the commands
print.

A plan's totals come from ``report.summary.PlanSummary``; a run's or an apply's from its
``RunSummary``, the value report.md, report.html and the notice render too, so every output
counts the same way and says what the run did: a cluster an --approve let through is
approved, not held, and the deletion line counts what the service applied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retention.core.outage import tolerance_sentence
from retention.core.planfile import ClusterEntry, HoldEntry, PlanHead
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted, printable, size, unmanaged_text
from retention.report.heldview import HeldView, held_lines
from retention.report.summary import (
    ACTIONS,
    ApprovedCluster,
    PlanSummary,
    RunSummary,
    StaleCluster,
    outcome_counts,
    stale_text,
)
from retention.runfolder.approvelist import Approvable, approve_hint, approve_names

# Clusters named in one line of the summary; the report has the others.
LISTED = 10


def summary_lines(
    head: PlanHead,
    clusters: Iterable[ClusterEntry],
    *,
    plan_path: Path,
    summary: RunSummary | None = None,
    max_clusters: int = 50,
) -> list[str]:
    """Readable lines for the plan at ``plan_path``: its head and its ``clusters``, taken in
    one pass (a plan read back streams them from its file); with the ``summary`` of the run
    that applied it, what that run did."""
    approved = {(c.project_id, c.cluster_id): c for c in summary.approved} if summary else {}
    seen = _Seen.of(head, clusters, approved, max_clusters)
    plan = PlanSummary.of(head, seen.stale)
    lines = [
        f"retention plan: evaluated at {format_timestamp(plan.evaluated_at)} "
        f"against {plan.base_url}",
    ]
    if plan.what_if:
        lines.append("  what-if: evaluated at a time given with --at; review only, not to apply")
    if plan.service_version:
        lines.append(f"  service: {plan.service_version}")
    policies = ", ".join(f"{p['name']} ({p['sha256'][:8]})" for p in head["policies"])
    lines.append(f"  policies: {policies or 'none'}")
    lines.append("")
    header = ("CLUSTER", "KIND", "SNAPS", *(a.upper() for a in ACTIONS), "HELD", "ADVISORY", "NOTE")
    rows = seen.rows
    if rows:
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
        for row in (header, *rows):
            lines.append("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
        hidden = seen.changed - len(rows)
        if hidden > 0:
            more = counted(hidden, "more cluster")
            lines.append(f"  ... and {more} with changes (see plan.json)")
    unchanged = seen.total - seen.changed
    lines.append(f"  {counted(unchanged, 'cluster')} without changes")
    lines.append("")
    totals = (
        _totals(plan, head, seen, plan_path)
        if summary is None
        else run_totals_lines(summary, head, seen)
    )
    # Names and ids come from the service: none of their characters may act on a terminal.
    return [printable(line) for line in lines + totals]


@dataclass
class _Seen:
    """What the summary reads of a plan's clusters, in one pass: the table's rows (the first
    clusters with changes, holds or errors), how many there are, the holds, errors and
    unmanaged clusters, and those whose backups stopped."""

    rows: list[tuple[str, ...]] = field(default_factory=list)
    changed: int = 0
    total: int = 0
    held: list[tuple[str, Sequence[HoldEntry], HeldView | None]] = field(default_factory=list)
    approvable: list[tuple[str, str]] = field(default_factory=list)  # (name, id)
    names: Counter[str] = field(default_factory=Counter)  # clusters by name
    errors: list[str] = field(default_factory=list)
    bare: list[str] = field(default_factory=list)
    stale: tuple[StaleCluster, ...] = ()

    @classmethod
    def of(
        cls,
        head: PlanHead,
        clusters: Iterable[ClusterEntry],
        approved: Mapping[tuple[str, str], ApprovedCluster],
        max_rows: int,
    ) -> _Seen:
        seen = cls()
        names = {p["projectId"]: p["name"] for p in head.get("projects", [])}
        stale = []
        for cluster in clusters:
            seen.total += 1
            key = (cluster["projectId"], cluster["clusterId"])
            if _changes(cluster) or cluster["holds"] or cluster["errors"]:
                seen.changed += 1
                if len(seen.rows) < max_rows:
                    seen.rows.append(_row(cluster, approved.get(key)))
            seen.names[cluster["name"]] += 1
            if cluster["holds"]:
                seen.held.append((cluster["name"], cluster["holds"], HeldView.of(cluster)))
                if Approvable.of(cluster) is not None:
                    seen.approvable.append((cluster["name"], cluster["clusterId"]))
            seen.errors.extend(f"{cluster['name']}: {e}" for e in cluster["errors"])
            if not cluster["policies"]:
                seen.bare.append(cluster["name"])
            if (found := StaleCluster.of(cluster, names.get(cluster["projectId"]))) is not None:
                stale.append(found)
        seen.stale = tuple(stale)
        return seen


def _row(cluster: ClusterEntry, let_through: ApprovedCluster | None) -> tuple[str, ...]:
    """A cluster's row in the summary's table: its counts (with the held changes an
    --approve sent, ``let_through``) and a note."""
    counts = {k.removeprefix("action:"): n for k, n in cluster["counts"].items()}
    if let_through is not None:
        counts.update(let_through.by_action)  # its held changes, sent by --approve
    note = "errors" if cluster["errors"] else ""
    if cluster["holds"]:
        note = note or ("approved" if let_through is not None else "held")
    if not cluster["policies"]:
        note = note or "no policy"
    return (
        cluster["name"],
        cluster["kind"],
        str(counts.get("snapshots", 0)),
        *(str(counts.get(a, 0)) for a in ACTIONS),
        str(counts.get("held", 0)),
        str(counts.get("advisory", 0)),
        note,
    )


def _totals(plan: PlanSummary, head: PlanHead, seen: _Seen, plan_path: Path) -> list[str]:
    """What the plan does in all (per action, what it lets the service delete from when,
    what the safety gates hold, what is advisory), what holds it, its notes, errors and
    warnings."""
    plan_line = ", ".join(f"{plan.count(a)} to {a}" for a in ACTIONS)
    lines = [f"Plan: {plan_line}."]
    expiring = plan.expiring
    if expiring and plan.expires_from:
        lines.append(
            f"Deletion: {counted(expiring, 'snapshot')} may be deleted by "
            "the service from "
            f"{format_timestamp(plan.expires_from)} on, giving back "
            f"{size(plan.bytes_given_back)}."
        )
    if plan.count("held"):
        lines.append(
            f"Held by safety gates: {counted(plan.count('held'), 'destructive change')} "
            "(not applied; "
            f"{size(plan.bytes_held)})."
        )
    lines.extend(_long_cut_lines(plan))
    if plan.count("advisory"):
        lines.append(
            f"Advisory: {counted(plan.count('advisory'), 'change')} on legacy config servers "
            "(no API to apply them)."
        )
    lines.append(tolerance_sentence(plan.lease_seconds, applied=False))
    lines.extend(outside_lines(plan))
    lines.extend(stale_lines(plan))
    lines.extend(hold_record_lines(head))
    # Notices are facts, not warnings (nothing to act on): said once, as a note.
    lines.extend(f"  note {notice}" for notice in plan.notices)
    lines.extend(_hold_lines(seen.held))
    names = approve_names(seen.approvable, seen.names)
    command = approve_hint(plan_path, names) if names else None
    return lines + _approve_lines(command) + _problem_lines(plan, head, seen)


def run_totals_lines(summary: RunSummary, document: PlanHead, seen: _Seen) -> list[str]:
    """What a run or an apply did in all (``summary``, of its run folder): its changes by
    action, what the service may delete from when, what is still held and what an
    --approve let through, what expires soon; then the notes, the holds that still need
    a human, the errors and the warnings of its plan (``document``)."""
    changes = ", ".join(f"{summary.count(a)} {a}" for a in ACTIONS)
    lines = [
        f"Changes: {changes}; {summary.held_changes} held, {summary.count('advisory')} advisory."
    ]
    lines.extend(_deletion_lines(summary))
    if summary.held_changes:
        held, clusters = summary.held_changes, len(summary.held)
        lines.append(
            f"Held by safety gates: {counted(held, 'destructive change')} of "
            f"{counted(clusters, 'cluster')} (not sent; "
            f"{size(summary.held_bytes)})."
        )
    if summary.approved:
        approved = "; ".join(
            f"{c.name}, {c.let_through} held changes let through ({outcome_counts(c.outcomes)})"
            for c in summary.approved[:LISTED]
        )
        more = len(summary.approved) - LISTED
        approved += f"; and {more} more (see the report)" if more > 0 else ""
        lines.append(f"Approved by --approve: {approved}.")
    lines.extend(_long_cut_lines(summary.plan))
    expiring = summary.expiring
    setter = "this plan" if expiring.as_planned else f"this {summary.run.mode}"
    lines.append(
        f"Expiring{' if the plan is applied' if expiring.as_planned else ''}: {expiring.week} "
        f"snapshots in the next 7 days ({expiring.week_planned} set by {setter}), "
        f"{expiring.month} in the next 30 ({expiring.month_planned} set by {setter})."
    )
    if summary.count("advisory"):
        lines.append(
            f"Advisory: {summary.count('advisory')} changes on legacy config servers "
            "(no API to apply them)."
        )
    lines.append(tolerance_sentence(summary.plan.lease_seconds, applied=not summary.run.dry_run))
    lines.extend(outside_lines(summary.plan))
    lines.extend(stale_lines(summary.plan))
    lines.extend(hold_record_lines(document))
    lines.extend(f"  note {notice}" for notice in summary.plan.notices)
    lines.extend(_hold_lines((c.name, c.holds, c.view) for c in summary.held))
    lines.extend(_approve_lines(summary.approve_command))
    return lines + _problem_lines(summary.plan, document, seen)


def _long_cut_lines(plan: PlanSummary) -> list[str]:
    """The count of changes that cut an existing expiry a long way: flagged, never held."""
    text = plan.long_cuts_text
    return [f"Long cuts: {text} (explain SNAPSHOT_ID says by how much)."] if text else []


def outside_lines(plan: PlanSummary) -> list[str]:
    """What changed outside retention since the ledger last looked, each of the first
    LISTED in words; or that this plan is the ledger's baseline."""
    if plan.baseline:
        return [
            "Ledger: the first plan against this ledger, its baseline: changes made outside "
            "retention are told from the next plan on."
        ]
    text = plan.outside_text
    if text is None:
        return []
    lines = [f"Changed outside retention: {text}."]
    lines.extend(f"  outside {c['text']}" for c in plan.outside[:LISTED])
    if len(plan.outside) > LISTED:
        more = counted(len(plan.outside) - LISTED, "more change")
        lines.append(f"  outside ... and {more}: see report.html or plan.json (outsideChanges)")
    return lines


def stale_lines(plan: PlanSummary) -> list[str]:
    """The warning for clusters whose backups stopped (their newest restorable snapshot is
    older than expected), naming the first LISTED: a warning, never a hold."""
    if not plan.stale:
        return []
    return [f"Warning: {stale_text(plan.stale, LISTED)}."]


def _deletion_lines(summary: RunSummary) -> list[str]:
    deletion = summary.deletion
    if not (deletion.count and deletion.expires_from):
        if deletion.as_planned:
            return []
        mode = summary.run.mode
        return [f"Deletion: this {mode} applied no change that lets the service delete sooner."]
    back = f", giving back {size(deletion.bytes)}" if deletion.bytes is not None else ""
    by = "" if deletion.as_planned else f" (applied by this {summary.run.mode})"
    return [
        f"Deletion: {counted(deletion.count, 'snapshot')} may be deleted by the service from "
        f"{format_timestamp(deletion.expires_from)} on{back}{by}."
    ]


def _hold_lines(held: Iterable[tuple[str, Sequence[HoldEntry], HeldView | None]]) -> list[str]:
    """Each held cluster's holds, then what approving it would cost: the first LISTED; a
    first run over hundreds of held clusters would otherwise print thousands of lines
    (report.html has a card for each)."""
    lines = []
    held = list(held)
    for name, holds, view in held[:LISTED]:
        for hold in holds:
            setting = hold.get("setting")
            where = f" [set at {setting}]" if setting else ""
            lines.append(f"  hold {name}: {hold['reason']}{where}")
        if view is not None:
            lines.extend(held_lines(name, view))
    if len(held) > LISTED:
        more = counted(len(held) - LISTED, "more held cluster")
        lines.append(f"  hold ... and {more}: see report.html (Holds) or plan.json")
    return lines


def _approve_lines(command: str | None) -> list[str]:
    """How to send what max_expire_fraction holds, after review: the command."""
    if command is None:
        return []
    return [
        "  After review, send what max_expire_fraction holds (alert holds need the alert "
        "resolved; --approve-all approves every such cluster):",
        f"    {command}",
    ]


def _problem_lines(plan: PlanSummary, head: PlanHead, seen: _Seen) -> list[str]:
    """The plan's errors (once each), its warnings and what no policy manages."""
    errors = [*plan.errors, *seen.errors]
    lines = [f"  error {error}" for error in dict.fromkeys(errors)]
    lines.extend(f"  warning {w}" for w in plan.warnings)
    return lines + unmanaged_lines(head, seen.bare)


def hold_record_lines(document: PlanHead, *, listed: int = 5) -> list[str]:
    """The hold records of protect: ids in one line ("3 hold records, 1 ended, 1 not
    found"), and the ended ones, which protect nothing any more, each with its file and line."""
    records = document.get("holdRecords") or []
    if not records:
        return []
    gone = [r for r in records if not r["inForce"]]
    missing = sum(r["state"] is None for r in records)
    counts = [counted(len(records), "hold record")]
    counts += [f"{len(gone)} ended"] if gone else []
    counts += [f"{missing} not found in this plan's clusters"] if missing else []
    lines = [f"Hold records (protect: ids): {', '.join(counts)}."]
    for record in gone[:listed]:
        ticket = f"; ticket {record['ticket']}" if record["ticket"] else ""
        lines.append(
            f"  ended {record['policy']}: snapshot {record['snapshotId']} until "
            f"{record['until']} ({record['reason']}{ticket}) [set at {record['setting']}]"
        )
    if len(gone) > listed:
        more = counted(len(gone) - listed, "more ended hold record")
        lines.append(f"  ... and {more} (see the report)")
    return lines


def unmanaged_lines(head: PlanHead, bare: Sequence[str], *, listed: int = 10) -> list[str]:
    """Warnings for what no policy manages: the ``bare`` clusters no policy matches (never
    changed, so never cleaned up) and policies that match nothing (a glob that misses)."""
    lines: list[str] = []
    for name in head.get("unusedPolicies", []):
        lines.append(
            f"  warning policy {name!r} matches no cluster or config server: check its match "
            "(projects, cluster globs, kinds)"
        )
    if bare:
        lines.append(f"  warning {unmanaged_text(bare, listed)}")
    return lines


def _changes(cluster: ClusterEntry) -> int:
    counts = cluster["counts"]
    return sum(counts.get(f"action:{a}", 0) for a in (*ACTIONS, "held", "advisory"))
