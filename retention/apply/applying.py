"""The apply step: a plan's changes sent, compare-and-swap, in a run folder of its own.

A saved plan (``apply_saved``, `retention apply`) is copied into a new run folder first
(runfolder.folder), and that copy is what is opened (runfolder.planread), checked and sent:
its head and its cluster entries, read once, are trusted or refused with the approvals
resolved against them (core.guard.trust), and its changes, read once, are all checked
before the first request and then sent (apply.executor). A plan just made by a run
(``apply_planned``) goes the same way from its own folder. A plan refused before the first
request leaves no run folder. Nothing here prints.

A stop (SIGINT, SIGTERM) while sending is journalled and said in ``interrupted.json``; the
result's ``interrupted`` names the signal.
"""

from __future__ import annotations

import logging
import shutil
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.api.client import OpsManagerClient
from retention.apply.executor import (
    ApplyResult,
    CheckedChanges,
    Journal,
    Listener,
    apply_plan,
    checked_changes,
)
from retention.apply.ledgering import RecordedSends
from retention.core.guard import Approval, Asked, ClusterIndex, RefusalError, Trusted, trust
from retention.core.planfile import PlanHead
from retention.core.runfiles import Mode
from retention.core.timestamps import format_timestamp
from retention.errors import ApiError, PlanFileError, StopRequestedError, UsageError
from retention.ops.clock import Clock
from retention.ops.stopping import Stop
from retention.runfolder.folder import RunFolder
from retention.runfolder.planread import PlanFile, open_plan

log = logging.getLogger("retention.jobs")

AUDIT_ALERTS = frozenset({"SNAPSHOT_EXPIRY_UPDATED_AUDIT", "CLUSTERSHOT_EXPIRY_UPDATED_AUDIT"})


@dataclass(frozen=True)
class SavedPlan:
    """A saved plan to apply: its file (any name), and what the apply is asked (the age
    past which the plan is refused, the held clusters to let through)."""

    path: Path
    asked: Asked


@dataclass
class RunResult:
    """What a run or an apply did: its run folder, the plan it applied (opened from the
    folder) and the facts of its clusters, what apply did, for the exit code and the
    summary."""

    run_id: str
    run_dir: Path
    started: datetime
    plan: PlanFile
    clusters: ClusterIndex
    approval: Approval | None = None
    applied: ApplyResult | None = None
    reports: list[Path] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)

    @property
    def head(self) -> PlanHead:
        """The plan's head."""
        return self.plan.head

    @property
    def interrupted(self) -> str | None:
        """The signal that stopped the apply (SIGINT, SIGTERM), or None."""
        return self.applied.interrupted if self.applied is not None else None

    @property
    def failed(self) -> bool:
        """Walk errors or failed PATCHes."""
        walk_errors = bool(self.head.get("errors")) or any(
            c["errors"] for c in self.clusters.values()
        )
        return walk_errors or bool(self.applied and self.applied.failures)

    @property
    def held(self) -> bool:
        """A safety gate held destructive changes that no --approve let through."""
        return any(c["holds"] and key not in self.approved for key, c in self.clusters.items())

    @property
    def approved(self) -> frozenset[tuple[str, str]]:
        """The held clusters an --approve let through."""
        return self.approval.clusters if self.approval is not None else frozenset()

    @property
    def change_count(self) -> int:
        """How many PATCHes the plan would send (held and advisory ones are not sent)."""
        by_action: dict[str, int] = self.head["summary"]["byAction"]
        return sum(n for action, n in by_action.items() if action not in ("held", "advisory"))


def apply_saved(
    client: OpsManagerClient,
    saved: SavedPlan,
    *,
    reports: Path,
    concurrency: int,
    clock: Clock,
    listener: Listener,
) -> RunResult:
    """Apply exactly the saved plan ``saved``, in a new run folder under ``reports``: a copy
    of the plan and its decisions, the journal (and later the reports).

    The copy is opened and checked whole before the first request (PlanFileError, exit 2,
    names the entry): nothing is sent from a plan that is not one apply may trust, and then
    no run folder is left. The approvals let through the held changes of clusters whose
    only hold is max_expire_fraction (UsageError, exit 2, for any other)."""
    started = clock()
    folder = RunFolder.new(reports, started)
    with ExitStack() as stack:
        try:
            copy = folder.copy_plan(saved.path)
            plan = open_plan(copy, copy_of=saved.path).opened()
            trusted = trust(
                plan.head,
                plan.clusters,
                saved.asked,
                base_url=client.base_url,
                now=started,
                url_from=client.base_url_setting,
            )
            changes = stack.enter_context(
                checked_changes(plan.changes, trusted, shown=saved.path, spool_dir=folder.path)
            )
            journal = stack.enter_context(closing(Journal(folder.results, clock)))
        except RefusalError as exc:
            shutil.rmtree(folder.path, ignore_errors=True)
            said = f"{saved.path}: {exc.why}"
            refused = PlanFileError(str(saved.path), exc.why) if exc.whole else UsageError(said)
            raise refused from None
        except BaseException:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise
        listener.apply(changes.count)
        if isinstance(listener, RecordedSends):
            listener.begin(folder.run_id, started)
        applied = _send(client, changes, trusted, journal, concurrency, listener)
    if applied.interrupted:
        _mark(folder, "apply", started, clock, applied)
    approval, clusters = trusted.approval, trusted.clusters
    return RunResult(folder.run_id, folder.path, started, plan.file, clusters, approval, applied)


def apply_planned(
    client: OpsManagerClient,
    result: RunResult,
    *,
    concurrency: int,
    clock: Clock,
    listener: Listener,
    acknowledge_audit_alerts: bool,
) -> None:
    """The apply step of a run: the plan it just wrote is checked as a saved plan's is,
    then sent; its own audit alerts are acknowledged when asked, and a stop that came
    meanwhile is recorded."""
    started, stop = result.started, client.stop or Stop()
    plan = result.plan.opened()
    trusted = Trusted.made(plan.head, result.clusters)
    run_dir = result.run_dir
    shown = plan.file.path
    with checked_changes(plan.changes, trusted, shown=shown, spool_dir=run_dir) as changes:
        listener.apply(changes.count)
        journal = Journal(RunFolder(run_dir).results, clock)
        with closing(journal):
            if isinstance(listener, RecordedSends):
                listener.begin(result.run_id, started)
            applied = _send(client, changes, trusted, journal, concurrency, listener)
    result.applied = applied
    if acknowledge_audit_alerts and applied.changed_clusters:
        result.acknowledged = acknowledge_own_audit_alerts(
            client, applied, started, result.run_id, clock()
        )
    if stop.requested:
        # However late it came (even while acknowledging): the person asked to stop.
        applied.interrupted = stop.name
        _mark(RunFolder(run_dir), "run", started, clock, applied)


def _send(
    client: OpsManagerClient,
    changes: CheckedChanges,
    trusted: Trusted,
    journal: Journal,
    concurrency: int,
    listener: Listener,
) -> ApplyResult:
    """apply_plan, with the ledger told (a listener that records: RecordedSends) of every
    change before the first is sent and of how each ended, however the apply ends."""
    if not isinstance(listener, RecordedSends):
        return apply_plan(
            client, changes, trusted, journal, concurrency=concurrency, listener=listener
        )
    listener.intend(changes)
    try:
        return apply_plan(
            client, changes, trusted, journal, concurrency=concurrency, listener=listener
        )
    finally:
        listener.done()


def _mark(
    folder: RunFolder, mode: Mode, started: datetime, clock: Clock, applied: ApplyResult | None
) -> None:
    """interrupted.json for an apply a signal stopped."""
    if applied is None or applied.interrupted is None:
        return
    folder.mark_interrupted(
        mode, applied.interrupted, started, clock(), applied.counts, sent=applied.sent > 0
    )


def acknowledge_own_audit_alerts(
    client: OpsManagerClient,
    applied: ApplyResult,
    started: datetime,
    run_id: str,
    now: datetime,
) -> list[str]:
    """Acknowledge for 24 hours the OPEN expiry-audit alerts this run's changes caused:
    same cluster, opened after the run started. Only the two audit types, never a hold.
    A stop ends it: what was acknowledged until then is returned."""
    done: list[str] = []
    try:
        _acknowledge(client, applied.changed_clusters, started, run_id, now, done=done)
    except StopRequestedError:
        log.info("stopped while acknowledging audit alerts: %d acknowledged", len(done))
    return done


def _acknowledge(
    client: OpsManagerClient,
    clusters: set[tuple[str, str, str]],
    started: datetime,
    run_id: str,
    now: datetime,
    *,
    done: list[str],
) -> None:
    for project in sorted({p for p, _, _ in clusters}):
        ids = {c for p, c, _ in clusters if p == project}
        names = {n for p, _, n in clusters if p == project and n}
        try:
            alerts = list(client.list_alerts(project, status="OPEN"))
        except ApiError as exc:
            log.warning("cannot list alerts of %s to acknowledge audit alerts: %s", project, exc)
            continue
        for alert in alerts:
            ours = alert.cluster_id in ids or alert.cluster_name in names
            fresh = alert.created is not None and alert.created >= started
            if alert.event_type_name in AUDIT_ALERTS and ours and fresh:
                try:
                    client.acknowledge_alert(
                        project,
                        alert.id,
                        now + timedelta(hours=24),
                        comment=f"retention run {run_id} ({format_timestamp(started)}): "
                        "expiry changes made by this run",
                    )
                    done.append(alert.id)
                except ApiError as exc:
                    log.warning("cannot acknowledge alert %s: %s", alert.id, exc)
