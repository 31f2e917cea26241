"""The jobs behind `retention run` and `retention apply`: plan, gate, apply, report.

Each run writes ``reports/<UTC time>-<run id>/`` with plan.json, decisions.jsonl,
results.jsonl, report.html and report.md, under the reports folder's lock. The CLI maps a
``JobResult`` to an exit code; nothing here prints.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from retention.api import OpsManagerClient
from retention.errors import ApiError, UsageError
from retention.executor import ApplyResult, Journal, Outcome, apply_plan, held_clusters_of
from retention.inventory import ProjectTargets, Walk
from retention.plan.planfile import FORMAT, read_entries, read_head
from retention.planner import make_plan
from retention.policy.loader import PolicySet
from retention.sharding import Shard
from retention.timestamps import format_timestamp, parse_timestamp

log = logging.getLogger("retention.jobs")

AUDIT_ALERTS = frozenset({"SNAPSHOT_EXPIRY_UPDATED_AUDIT", "CLUSTERSHOT_EXPIRY_UPDATED_AUDIT"})


def new_run_dir(reports: Path, now: datetime) -> tuple[str, Path]:
    """A fresh run id and its folder, ``<UTC time>-<run id>``."""
    run_id = secrets.token_hex(4)
    return run_id, reports / f"{now.strftime('%Y%m%dT%H%M%SZ')}-{run_id}"


@dataclass
class JobResult:
    """What a run or an apply did, for the exit code and the summary."""

    run_id: str
    run_dir: Path
    document: dict[str, Any]
    applied: ApplyResult | None = None
    reports: list[Path] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Walk errors or failed PATCHes."""
        walk_errors = bool(self.document.get("errors")) or any(
            c["errors"] for c in self.document["clusters"]
        )
        return walk_errors or bool(self.applied and self.applied.failures)

    @property
    def held(self) -> bool:
        """A safety gate held destructive changes."""
        return bool(self.document["summary"]["clustersHeld"])


def run_job(
    client: OpsManagerClient,
    policies: PolicySet,
    projects: Sequence[ProjectTargets],
    *,
    reports: Path,
    schedule: str | None,
    concurrency: int,
    dry_run: bool,
    acknowledge_audit_alerts: bool = False,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    on_outcome: Callable[[Outcome], None] | None = None,
    on_walk: Callable[[Walk], None] | None = None,
    on_apply: Callable[[int], None] | None = None,
    shard: Shard | None = None,
) -> JobResult:
    """Plan, then (unless a dry run) apply, in a new run folder under ``reports``.

    ``on_walk`` hears of each walked cluster, ``on_apply`` of the number of changes before
    they are sent, ``on_outcome`` of each outcome (for progress on a terminal).
    """
    started = now()
    run_id, run_dir = new_run_dir(reports, started)
    planned = make_plan(
        client,
        policies,
        projects,
        now=started,
        created_at=started,
        schedule=schedule,
        concurrency=concurrency,
        plan_path=run_dir / "plan.json",
        on_walk=on_walk,
        shard=shard,
    )
    result = JobResult(run_id, run_dir, planned.document)
    if not dry_run:
        if on_apply is not None:
            on_apply(change_count(planned.document))
        result.applied = _apply(
            client,
            planned.plan_path,
            planned.document,
            concurrency=concurrency,
            now=now,
            on_outcome=on_outcome,
        )
        if acknowledge_audit_alerts and result.applied.changed_clusters:
            result.acknowledged = acknowledge_own_audit_alerts(
                client, result.applied, started, run_id, now()
            )
    return result


def change_count(head: dict[str, Any]) -> int:
    """How many PATCHes a plan would send (held and advisory ones are not sent)."""
    by_action: dict[str, int] = head["summary"]["byAction"]
    return sum(n for action, n in by_action.items() if action not in ("held", "advisory"))


def apply_saved(
    client: OpsManagerClient,
    plan_path: Path,
    *,
    max_age: timedelta,
    concurrency: int,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    on_outcome: Callable[[Outcome], None] | None = None,
    on_apply: Callable[[int], None] | None = None,
) -> JobResult:
    """Apply exactly the saved plan at ``plan_path`` (journal and reports beside it)."""
    document = read_plan(plan_path, base_url=client.base_url, max_age=max_age, now=now())
    if on_apply is not None:
        on_apply(change_count(document))
    result = JobResult(plan_path.parent.name.rsplit("-", 1)[-1], plan_path.parent, document)
    result.applied = _apply(
        client,
        plan_path,
        document,
        concurrency=concurrency,
        now=now,
        on_outcome=on_outcome,
    )
    return result


def read_plan(path: Path, *, base_url: str, max_age: timedelta, now: datetime) -> dict[str, Any]:
    """A saved plan, refused (UsageError, exit 2) if it is not one we can apply safely."""
    try:
        document: Any = read_head(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the plan: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise UsageError(f"{path}: not a {FORMAT} plan (format: {found!r})")
    if document.get("baseUrl", "").rstrip("/") != base_url.rstrip("/"):
        raise UsageError(
            f"{path}: the plan was made against {document.get('baseUrl')!r}, "
            f"not the configured {base_url!r}; plan again against this API"
        )
    try:
        created = parse_timestamp(str(document["createdAt"]))
    except (KeyError, ValueError):
        raise UsageError(f"{path}: createdAt is missing or not a timestamp") from None
    if now - created > max_age:
        raise UsageError(
            f"{path}: the plan is {_hours(now - created)} old, more than --max-age "
            f"{_hours(max_age)}; the fleet has moved on since: plan again"
        )
    for key, kind in (("clusters", list), ("summary", dict)):
        if not isinstance(document.get(key), kind):
            raise UsageError(f"{path}: '{key}' is missing or malformed")
    return document


def _hours(delta: timedelta) -> str:
    return f"{delta.total_seconds() / 3600:.1f}h"


def _apply(
    client: OpsManagerClient,
    plan_path: Path,
    head: dict[str, Any],
    *,
    concurrency: int,
    now: Callable[[], datetime],
    on_outcome: Callable[[Outcome], None] | None,
) -> ApplyResult:
    journal = Journal(plan_path.with_name("results.jsonl"), now)
    try:
        return apply_plan(
            client,
            read_entries(plan_path, "changes"),
            held_clusters_of(head),
            journal,
            now=now,
            concurrency=concurrency,
            on_outcome=on_outcome,
        )
    finally:
        journal.close()


def acknowledge_own_audit_alerts(
    client: OpsManagerClient,
    applied: ApplyResult,
    started: datetime,
    run_id: str,
    now: datetime,
) -> list[str]:
    """Acknowledge for 24 hours the OPEN expiry-audit alerts this run's changes caused:
    same cluster, opened after the run started. Only the two audit types, never a hold."""
    done: list[str] = []
    clusters = applied.changed_clusters
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
    return done
