"""What a finished job says: the JSON document a script reads (``--format json``) and the
lines a person reads at a terminal, for a plan, a run or an apply, and an undo. The command
line prints them; a script may too. Read-only features carry their own (diff, forecast,
prune, doctor, explain, validate)."""

from __future__ import annotations

from typing import Any

from retention.apply.applying import RunResult
from retention.core.restore import SETTLED
from retention.core.wording import counted
from retention.errors import exit_meaning
from retention.library.lifecycle import Ended
from retention.plan.planner import PlanResult
from retention.report.lines import summary_lines
from retention.report.summary import OUTCOMES, stale_clusters
from retention.runfolder.approvelist import apply_command
from retention.undo.restoring import UndoResult

# Failures listed in a run's JSON document; the journal has them all.
MAX_FAILURES_LISTED = 100
# Items listed in an undo's lines; the report and undo.json have them all.
LISTED = 10


def plan_document(ended: Ended[PlanResult]) -> dict[str, Any]:
    """plan --format json: where the plan is, its clusters whose backups stopped, which of
    its warnings are the policies' (what --strict refuses), and the plan itself (its
    clusters read from its file as they are written out)."""
    plan = ended.result.plan
    return {
        "command": "plan",
        "exitCode": ended.code,
        "planPath": str(plan.path),
        "decisionsPath": str(plan.decisions),
        "staleBackups": [c.document() for c in stale_clusters(plan.head, plan.read_clusters())],
        "policyWarnings": list(ended.result.policy_warnings),
        "ledgerHead": ended.result.ledger_head,
        "plan": plan.document(),
    }


def run_document(ended: Ended[RunResult]) -> dict[str, Any]:
    """run, apply --format json: the same facts as the summary, for scripts."""
    result, code = ended.result, ended.code
    applied = result.applied
    approval = result.approval
    plan = result.plan
    document = {
        "command": "apply" if ended.mode == "apply" else "run",
        "mode": ended.mode,
        "exitCode": code,
        "meaning": exit_meaning(code),
        "runId": result.run_id,
        "runDir": str(result.run_dir),
        "reports": [str(path) for path in ended.reports],
        "summary": result.head["summary"],
        "warnings": list(result.head["warnings"]),
        "staleBackups": [c.document() for c in stale_clusters(plan.head, plan.read_clusters())],
        "outsideChanges": list(plan.head.get("outsideChanges", [])),
        "ledgerHead": ended.summary.run.ledger_head if ended.summary else None,
        "outcomes": dict(sorted(applied.counts.items())) if applied is not None else None,
        "interrupted": result.interrupted,
        "failures": [
            {
                **{k: f.change[k] for k in ("snapshotId", "clusterId", "clusterName", "action")},
                "outcome": f.outcome,
                "status": f.status,
                "error": f.error,
            }
            for f in (applied.failures[:MAX_FAILURES_LISTED] if applied is not None else [])
        ],
        "approved": (
            {"clusters": list(approval.names), "sent": applied.approved if applied else 0}
            if approval is not None and approval.names
            else None
        ),
        "acknowledged": list(result.acknowledged),
        "notices": [notice.document() for notice in ended.notices],
    }
    if ended.pruned is not None:
        document["pruned"] = ended.pruned.removed
    return document


def run_lines(ended: Ended[RunResult]) -> list[str]:
    """What a person reads at the end of a run, apply or demo, but its exit code: the run's
    summary, the one report.md and report.html begin with, in lines."""
    result, summary = ended.result, ended.summary
    plan = result.plan
    lines = summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path, summary=summary)
    if result.applied is not None:
        counts = summary.outcomes.counts if summary and summary.outcomes else result.applied.counts
        said = ", ".join(f"{o} {counts[o]}" for o in OUTCOMES if counts.get(o))
        lines.append(f"Outcomes: {said or 'nothing to apply'}.")
        if unchanged := result.applied.counts.get("unchanged", 0):
            lines.append(
                f"Unchanged: the service already held what {unchanged} of these changes "
                "write (an earlier apply of this plan, or someone, made them): nothing sent."
            )
    else:
        lines.append("Dry run: nothing was sent to the API.")
    if result.interrupted:
        not_sent = result.applied.counts.get("not-sent", 0) if result.applied else 0
        approved = result.approval.names if result.approval else ()
        finish = summary.finish_command if summary else apply_command(result.run_dir, approved)
        lines.append(
            f"Stopped by {result.interrupted} before the end: {counted(not_sent, 'change')} "
            f"{'was' if not_sent == 1 else 'were'} not sent (journalled not-sent in "
            "results.jsonl). Finish it (what was done is skipped as unchanged):"
        )
        lines.append(f"    {finish}")
        lines.append(f"  or put back what it shortened: retention undo {result.run_dir}")
    if result.acknowledged:
        alerts = counted(len(result.acknowledged), "audit alert")
        lines.append(f"Acknowledged {alerts} this run caused.")
    lines.append(f"\nRun folder: {result.run_dir}")
    lines.extend(f"  {path.name}: {path}" for path in ended.reports)
    if summary is not None and summary.run.ledger_head:
        lines.append(f"Ledger head: {summary.run.ledger_head}")
    if ended.notices:
        sent = ", ".join(f"{n.url} {'sent' if n.sent else 'not sent'}" for n in ended.notices)
        lines.append(f"Notices: {sent}.")
    if ended.pruned is not None and (removed := ended.pruned.removed):
        more = f" and {len(removed) - 3} more" if len(removed) > 3 else ""
        folders = counted(len(removed), "old run folder")
        lines.append(f"reports.keep removed {folders}: {', '.join(removed[:3])}{more}")
    return lines


def undo_document(ended: Ended[UndoResult]) -> dict[str, Any]:
    """undo --format json: undo.json's facts, with the exit code, run folder and reports."""
    result, code = ended.result, ended.code
    document = result.document
    return {
        "command": "undo",
        "exitCode": code,
        "meaning": exit_meaning(code),
        "runDir": str(result.run_dir),
        "runId": document["runId"],
        "undoOf": document["undoOf"],
        "dryRun": document["dryRun"],
        "counts": document["counts"],
        "unreadableLines": document["unreadableLines"],
        "inDoubt": document["inDoubt"],
        "interrupted": document["interrupted"],
        "undoneBefore": result.undone_before,
        "items": document["items"],
        "reports": [str(path) for path in ended.reports],
    }


def undo_lines(ended: Ended[UndoResult]) -> list[str]:
    """What a person reads at the end of an undo."""
    result, code = ended.result, ended.code
    counts = result.counts
    what = "would put back" if result.dry_run else "put back"
    back = counts.get("would-restore" if result.dry_run else "restored", 0)
    lines = [
        f"retention undo {result.run_id} of {result.undo_of}: exit {code}, {exit_meaning(code)}"
    ]
    already = result.already_undone
    if not result.items:
        lines.append("  nothing to undo: that run applied no destructive change")
    elif already is not None:
        shortened = (
            "the snapshot that run shortened is"
            if len(result.items) == 1
            else f"all {len(result.items)} snapshots that run shortened are"
        )
        lines.append(
            f"  already undone by {already['runDir']} at {already['createdAt']}: {shortened} "
            "as before it; nothing to put back"
        )
    else:
        shortened = counted(len(result.items), "snapshot")
        lines.append(f"  {what} {back} of {shortened} that run shortened")
        if result.undone_before:
            lines.append(f"  undone before: {earlier_undos(result)}")
    if counts.get("unchanged") and already is None:
        lines.append(f"  already as before the run: {counts['unchanged']}")
    if counts.get("protected"):
        lines.append(
            f"  left protected (doNotDelete), safe: {counts['protected']} (an undo stopped "
            "between its two PATCHes, or someone protected them)"
        )
    left = [i for i in result.items if i.outcome not in SETTLED]
    if left:
        lines.append(f"  left alone {len(left)}:")
        for item in left[:LISTED]:
            r = item.restoration
            lines.append(f"    {item.outcome} {r.snapshot_id} ({r.cluster_name}): {item.reason}")
        if len(left) > LISTED:
            lines.append(f"    and {len(left) - LISTED} more: see the report")
    if result.in_doubt:
        lines.append(
            f"  {result.in_doubt} of them {'was' if result.in_doubt == 1 else 'were'} in doubt "
            "(sent, with no answer saying the service applied them): each was put back only "
            "if the service showed what it would have written"
        )
    if result.interrupted:
        lines.append(
            f"  stopped by {result.interrupted}: {counts.get('not-sent', 0)} not put back; "
            "run the same undo again to finish"
        )
    if result.unreadable:
        unread = counted(result.unreadable, "journal line")
        verb = "was" if result.unreadable == 1 else "were"
        lines.append(f"  {unread} could not be read and {verb} not undone")
    lines.extend(f"  report: {path}" for path in ended.reports)
    return lines


def earlier_undos(result: UndoResult) -> str:
    """The undos of the same run before this one, in words: the newest, and how many more."""
    newest = result.undone_before[-1]
    stopped = f", stopped by {newest['interrupted']}" if newest["interrupted"] else ""
    more = len(result.undone_before) - 1
    also = f" (and {counted(more, 'earlier undo')})" if more else ""
    return f"{newest['runDir']} at {newest['createdAt']}{stopped}{also}"
