"""The terminal summary of a plan, in the spirit of ``terraform plan``: counts per action,
per cluster, the holds that need a human, and the errors. Lines of text, which the commands
print.

The plan's totals come from ``report.summary.PlanSummary``, the value report.md, report.html
and the notice render too, so every output counts the same way.
"""

from __future__ import annotations

import shlex

from retention.core.planfile import ClusterEntry, PlanHead
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted, printable, size, unmanaged_text
from retention.report.summary import ACTIONS, PlanSummary


def summary_lines(document: PlanHead, *, max_clusters: int = 50) -> list[str]:
    """Readable lines for a plan document (retention-plan/v1), or its head."""
    plan = PlanSummary.of(document)
    lines = [
        f"retention plan: evaluated at {format_timestamp(plan.evaluated_at)} "
        f"against {plan.base_url}",
    ]
    if plan.what_if:
        lines.append("  what-if: evaluated at a time given with --at; review only, not to apply")
    if plan.service_version:
        lines.append(f"  service: {plan.service_version}")
    policies = ", ".join(f"{p['name']} ({p['sha256'][:8]})" for p in document["policies"])
    lines.append(f"  policies: {policies or 'none'}")
    lines.append("")
    header = ("CLUSTER", "KIND", "SNAPS", *(a.upper() for a in ACTIONS), "HELD", "NOTE")
    rows: list[tuple[str, ...]] = []
    changed = [c for c in document["clusters"] if _changes(c) or c["holds"] or c["errors"]]
    for cluster in changed[:max_clusters]:
        counts = cluster["counts"]
        note = "errors" if cluster["errors"] else "held" if cluster["holds"] else ""
        if not cluster["policies"]:
            note = note or "no policy"
        rows.append(
            (
                cluster["name"],
                cluster["kind"],
                str(counts.get("snapshots", 0)),
                *(str(counts.get(f"action:{a}", 0)) for a in ACTIONS),
                str(counts.get("action:held", 0)),
                note,
            )
        )
    if rows:
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
        for row in (header, *rows):
            lines.append("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
        hidden = len(changed) - len(rows)
        if hidden > 0:
            more = counted(hidden, "more cluster")
            lines.append(f"  ... and {more} with changes (see plan.json)")
    unchanged = len(document["clusters"]) - len(changed)
    lines.append(f"  {counted(unchanged, 'cluster')} without changes")
    lines.append("")
    # Names and ids come from the service: none of their characters may act on a terminal.
    return [printable(line) for line in lines + _totals(plan, document)]


def plan_totals_lines(plan: PlanSummary) -> list[str]:
    """What the plan does in all: per action, what it lets the service delete from when,
    what the safety gates hold, what is advisory."""
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
    if plan.count("advisory"):
        lines.append(
            f"Advisory: {counted(plan.count('advisory'), 'change')} on legacy config servers "
            "(no API to apply them)."
        )
    return lines


def _totals(plan: PlanSummary, document: PlanHead) -> list[str]:
    """What the plan does in all, what holds it, its notes, errors and warnings."""
    lines = plan_totals_lines(plan)
    lines.extend(hold_record_lines(document))
    # Notices are facts, not warnings (nothing to act on): said once, as a note.
    lines.extend(f"  note {notice}" for notice in plan.notices)
    approvable = []
    for cluster in document["clusters"]:
        for hold in cluster["holds"]:
            setting = hold.get("setting")
            where = f" [set at {setting}]" if setting else ""
            lines.append(f"  hold {cluster['name']}: {hold['reason']}{where}")
        if cluster["holds"] and all(h["kind"] == "max_expire_fraction" for h in cluster["holds"]):
            approvable.append(cluster)
    if approvable:
        names = " ".join(f"--approve {shlex.quote(c['name'])}" for c in approvable[:5])
        more = " ..." if len(approvable) > 5 else ""
        lines.append(
            "  After review, send what max_expire_fraction holds (alert holds need the alert "
            f"resolved): retention apply PLAN {names}{more}  (or --approve-all)"
        )
    errors = [
        *plan.errors,
        *(f"{c['name']}: {e}" for c in document["clusters"] for e in c["errors"]),
    ]
    for error in dict.fromkeys(errors):
        lines.append(f"  error {error}")
    lines.extend(f"  warning {w}" for w in plan.warnings)
    lines.extend(unmanaged_lines(document))
    return lines


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


def unmanaged_lines(document: PlanHead, *, listed: int = 10) -> list[str]:
    """Warnings for what no policy manages: clusters no policy matches (never changed, so
    never cleaned up) and policies that match nothing (a glob that misses, say)."""
    lines: list[str] = []
    for name in document.get("unusedPolicies", []):
        lines.append(
            f"  warning policy {name!r} matches no cluster or config server: check its match "
            "(projects, cluster globs, kinds)"
        )
    bare = [c["name"] for c in document["clusters"] if not c["policies"]]
    if bare:
        lines.append(f"  warning {unmanaged_text(bare, listed)}")
    return lines


def _changes(cluster: ClusterEntry) -> int:
    counts = cluster["counts"]
    return sum(counts.get(f"action:{a}", 0) for a in (*ACTIONS, "held", "advisory"))
