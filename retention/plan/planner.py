"""Planning as a job: discover targets, walk them, decide, and write plan.json with
decisions.jsonl.zst beside it. The imperative shell around the pure retention.plan.

Clusters are decided as their walks finish, here or on worker processes
(retention.plan.workers), and written in a fixed order: each cluster's decisions go straight
to decisions.jsonl.zst, so memory holds a few clusters at a time whatever the size of the fleet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.api.client import OpsManagerClient
from retention.core.horizon import LEASE_MINIMUM, lease, previous_run
from retention.core.model import Target
from retention.core.outage import LastRun
from retention.core.planfile import PlanHead
from retention.core.policy.loader import LoadedPolicy, PolicySet
from retention.errors import StopRequestedError
from retention.ops.sharding import Shard
from retention.ops.stopping import Stop
from retention.plan.workers import POOL_FROM, Deciders, Shared
from retention.runfolder.folder import decisions_path, partial_path
from retention.runfolder.planread import read_head
from retention.runfolder.planwrite import WRITE_BUFFER, PlanBuilder, PolicyDigest
from retention.walk.inventory import FleetSurvey, ProjectTargets, Walk, survey_fleet, walk_all

log = logging.getLogger("retention.planner")

# The plan's notice when it has a legacy config server (the client logs no warning: there
# is nothing to act on, and the plan and its report say it once).
CONFIG_SERVER_NOTICE = (
    "Legacy config-server snapshots come from deprecated endpoints (mirrored config "
    "servers, database versions before 3.4): their decisions are advisory and never sent."
)


@dataclass(frozen=True)
class PlanResult:
    """A written plan: its head (the plan without its long lists), files and errors."""

    document: PlanHead
    plan_path: Path
    decisions_path: Path
    errors: list[str]  # the plan's own and every cluster's walk error

    @property
    def held(self) -> bool:
        """True when a safety gate held destructive changes."""
        return bool(self.document["summary"]["clustersHeld"])


def make_plan(
    client: OpsManagerClient,
    policies: PolicySet,
    projects: Sequence[ProjectTargets],
    *,
    now: datetime,
    created_at: datetime,
    schedule: str | None,
    concurrency: int,
    plan_path: Path,
    lease_minimum: timedelta = LEASE_MINIMUM,
    on_walk: Callable[[Walk], None] | None = None,
    shard: Shard | None = None,
    what_if: bool = False,
    workers: int = 1,
) -> PlanResult:
    """Walk every target of ``projects``, decide with ``policies`` as of ``now``, and write
    the plan to ``plan_path`` and its decisions beside it (runfolder.folder.decisions_path).
    ``what_if``: ``now`` is a time asked about (--at); ``workers``: processes deciding.

    Survey the projects, walk and decide each target into the builder (decisions stream
    out), then write plan.json. Both files are written under partial names and renamed
    when the plan is whole: a plan that stops half way (an error, a StopRequestedError)
    leaves neither, and an earlier plan at ``plan_path`` stays as it was. ``client.stop``
    is looked at between clusters and before the renames, and a stop wins over whatever
    error it caused on the way (a planning worker killed by the same SIGTERM).
    """
    stop = client.stop or Stop()
    decisions_to = decisions_path(plan_path, written=True)
    plan_path.parent.mkdir(parents=True, exist_ok=True)
    decisions_partial = partial_path(decisions_to)
    try:
        found, walk_errors = _plan_into(
            client,
            policies,
            projects,
            decisions_partial,
            plan_path,
            now=now,
            created_at=created_at,
            schedule=schedule,
            lease_minimum=lease_minimum,
            concurrency=concurrency,
            on_walk=on_walk,
            shard=shard,
            what_if=what_if,
            workers=workers,
            stop=stop,
        )
        stop.check("the plan was renamed into place")
    except BaseException as exc:
        decisions_partial.unlink(missing_ok=True)
        partial_path(plan_path).unlink(missing_ok=True)
        if stop.requested and not isinstance(exc, StopRequestedError):
            raise stop.error(f"the plan was whole ({type(exc).__name__} meanwhile)") from exc
        raise
    decisions_partial.replace(decisions_to)
    partial_path(plan_path).replace(plan_path)
    # Read back: its clusters are streamed from the file, not held (PlanClusters).
    return PlanResult(read_head(plan_path), plan_path, decisions_to, found.errors + walk_errors)


def _plan_into(
    client: OpsManagerClient,
    policies: PolicySet,
    projects: Sequence[ProjectTargets],
    decisions_partial: Path,
    plan_path: Path,
    *,
    now: datetime,
    created_at: datetime,
    schedule: str | None,
    lease_minimum: timedelta,
    concurrency: int,
    on_walk: Callable[[Walk], None] | None,
    shard: Shard | None,
    what_if: bool,
    workers: int,
    stop: Stop,
) -> tuple[_Found, list[str]]:
    lease_for = lease(schedule, now, lease_minimum)
    last_run = _last_run(schedule, now, lease_for, lease_minimum)
    with (
        decisions_partial.open("wb", buffering=WRITE_BUFFER) as decisions_out,
        closing(
            PlanBuilder(
                evaluated_at=now,
                created_at=created_at,
                base_url=client.base_url,
                policies=[_digest(p) for p in policies],
                decisions_out=decisions_out,
                lease_seconds=lease_for.total_seconds(),
                what_if=what_if,
                spool_dir=plan_path.parent,
            )
        ) as builder,
    ):
        found = _survey(client, projects, shard, concurrency)
        builder.projects.update(found.survey.names)
        walk_errors = _walk_and_decide(
            client,
            policies,
            found,
            builder,
            now=now,
            lease_for=lease_for,
            last_run=last_run,
            concurrency=concurrency,
            workers=workers,
            on_walk=on_walk,
            stop=stop,
        )
        builder.service_version = client.service_version
        _write_whole(plan_path, builder, found)
    return found, walk_errors


@dataclass
class _Found:
    """What the survey of the projects found: the targets to walk, and what to say."""

    survey: FleetSurvey
    targets: list[Target]
    notices: list[str] = field(default_factory=list)  # facts, not warnings: nothing to act on

    @property
    def errors(self) -> list[str]:
        """plan.json's top-level errors: alerts unread, discovery failed."""
        return self.survey.errors


def _survey(
    client: OpsManagerClient,
    projects: Sequence[ProjectTargets],
    shard: Shard | None,
    concurrency: int,
) -> _Found:
    survey = survey_fleet(client, projects, concurrency=concurrency)
    found = _Found(survey, [t for t in survey.targets if shard is None or shard.owns(t.cluster_id)])
    if any(t.kind == "config-server" for t in found.targets):
        found.notices.append(CONFIG_SERVER_NOTICE)
    return found


def _walk_and_decide(
    client: OpsManagerClient,
    policies: PolicySet,
    found: _Found,
    builder: PlanBuilder,
    *,
    now: datetime,
    lease_for: timedelta,
    last_run: LastRun | None,
    concurrency: int,
    workers: int,
    on_walk: Callable[[Walk], None] | None,
    stop: Stop,
) -> list[str]:
    """Decide every target as its walk comes in; the walk errors (each is also in its
    cluster's entry). A stop ends it between two clusters: the walks stop at their next
    request, and deciding what was walked would only delay the stop."""
    walk_errors: list[str] = []

    def walks() -> Iterator[Walk]:
        # One walk across every project, so no project's start waits for the last one's end.
        for walk in walk_all(client, found.targets, concurrency=concurrency, on_done=on_walk):
            if walk.error:
                walk_errors.append(f"{walk.target.kind} {walk.target.cluster_id}: {walk.error}")
            yield walk

    shared = Shared(policies, found.survey.alerts, found.survey.unread, now, lease_for, last_run)
    pool = workers if len(found.targets) >= POOL_FROM else 1
    with Deciders(shared, pool) as deciders:
        for cluster in deciders.decide_all(walks()):
            stop.check("deciding the next cluster")
            builder.add_encoded(cluster)
    return walk_errors


def _write_whole(plan_path: Path, builder: PlanBuilder, found: _Found) -> None:
    """plan.json into its partial file (make_plan renames it): readers never see half a
    plan."""
    with partial_path(plan_path).open("wb", buffering=WRITE_BUFFER) as out:
        builder.write(out, found.errors, found.survey.warnings, found.notices)


def _last_run(
    schedule: str | None, now: datetime, lease_for: timedelta, minimum: timedelta
) -> LastRun | None:
    """The job's last scheduled run before ``now`` and what it left kept snapshots (None
    without a schedule: no run to hold a snapshot's expiry against)."""
    at = previous_run(schedule, now)
    if at is None:
        return None
    left = at + lease(schedule, at, minimum)
    return LastRun(at, left, lease_for.total_seconds())


def _digest(loaded: LoadedPolicy) -> PolicyDigest:
    return PolicyDigest(loaded.policy.name, loaded.sha256, str(loaded.path))
