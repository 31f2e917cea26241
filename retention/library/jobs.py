"""The jobs behind `retention run` and `retention apply`: plan, gate, apply, report.

Each run writes ``reports/<UTC time>-<run id>/`` with plan.json, decisions.jsonl,
results.jsonl, report.html and report.md, under the reports folder's lock. The CLI maps a
``JobResult`` to an exit code; nothing here prints.

A run stopped by a signal (``Stop``) says so in its folder: ``interrupted.json`` names the
signal, when, and the step it stopped in. Stopped while planning, the folder has that file
only (no half plan); stopped while applying, it also has the plan, the journal (whose
``not-sent`` lines are the changes left) and the reports.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.api.client import OpsManagerClient
from retention.apply.executor import ApplyResult, Journal, Outcome, apply_plan
from retention.core.guard import Approval, EntryCheck, plan_refusal
from retention.core.guard import approve as approval_of
from retention.core.horizon import LEASE_MINIMUM
from retention.core.planfile import ClusterFacts, PlanHead
from retention.core.policy.loader import PolicySet
from retention.core.runfiles import INTERRUPTED_FORMAT, InterruptedDocument, Mode
from retention.core.timestamps import format_timestamp
from retention.errors import (
    SIGNAL_EXITS,
    ApiError,
    PlanFileError,
    StopRequestedError,
    UsageError,
)
from retention.ops.clock import Clock, system_clock
from retention.ops.sharding import Shard
from retention.ops.stopping import Stop
from retention.plan.planner import make_plan
from retention.runfolder.folder import RESULTS, RunFolder, decisions_path
from retention.runfolder.planread import read_head, to_send
from retention.walk.inventory import ProjectTargets, Walk

log = logging.getLogger("retention.jobs")

AUDIT_ALERTS = frozenset({"SNAPSHOT_EXPIRY_UPDATED_AUDIT", "CLUSTERSHOT_EXPIRY_UPDATED_AUDIT"})


@dataclass
class JobResult:
    """What a run or an apply did, for the exit code and the summary."""

    run_id: str
    run_dir: Path
    document: PlanHead
    applied: ApplyResult | None = None
    reports: list[Path] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    approval: Approval | None = None

    @property
    def interrupted(self) -> str | None:
        """The signal that stopped the apply (SIGINT, SIGTERM), or None."""
        return self.applied.interrupted if self.applied is not None else None

    @property
    def failed(self) -> bool:
        """Walk errors or failed PATCHes."""
        walk_errors = bool(self.document.get("errors")) or any(
            c["errors"] for c in self.document["clusters"]
        )
        return walk_errors or bool(self.applied and self.applied.failures)

    @property
    def held(self) -> bool:
        """A safety gate held destructive changes that no --approve let through."""
        approved = self.approval.clusters if self.approval is not None else frozenset()
        return any(
            c["holds"] and (c["projectId"], c["clusterId"]) not in approved
            for c in self.document["clusters"]
        )


def run_job(
    client: OpsManagerClient,
    policies: PolicySet,
    projects: Sequence[ProjectTargets],
    *,
    reports: Path,
    schedule: str | None,
    concurrency: int,
    dry_run: bool,
    lease_minimum: timedelta = LEASE_MINIMUM,
    acknowledge_audit_alerts: bool = False,
    now: Clock = system_clock,
    on_outcome: Callable[[Outcome], None] | None = None,
    on_walk: Callable[[Walk], None] | None = None,
    on_apply: Callable[[int], None] | None = None,
    shard: Shard | None = None,
    workers: int = 1,
    stop: Stop | None = None,
) -> JobResult:
    """Plan, then (unless a dry run) apply, in a new run folder under ``reports``.
    ``on_walk`` hears of each walked cluster, ``on_apply`` of the changes to send, and
    ``on_outcome`` of each outcome (progress). A ``stop`` while planning raises
    StopRequestedError once the folder says so (nothing sent); while applying, the
    result's ``interrupted`` names the signal."""
    started = now()
    folder = RunFolder.new(reports, started)
    try:
        planned = make_plan(
            client,
            policies,
            projects,
            now=started,
            created_at=started,
            schedule=schedule,
            lease_minimum=lease_minimum,
            concurrency=concurrency,
            plan_path=folder.plan,
            on_walk=on_walk,
            shard=shard,
            workers=workers,
        )
    except StopRequestedError as exc:
        mode: Mode = "dry-run" if dry_run else "run"
        where = mark_interrupted(folder.path, mode, exc.signal_name, started, now())
        raise planning_stopped(exc, f"nothing was sent ({where})") from None
    result = JobResult(folder.run_id, folder.path, planned.document)
    if not dry_run:
        _apply_planned(
            client,
            result,
            planned.plan_path,
            started=started,
            concurrency=concurrency,
            acknowledge_audit_alerts=acknowledge_audit_alerts,
            now=now,
            on_outcome=on_outcome,
            on_apply=on_apply,
            stop=stop or Stop(),
        )
    return result


def _apply_planned(
    client: OpsManagerClient,
    result: JobResult,
    plan_path: Path,
    *,
    started: datetime,
    concurrency: int,
    acknowledge_audit_alerts: bool,
    now: Clock,
    on_outcome: Callable[[Outcome], None] | None,
    on_apply: Callable[[int], None] | None,
    stop: Stop,
) -> None:
    """The apply step of a run: the plan just written is sent, its own audit alerts are
    acknowledged when asked, and a stop that came meanwhile is recorded."""
    # The entries just written pass the checks a saved plan's do before anything is sent.
    clusters = check_entries(plan_path, result.document, frozenset())
    if on_apply is not None:
        on_apply(change_count(result.document))
    applied = _apply(
        client,
        plan_path,
        clusters,
        concurrency=concurrency,
        now=now,
        on_outcome=on_outcome,
        stop=stop,
    )
    result.applied = applied
    if acknowledge_audit_alerts and applied.changed_clusters:
        result.acknowledged = acknowledge_own_audit_alerts(
            client, applied, started, result.run_id, now()
        )
    if stop.requested:
        # However late it came (even while acknowledging): the person asked to stop.
        applied.interrupted = stop.name
        mark_interrupted(result.run_dir, "run", stop.name, started, now(), result=result)


def change_count(head: PlanHead) -> int:
    """How many PATCHes a plan would send (held and advisory ones are not sent)."""
    by_action: dict[str, int] = head["summary"]["byAction"]
    return sum(n for action, n in by_action.items() if action not in ("held", "advisory"))


def apply_saved(
    client: OpsManagerClient,
    plan_path: Path,
    *,
    reports: Path,
    max_age: timedelta,
    concurrency: int,
    now: Clock = system_clock,
    on_outcome: Callable[[Outcome], None] | None = None,
    on_apply: Callable[[int], None] | None = None,
    approve: Sequence[str] = (),
    approve_all: bool = False,
    stop: Stop | None = None,
) -> JobResult:
    """Apply exactly the saved plan at ``plan_path``, any file name, in a new run folder
    under ``reports`` (a copy of the plan and its decisions, the journal, the reports).

    The whole plan is checked before the first request (PlanFileError, exit 2, names the
    entry): nothing is sent from a plan that is not one apply may trust. ``approve`` (names
    or ids) and ``approve_all`` let through the held changes of clusters whose only hold is
    max_expire_fraction (UsageError, exit 2, for any other).
    """
    started = now()
    head = _head(plan_path, base_url=client.base_url, max_age=max_age, now=started)
    try:
        approval = approval_of(head, approve, everything=approve_all)
    except ValueError as exc:
        raise UsageError(f"{plan_path}: {exc}") from None
    clusters = check_entries(plan_path, head, approval.clusters)
    folder = RunFolder.new(reports, started)
    run_id, run_dir = folder.run_id, folder.path
    run_dir.mkdir(parents=True)
    copy = folder.plan
    shutil.copyfile(plan_path, copy)
    if (decisions := decisions_path(plan_path)).is_file():
        shutil.copyfile(decisions, decisions_path(copy, written=True))
    approved = sum(
        c["counts"].get("action:held", 0)
        for c in (head["clusters"] if approval.clusters else ())
        if (c["projectId"], c["clusterId"]) in approval.clusters
    )
    if on_apply is not None:
        on_apply(change_count(head) + approved)
    result = JobResult(run_id, run_dir, head, approval=approval)
    result.applied = _apply(
        client,
        copy,
        clusters,
        concurrency=concurrency,
        now=now,
        on_outcome=on_outcome,
        approved=approval.clusters,
        stop=stop,
    )
    if result.interrupted:
        mark_interrupted(run_dir, "apply", result.interrupted, started, now(), result=result)
    return result


def _head(path: Path, *, base_url: str, max_age: timedelta, now: datetime) -> PlanHead:
    try:
        head = read_head(path)
    except OSError as exc:
        raise PlanFileError(str(path), f"cannot read the plan: {exc.strerror or exc}") from None
    refusal = plan_refusal(head, base_url=base_url, now=now, max_age=max_age)
    if refusal is not None:
        raise PlanFileError(str(path), refusal)
    return head


def check_entries(
    path: Path, head: PlanHead, approved: frozenset[tuple[str, str]]
) -> dict[tuple[str, str], ClusterFacts]:
    """Every entry apply would send (the changes, and the held changes of approved
    clusters) passes the entry checks, or PlanFileError names the first that does not;
    the facts of the plan's clusters they were checked against, which apply sends by
    (one pass over the clusters, which a head read back streams from its file)."""
    entries = EntryCheck(head)
    for n, change in enumerate(to_send(path, approved)):
        if (problem := entries.problem(change)) is not None:
            where = f"{path}: entry {n} to send (snapshot {change['snapshotId']})"
            raise PlanFileError(where, problem)
    return entries.clusters


def _apply(
    client: OpsManagerClient,
    plan_path: Path,
    clusters: Mapping[tuple[str, str], ClusterFacts],
    *,
    concurrency: int,
    now: Clock,
    on_outcome: Callable[[Outcome], None] | None,
    approved: frozenset[tuple[str, str]] = frozenset(),
    stop: Stop | None = None,
) -> ApplyResult:
    journal = Journal(plan_path.with_name(RESULTS), now)
    try:
        return apply_plan(
            client,
            to_send(plan_path, approved),
            clusters,
            journal,
            now=now,
            concurrency=concurrency,
            on_outcome=on_outcome,
            approved=approved,
            stop=stop,
        )
    finally:
        journal.close()


def planning_stopped(error: StopRequestedError, what_is_left: str) -> StopRequestedError:
    """The error that says a stop came before the plan was whole, and what is left of it."""
    return StopRequestedError(
        error.signal_name,
        "the plan was whole",
        message=f"stopped by {error.signal_name} while planning: no plan was written and "
        f"{what_is_left}",
    )


def mark_interrupted(
    run_dir: Path,
    mode: Mode,
    signal_name: str,
    started: datetime,
    stopped: datetime,
    *,
    result: JobResult | None = None,
) -> Path:
    """Write ``interrupted.json`` into ``run_dir``: which signal stopped which command when,
    in which step, whether a PATCH went out, and (once applying began) the outcomes
    journalled so far."""
    applied = result.applied if result is not None else None
    document: InterruptedDocument = {
        "format": INTERRUPTED_FORMAT,
        "mode": mode,
        "signal": signal_name,
        "exitCode": SIGNAL_EXITS[signal_name],
        "startedAt": format_timestamp(started),
        "stoppedAt": format_timestamp(stopped),
        "step": "apply" if applied is not None else "plan",
        "sent": applied is not None and applied.sent > 0,
        "outcomes": dict(sorted(applied.counts.items())) if applied is not None else None,
    }
    return RunFolder(run_dir).write_interrupted(document)


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
