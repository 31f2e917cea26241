"""The jobs that change the fleet, and leave a run folder with its reports: a run (plan
and apply, what cron runs), an apply of a saved plan, an undo.

Each is a small value made from a request (retention.library.requests); the lifecycle
(retention.library.lifecycle) calls it at each step. ``run_job`` is the run's work itself,
plan then apply, for a caller with a client of its own (the demo, the tests).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from retention.api.client import OpsManagerClient
from retention.apply.applying import RunResult, apply_planned, apply_saved
from retention.apply.ledgering import RecordedSends
from retention.config.policyfiles import load_policies
from retention.config.scope import Scope
from retention.core.guard import index_of
from retention.core.runfiles import Mode
from retention.errors import StopRequestedError
from retention.ledger.recorder import RunEnd
from retention.ledger.session import Recording
from retention.library.ledgered import plan_end, policy_refs, policy_texts
from retention.library.lifecycle import Facts, Job, JobContext
from retention.library.requests import ApplyRequest, RunRequest, UndoRequest
from retention.library.stages import Progress, Quiet
from retention.ops.clock import Clock
from retention.ops.logs import RUN_LOGGER
from retention.ops.metrics import NewestRestorable
from retention.plan.planner import make_plan, planning_stopped, strict_refusal
from retention.report import render_run
from retention.runfolder.folder import RunFolder
from retention.runfolder.lineage import plan_file
from retention.undo.ledgering import RecordedUndo
from retention.undo.reports import render_undo_reports
from retention.undo.restoring import UndoResult, undo_run

if TYPE_CHECKING:
    from retention.config.settings import RetentionConfig
    from retention.ops.metrics import RunMetrics
    from retention.ops.sharding import Shard
    from retention.report.summary import RunInfo, RunSummary


def run_job(  # noqa: PLR0913 - the ledger is one more fact of the same run
    client: OpsManagerClient,
    scope: Scope,
    *,
    reports: Path,
    dry_run: bool,
    clock: Clock,
    listener: Progress | None = None,
    ledger: Recording | None = None,
) -> RunResult:
    """Plan, then (unless a dry run) apply, in a new run folder under ``reports``; the
    listener hears of each walked cluster and of each change applied. A stop while
    planning raises StopRequestedError once the folder says so (nothing sent); while
    applying, the result's ``interrupted`` names the signal. With ``scope.strict``, a plan
    with policy warnings raises StrictError (exit 2) once written: nothing is sent."""
    hears = listener or Quiet()
    started = clock()
    folder = RunFolder.new(reports, started)
    record = (
        None
        if ledger is None
        else ledger.begin(folder.run_id, started, policy_refs(scope), policy_texts(scope))
    )
    try:
        planned = make_plan(
            client, scope, plan_path=folder.plan, now=started, listener=hears, record=record
        )
    except StopRequestedError as exc:
        mode: Mode = "dry-run" if dry_run else "run"
        where = folder.mark_interrupted(mode, exc.signal_name, started, clock())
        raise planning_stopped(exc, f"nothing was sent ({where})") from None
    if scope.strict and planned.policy_warnings:
        raise strict_refusal(planned, "dry-run" if dry_run else "run")
    plan = planned.plan
    result = RunResult(folder.run_id, folder.path, started, plan, index_of(plan.read_clusters()))
    if not dry_run:
        apply_planned(
            client,
            result,
            concurrency=scope.concurrency,
            clock=clock,
            listener=hears if ledger is None else RecordedSends(hears, ledger, clock),
            acknowledge_audit_alerts=scope.acknowledge_audit_alerts,
        )
    return result


class _PlanEnding(Job[RunResult]):
    """How a run or an apply ends: both leave a plan, a journal (unless a dry run) and a
    ``RunResult``."""

    locks = records = notifies = ledgers = True

    def failed(self, result: RunResult) -> bool:
        """Walk errors or failed PATCHes."""
        return result.failed

    def interrupted(self, result: RunResult) -> str | None:
        """The signal that stopped the apply."""
        return result.interrupted

    def held(self, result: RunResult) -> bool:
        """A safety gate held destructive changes that no --approve let through."""
        return result.held

    def changed(self, result: RunResult) -> bool:
        """Changes applied; for a dry run, the changes a real run would send."""
        if result.applied is not None:
            return result.applied.counts.get("applied", 0) > 0
        return result.change_count > 0

    def folder(self, result: RunResult) -> tuple[str, Path]:
        """The run's id and folder."""
        return result.run_id, result.run_dir

    def write_reports(
        self, result: RunResult, info: RunInfo, formats: Sequence[str]
    ) -> tuple[list[Path], RunSummary | None]:
        """report.html and report.md from the run folder's plan and journal."""
        result.reports, summary = render_run(result.run_dir, info, formats)
        return result.reports, summary

    def log_end(self, result: RunResult) -> Facts:
        """The first failed changes and the clusters --approve could not let through are
        logged; the run-finished event counts what the plan and the apply did."""
        _log_failures(result)
        summary = result.head["summary"]
        applied = result.applied
        return {
            "counts": {
                "clusters": summary["clusters"],
                "snapshots": summary["snapshots"],
                "clustersHeld": summary["clustersHeld"],
                "clustersWithErrors": summary["clustersWithErrors"],
                "changes": dict(summary["byAction"]),
                "outcomes": dict(sorted(applied.counts.items())) if applied else {},
            },
            "runDir": str(result.run_dir),
            "reports": [str(path) for path in result.reports],
        }

    def ledger_end(self, result: RunResult, code: int, ended: datetime) -> RunEnd:
        """The plan's digest and counts, the apply's outcomes and approvals."""
        approved = sorted(f"{p}/{c}" for p, c in result.approved)
        return plan_end(
            result.plan,
            code,
            ended,
            signal=self.interrupted(result),
            approvals=approved,
            counts=dict(result.applied.counts) if result.applied else None,
        )

    def measure(self, result: RunResult, m: RunMetrics) -> None:
        """The plan's counts, and the apply's outcomes."""
        head = result.head
        summary = head["summary"]
        m.snapshots = summary["snapshots"]
        m.changes = dict(summary["byAction"])
        m.clusters_held = summary["clustersHeld"]
        m.bytes_given_back = summary["bytesGivenBack"]
        m.bytes_held = summary["bytesHeld"]
        m.clusters_unmanaged = summary["clustersUnmanaged"]
        m.unused_policies = len(head["unusedPolicies"])
        m.errors = len(head.get("errors", [])) + summary["clustersWithErrors"]
        m.clusters_stale = summary.get("clustersStale", 0)
        m.outage_tolerance_seconds = head["leaseSeconds"]
        m.outside_changes = dict(Counter(c["kind"] for c in head.get("outsideChanges", [])))
        m.freshness = [
            NewestRestorable(c["projectId"], c["name"], fresh["ageSeconds"], fresh["withinSeconds"])
            for c in result.plan.read_clusters()
            if (fresh := c.get("newestRestorable")) is not None
        ]
        if result.applied is not None:
            m.outcomes = dict(result.applied.counts)
            m.approved = result.applied.approved
            m.errors += len(result.applied.failures)


# Failed changes logged one by one at the end of a run; the report and the journal have all.
FAILURES_LOGGED = 10


def _log_failures(result: RunResult) -> None:
    log = logging.getLogger(RUN_LOGGER)
    for failure in result.applied.failures[:FAILURES_LOGGED] if result.applied else []:
        change = failure.change
        what = f"{failure.outcome} {change['snapshotId']}"
        failed = {
            "event": "change-failed",
            "outcome": failure.outcome,
            **{k: change[k] for k in ("projectId", "clusterId", "clusterName", "snapshotId")},
            "action": change["action"],
            "status": failure.status,
        }
        text = f"  {what}: {failure.error}"
        log.error("%s: %s", what, failure.error, extra={"text": text, "fields": failed})
    for skipped in result.approval.skipped if result.approval is not None else ():
        text = f"  not approved {skipped}"
        log.warning(
            "not approved %s", skipped, extra={"text": text, "fields": {"event": "not-approved"}}
        )


@dataclass(frozen=True)
class RunJob(_PlanEnding):
    """Plan with the configuration's policies and, unless a dry run, apply: what cron
    runs, on the request's shard of the fleet. It prunes after itself (dry runs too: a
    scheduled audit fills the disk)."""

    request: RunRequest
    prunes = True

    @property
    def mode(self) -> str:
        """dry-run or run."""
        return "dry-run" if self.request.dry_run else "run"

    @property
    def shard(self) -> Shard | None:
        """The request's shard."""
        return self.request.shard

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], RunResult]:
        """Load the policies (a policy error stops the run before the lock)."""
        scope = Scope.of(config, load_policies(config.policies), self.request.shard)
        scope = replace(scope, strict=self.request.strict)

        def step(run: JobContext) -> RunResult:
            return run_job(
                run.client,
                scope,
                reports=config.reports.dir,
                dry_run=self.request.dry_run,
                clock=run.clock,
                listener=run.progress,
                ledger=run.ledger,
            )

        return step


@dataclass(frozen=True)
class ApplyJob(_PlanEnding):
    """Apply exactly the saved plan of the request."""

    request: ApplyRequest
    mode = "apply"

    def check(self) -> None:
        """UsageError (exit 2) when there is no plan file at the request's plan (a folder
        without one is said for what it is: an empty run folder, a stopped plan...)."""
        plan_file(self.request.plan)

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], RunResult]:
        """The approve list (--approve-from) is read before the lock; the plan is checked
        whole by the step."""
        saved = self.request.saved()

        def step(run: JobContext) -> RunResult:
            return apply_saved(
                run.client,
                saved,
                reports=config.reports.dir,
                concurrency=config.api.concurrency,
                clock=run.clock,
                listener=_recorded(run),
            )

        return step


def _recorded(run: JobContext) -> Progress | RecordedSends:
    """Who hears an apply: the progress, and the ledger when there is one."""
    if run.ledger is None:
        return run.progress
    return RecordedSends(run.progress, run.ledger, run.clock)


@dataclass(frozen=True)
class UndoJob(Job[UndoResult]):
    """Put back what the run of the request shortened (a dry run: say what would be)."""

    request: UndoRequest
    locks = records = ledgers = True
    mode = "undo"

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], UndoResult]:
        """Nothing to read before the lock; the run folder is checked once the client
        knows the service (undo_run)."""

        def step(run: JobContext) -> UndoResult:
            return undo_run(
                run.client,
                self.request.run_dir,
                reports=config.reports.dir,
                dry_run=self.request.dry_run,
                concurrency=config.api.concurrency,
                clock=run.clock,
                listener=run.progress,
                ledger=None if run.ledger is None else RecordedUndo(run.ledger, run.clock),
            )

        return step

    def failed(self, result: UndoResult) -> bool:
        """Something could not be put back."""
        return result.failed

    def interrupted(self, result: UndoResult) -> str | None:
        """The signal that stopped the undo."""
        return result.interrupted

    def changed(self, result: UndoResult) -> bool:
        """Something was put back."""
        return result.counts.get("restored", 0) > 0

    def folder(self, result: UndoResult) -> tuple[str, Path]:
        """The undo's own id and folder."""
        return result.run_id, result.run_dir

    def write_reports(
        self, result: UndoResult, info: RunInfo, formats: Sequence[str]
    ) -> tuple[list[Path], RunSummary | None]:
        """report.html and report.md from undo.json."""
        result.reports = render_undo_reports(result.run_dir, result.document, info, formats)
        return result.reports, None

    def log_end(self, result: UndoResult) -> Facts:
        """The run-finished event says which run was undone, and the outcomes."""
        return {
            "runDir": str(result.run_dir),
            "undoOf": result.document["undoOf"],
            "counts": result.document["counts"],
        }

    def measure(self, result: UndoResult, m: RunMetrics) -> None:
        """The outcomes of the restores."""
        m.outcomes = dict(result.counts)
