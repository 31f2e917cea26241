"""The jobs the lifecycle runs: a run (plan and apply), an apply of a saved plan, an undo.

Each is a small value made from what the command line (or a library caller) gave; the
lifecycle (retention.library.lifecycle) calls it at each step (retention.library.job.Job).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from retention.config.policyfiles import load_policies
from retention.errors import UsageError
from retention.library.job import Facts, JobContext, Mode
from retention.library.jobs import JobResult, apply_saved, change_count, run_job
from retention.ops.logs import RUN_LOGGER
from retention.ops.metrics import NewestRestorable
from retention.plan.workers import planning_workers
from retention.report import render_run
from retention.runfolder.folder import RunFolder
from retention.undo.reports import render_undo_reports
from retention.undo.restoring import UndoResult, undo_run
from retention.walk.inventory import project_targets

if TYPE_CHECKING:
    from retention.config.settings import RetentionConfig
    from retention.ops.metrics import RunMetrics
    from retention.ops.sharding import Shard
    from retention.report.model import RunInfo
    from retention.report.summary import RunSummary


class _PlanEnding:
    """How a run or an apply ends: both leave a plan, a journal (unless a dry run) and a
    ``JobResult``."""

    notifies = True
    prunes = False

    def check(self) -> None:
        """Nothing to check before the configuration."""

    def held(self, result: JobResult) -> bool:
        """A safety gate held destructive changes that no --approve let through."""
        return result.held

    def changed(self, result: JobResult) -> bool:
        """Changes applied; for a dry run, the changes a real run would send."""
        if result.applied is not None:
            return result.applied.counts.get("applied", 0) > 0
        return change_count(result.document) > 0

    def write_reports(
        self, result: JobResult, info: RunInfo, formats: Sequence[str]
    ) -> tuple[list[Path], RunSummary | None]:
        """report.html and report.md from the run folder's plan and journal."""
        return render_run(result.run_dir, info, formats)

    def log_end(self, result: JobResult) -> Facts:
        """The first failed changes and the clusters --approve could not let through are
        logged; the run-finished event counts what the plan and the apply did."""
        _log_failures(result)
        summary = result.document["summary"]
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

    def measure(self, result: JobResult, m: RunMetrics) -> None:
        """The plan's counts, and the apply's outcomes."""
        summary = result.document["summary"]
        m.snapshots = summary["snapshots"]
        m.changes = dict(summary["byAction"])
        m.clusters_held = summary["clustersHeld"]
        m.bytes_given_back = summary["bytesGivenBack"]
        m.bytes_held = summary["bytesHeld"]
        m.clusters_unmanaged = summary["clustersUnmanaged"]
        m.unused_policies = len(result.document["unusedPolicies"])
        m.errors = len(result.document.get("errors", [])) + summary["clustersWithErrors"]
        m.clusters_stale = summary.get("clustersStale", 0)
        m.outage_tolerance_seconds = result.document["leaseSeconds"]
        m.freshness = [
            NewestRestorable(c["projectId"], c["name"], fresh["ageSeconds"], fresh["withinSeconds"])
            for c in result.document["clusters"]
            if (fresh := c.get("newestRestorable")) is not None
        ]
        if result.applied is not None:
            m.outcomes = dict(result.applied.counts)
            m.approved = result.applied.approved
            m.errors += len(result.applied.failures)


# Failed changes logged one by one at the end of a run; the report and the journal have all.
FAILURES_LOGGED = 10


def _log_failures(result: JobResult) -> None:
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
    """Plan with the configuration's policies and, unless ``dry_run``, apply: what cron
    runs. ``shard``: this process's part of the fleet."""

    dry_run: bool = False
    shard: Shard | None = None
    # What cron runs prunes after itself (dry runs too: a scheduled audit fills the disk).
    prunes = True

    @property
    def mode(self) -> Mode:
        """dry-run or run."""
        return "dry-run" if self.dry_run else "run"

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], JobResult]:
        """Load the policies (a policy error stops the run before the lock)."""
        policies = load_policies(config.policies)
        projects = project_targets(config)

        def step(run: JobContext) -> JobResult:
            progress = run.progress
            return run_job(
                run.client,
                policies,
                projects,
                reports=config.reports.dir,
                schedule=config.schedule,
                lease_minimum=config.lease_floor,
                concurrency=config.api.concurrency,
                dry_run=self.dry_run,
                acknowledge_audit_alerts=config.alerts.acknowledge_own_audit_alerts,
                now=run.clock,
                on_outcome=progress.outcome,
                on_walk=progress.walk,
                on_apply=progress.apply,
                shard=self.shard,
                workers=planning_workers(config.api),
                stop=run.stop,
            )

        return step


@dataclass(frozen=True)
class ApplyJob(_PlanEnding):
    """Apply exactly the saved plan ``plan`` (a plan file, or a run folder: its plan.json),
    refused when older than ``max_age``; ``approve`` (cluster names or ids) and
    ``approve_all`` let through the changes held only by max_expire_fraction."""

    plan: Path
    max_age: timedelta = timedelta(hours=24)
    approve: tuple[str, ...] = ()
    approve_all: bool = False
    shard: None = None

    @property
    def mode(self) -> Mode:
        """apply."""
        return "apply"

    @property
    def plan_file(self) -> Path:
        """The plan file: ``plan``, or the plan.json of the run folder ``plan``."""
        return RunFolder(self.plan).plan if self.plan.is_dir() else self.plan

    def check(self) -> None:
        """UsageError (exit 2) when there is no plan file at ``plan``."""
        if self.plan.is_dir() and not self.plan_file.is_file():
            raise UsageError(f"{self.plan} is a folder without a plan.json: give the plan file")
        if not self.plan_file.is_file():
            raise UsageError(f"{self.plan_file}: no such plan file")

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], JobResult]:
        """Nothing to read before the lock: the plan is checked whole by the step."""

        def step(run: JobContext) -> JobResult:
            return apply_saved(
                run.client,
                self.plan_file,
                reports=config.reports.dir,
                max_age=self.max_age,
                concurrency=config.api.concurrency,
                now=run.clock,
                on_outcome=run.progress.outcome,
                on_apply=run.progress.apply,
                approve=self.approve,
                approve_all=self.approve_all,
                stop=run.stop,
            )

        return step


@dataclass(frozen=True)
class UndoJob:
    """Put back what the run in ``run_dir`` shortened (``dry_run``: say what would be)."""

    run_dir: Path
    dry_run: bool = False
    shard: None = None
    notifies = False
    prunes = False

    @property
    def mode(self) -> Mode:
        """undo."""
        return "undo"

    def check(self) -> None:
        """The run folder is checked once the client knows the service (undo_run)."""

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], UndoResult]:
        """Nothing to read before the lock."""

        def step(run: JobContext) -> UndoResult:
            return undo_run(
                run.client,
                self.run_dir,
                reports=config.reports.dir,
                dry_run=self.dry_run,
                concurrency=config.api.concurrency,
                now=run.clock,
                stop=run.stop,
            )

        return step

    def held(self, result: UndoResult) -> bool:
        """An undo has no safety gate to hold it."""
        return False

    def changed(self, result: UndoResult) -> bool:
        """Something was put back."""
        return result.counts.get("restored", 0) > 0

    def write_reports(
        self, result: UndoResult, info: RunInfo, formats: Sequence[str]
    ) -> tuple[list[Path], RunSummary | None]:
        """report.html and report.md from undo.json."""
        return render_undo_reports(result.run_dir, result.document, info, formats), None

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
