"""The plan step: discover targets, walk them, decide, and write plan.json with
decisions.jsonl.zst beside it. The imperative shell around the pure decision model
(retention.core.decide).

Clusters are decided as their walks finish, here or on worker processes
(retention.plan.workers), and written in a fixed order: each cluster's decisions go straight
to decisions.jsonl.zst, so memory holds a few clusters at a time whatever the size of the fleet.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import closing, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.api.client import OpsManagerClient
from retention.config.policyfiles import policy_warnings
from retention.config.scope import ProjectTargets, Scope
from retention.core.horizon import lease, previous_run
from retention.core.model import Target
from retention.core.outage import LastRun
from retention.core.outside import OutsideChange, outside_entry, with_alerts
from retention.core.outside import gone as core_gone
from retention.core.policy.globs import glob_warnings
from retention.core.policy.loader import LoadedPolicy
from retention.core.wording import counted
from retention.errors import StopRequestedError, StrictError
from retention.ledger.recorder import RunRecord
from retention.ops.stopping import Stop
from retention.plan.compared import Comparing
from retention.plan.workers import POOL_FROM, Deciders, Shared
from retention.runfolder.approvelist import Approvable, write_approve_list
from retention.runfolder.folder import approve_list_path, decisions_path, partial_path
from retention.runfolder.planread import PlanFile, open_plan
from retention.runfolder.planwrite import WRITE_BUFFER, PlanBuilder, PolicyDigest
from retention.walk.inventory import FleetSurvey, Walk, WalkListener, survey_fleet, walk_all

log = logging.getLogger("retention.planner")

# The plan's notice when it has a legacy config server (the client logs no warning: there
# is nothing to act on, and the plan and its report say it once).
CONFIG_SERVER_NOTICE = (
    "Legacy config-server snapshots come from deprecated endpoints (mirrored config "
    "servers, database versions before 3.4): their decisions are advisory and never sent."
)


@dataclass(frozen=True)
class PlanResult:
    """A written plan, opened (its head; its files read the rest), its errors, and which
    of its warnings are about the policies (what --strict refuses)."""

    plan: PlanFile
    errors: list[str]  # the plan's own and every cluster's walk error
    policy_warnings: list[str] = field(default_factory=list)
    reports: tuple[Path, ...] = ()  # report.html and report.md of the plan, when written
    # The ledger's chain head once the plan was recorded (None: no ledger).
    ledger_head: str | None = None

    @property
    def held(self) -> bool:
        """True when a safety gate held destructive changes."""
        return bool(self.plan.head["summary"]["clustersHeld"])

    @property
    def what_if(self) -> bool:
        """Made with --at: a question about another time, never to apply."""
        return self.plan.head["whatIf"]


def make_plan(  # noqa: PLR0913 - the ledger's record is one more fact of the same plan
    client: OpsManagerClient,
    scope: Scope,
    *,
    plan_path: Path,
    now: datetime,
    at: datetime | None = None,
    listener: WalkListener | None = None,
    record: RunRecord | None = None,
) -> PlanResult:
    """Walk every target of ``scope``, decide with its policies as of ``at`` (a what-if
    plan: a time asked about, --at) or ``now``, and write the plan, made ``now``, to
    ``plan_path`` and its decisions beside it (runfolder.folder.decisions_path). The
    ``listener`` hears how many targets there are, then each one walked. With a
    ``record`` (the ledger's, of this run), each walked cluster is compared with what the
    ledger knew of it (what changed outside retention goes into the plan, and may hold it)
    and recorded.

    Survey the projects, walk and decide each target into the builder (decisions stream
    out), then write plan.json. Both files are written under partial names and renamed
    when the plan is whole: a plan that stops half way (an error, a StopRequestedError)
    leaves neither, nor the folder it made for them (a caller that records a stop makes it
    again), and an earlier plan at ``plan_path`` stays as it was. ``client.stop``
    is looked at between clusters and before the renames, and a stop wins over whatever
    error it caused on the way (a planning worker killed by the same SIGTERM).
    """
    stop = client.stop or Stop()
    decisions_to = decisions_path(plan_path)
    made = _make_folder(plan_path.parent)
    decisions_partial = partial_path(decisions_to)
    planning = _Planning(client, scope, now, at, listener, stop, record)
    try:
        found, walk_errors, approvable = planning.write(plan_path, decisions_partial)
        stop.check("the plan was renamed into place")
    except BaseException as exc:
        decisions_partial.unlink(missing_ok=True)
        partial_path(plan_path).unlink(missing_ok=True)
        if made:
            _remove_if_empty(plan_path.parent)
        if stop.requested and not isinstance(exc, StopRequestedError):
            raise stop.error(f"the plan was whole ({type(exc).__name__} meanwhile)") from exc
        raise
    decisions_partial.replace(decisions_to)
    partial_path(plan_path).replace(plan_path)
    _list_approvable(plan_path, approvable)
    return PlanResult(open_plan(plan_path), found.errors + walk_errors, found.policy_warnings)


def strict_refusal(result: PlanResult, mode: str) -> StrictError:
    """The error of a --strict ``mode`` (run, dry-run) whose plan has policy warnings: it
    sends nothing, and says where the plan is."""
    warned = counted(len(result.policy_warnings), "policy warning")
    return StrictError(
        f"--strict: {warned}, so this {mode} sent nothing; its plan, with them, is "
        f"{result.plan.path}",
        list(result.policy_warnings),
    )


def _list_approvable(plan_path: Path, approvable: list[Approvable]) -> None:
    """approve.txt beside the plan; one that cannot be written is a warning (the plan and
    its report still name each cluster)."""
    try:
        write_approve_list(plan_path, approvable)
    except OSError as exc:
        text = f"warning: cannot write the list of approvable clusters: {exc.strerror or exc}"
        log.warning("%s", text, extra={"text": text, "fields": {"event": "approve-list"}})
        # An older plan's list must not stand in for this one's (the summary names the list
        # it finds beside the plan).
        with suppress(OSError):
            approve_list_path(plan_path).unlink(missing_ok=True)


def _make_folder(folder: Path) -> bool:
    """Make ``folder`` (and its parents) unless it is there; whether this call made it."""
    there = folder.is_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return not there


def _remove_if_empty(folder: Path) -> None:
    """Remove the run folder a failed plan made, unless something else is in it: an empty
    folder would read as a run to undo, explain and `ls -d reports/*/ | tail -1`."""
    with suppress(OSError):  # not empty (or gone already): left as it is
        folder.rmdir()


def planning_stopped(error: StopRequestedError, what_is_left: str) -> StopRequestedError:
    """The error that says a stop came before the plan was whole, and what is left of it."""
    return StopRequestedError(
        error.signal_name,
        "the plan was whole",
        message=f"stopped by {error.signal_name} while planning: no plan was written and "
        f"{what_is_left}",
    )


@dataclass(frozen=True)
class _Planning:
    """One plan being made: for ``scope``, made ``now``, evaluated at ``at`` or ``now``."""

    client: OpsManagerClient
    scope: Scope
    now: datetime
    at: datetime | None
    listener: WalkListener | None
    stop: Stop
    record: RunRecord | None = None

    def write(
        self, plan_path: Path, decisions_partial: Path
    ) -> tuple[_Found, list[str], list[Approvable]]:
        """Survey, walk and decide into the decisions' partial file, then write plan.json's
        partial file; what the survey found, the walk errors and the clusters only
        max_expire_fraction holds."""
        scope, evaluated = self.scope, self.at or self.now
        lease_for = lease(scope.schedule, evaluated, scope.lease_minimum)
        last_run = _last_run(scope.schedule, evaluated, lease_for, scope.lease_minimum)
        with (
            decisions_partial.open("wb", buffering=WRITE_BUFFER) as decisions_out,
            closing(
                PlanBuilder(
                    evaluated_at=evaluated,
                    created_at=self.now,
                    base_url=self.client.base_url,
                    policies=[_digest(p) for p in scope.policies],
                    decisions_out=decisions_out,
                    lease_seconds=lease_for.total_seconds(),
                    what_if=self.at is not None,
                    spool_dir=plan_path.parent,
                )
            ) as builder,
        ):
            found = _survey(self.client, scope)
            if self.listener is not None:
                self.listener.walks(len(found.targets))
            builder.projects.update(found.survey.names)
            shared = Shared(
                scope.policies,
                found.survey.alerts,
                found.survey.unread,
                evaluated,
                lease_for,
                last_run,
            )
            walk_errors, approvable = self._walk_and_decide(found, builder, shared)
            if self.record is not None:
                self._gone(found)
                found.outside.extend(self.record.carry(self.now))
                builder.outside_changes = [outside_entry(c) for c in found.outside]
                builder.ledger_baseline = self.record.baseline
            found.policy_warnings = _policy_warnings(scope, found, evaluated)
            builder.service_version = self.client.service_version
            _write_whole(plan_path, builder, found)
        return found, walk_errors, approvable

    def _walk_and_decide(
        self, found: _Found, builder: PlanBuilder, shared: Shared
    ) -> tuple[list[str], list[Approvable]]:
        """Decide every target as its walk comes in; the walk errors (each is also in its
        cluster's entry) and the clusters only max_expire_fraction holds. A stop ends it
        between two clusters: the walks stop at their next request, and deciding what was
        walked would only delay the stop."""
        walk_errors: list[str] = []
        approvable: list[Approvable] = []
        concurrency = self.scope.concurrency

        def walks() -> Iterator[Walk]:
            # One walk across every project, so no project's start waits for the last one's.
            heard = self.listener.walk if self.listener is not None else None
            for walk in walk_all(
                self.client, found.targets, concurrency=concurrency, on_done=heard
            ):
                found.named(walk.target)
                if walk.error:
                    walk_errors.append(f"{walk.target.kind} {walk.target.cluster_id}: {walk.error}")
                yield walk

        record = self.record
        comparing = Comparing(shared, None if record is None else record.sight(), self.now)
        pool = self.scope.workers if len(found.targets) >= POOL_FROM else 1
        with Deciders(comparing, pool) as deciders:
            for decided in deciders.decide_all(walks()):
                self.stop.check("deciding the next cluster")
                cluster = decided.cluster
                builder.add_encoded(cluster)
                if record is not None and decided.drift is not None:
                    found.outside.extend(decided.drift.outside)
                    record.observe(decided.target, decided.drift, cluster.summary, self.now)
                if (can := Approvable.of(cluster.summary)) is not None:
                    approvable.append(can)
        return walk_errors, approvable

    def _gone(self, found: _Found) -> None:
        """The targets the ledger knows that discovery no longer finds: gone, each with
        what it had (only where discovery ran: a project that failed, or clusters listed by
        id that the configuration no longer lists, say nothing of it)."""
        record = self.record
        if record is None:
            return
        shard, listed = self.scope.shard, {p.project_id: p for p in self.scope.projects}
        gone = []
        for target in record.known_targets():
            project = listed.get(target.project_id)
            if (
                project is None
                or target.project_id in found.survey.undiscovered
                or (target.project_id, target.cluster_id) in found.fleet
                or (shard is not None and not shard.owns(target.cluster_id))
                or not _discovers(project, target)
            ):
                continue
            gone.append(core_gone(target, record.known(target), self.now))
        alerts = [a for p in {t.project_id for t in gone} for a in found.survey.alerts.get(p, [])]
        named = with_alerts(gone, alerts, {c.cluster_id: _as_target(c) for c in gone})
        record.gone_targets(named, self.now)
        found.outside.extend(named)


@dataclass
class _Found:
    """What the survey of the projects found: the targets to walk, and what to say."""

    survey: FleetSurvey
    targets: list[Target]
    notices: list[str] = field(default_factory=list)  # facts, not warnings: nothing to act on
    policy_warnings: list[str] = field(default_factory=list)
    # What changed outside retention since the ledger last looked (a plan with a ledger).
    outside: list[OutsideChange] = field(default_factory=list)
    # Every target discovered (other shards' too), under the name its walk found: a
    # cluster listed by id in the configuration is named by its snapshots.
    fleet: dict[tuple[str, str], Target] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fleet.update({(t.project_id, t.cluster_id): t for t in self.survey.targets})

    def named(self, target: Target) -> None:
        """``target`` as its walk named it."""
        self.fleet[target.project_id, target.cluster_id] = target

    @property
    def errors(self) -> list[str]:
        """plan.json's top-level errors: alerts unread, discovery failed."""
        return self.survey.errors

    @property
    def warnings(self) -> list[str]:
        """plan.json's warnings before its clusters' own: what discovery could not place,
        then what is worth a warning in the policies."""
        return [*self.survey.warnings, *self.policy_warnings]


def _survey(client: OpsManagerClient, scope: Scope) -> _Found:
    survey = survey_fleet(client, scope.projects, concurrency=scope.concurrency)
    shard = scope.shard
    found = _Found(survey, [t for t in survey.targets if shard is None or shard.owns(t.cluster_id)])
    if any(t.kind == "config-server" for t in found.targets):
        found.notices.append(CONFIG_SERVER_NOTICE)
    return found


def _write_whole(plan_path: Path, builder: PlanBuilder, found: _Found) -> None:
    """plan.json into its partial file (make_plan renames it): readers never see half a
    plan."""
    with partial_path(plan_path).open("wb", buffering=WRITE_BUFFER) as out:
        builder.write(out, found.errors, found.warnings, found.notices)


def _policy_warnings(scope: Scope, found: _Found, now: datetime) -> list[str]:
    """What is worth a warning in the policies as of ``now`` (the plan's time: a what-if
    plan's hold records end by its --at), and the globs that match nothing the survey
    found in the whole fleet (a shard's plan does not warn of what another shard has).
    They go into the plan's warnings, so that what ``validate`` says reaches the runs cron
    starts: their summary, reports, notice and JSON."""
    projects = [p.project_id for p in scope.projects]
    fleet = list(found.fleet.values())
    # A cluster listed by id that this plan did not walk (another shard's, or its walk
    # failed) has no name here: the globs of its project cannot be judged.
    unnamed = {
        t.project_id
        for t in fleet
        if t.kind == "cluster" and t.name == t.cluster_id and _listed_by_id(scope, t)
    }
    undiscovered = [*found.survey.undiscovered, *sorted(unnamed)]
    return [
        *(warning for warning, _ in policy_warnings(scope.policies, now)),
        *glob_warnings(scope.policies, fleet, projects, undiscovered),
    ]


def _discovers(project: ProjectTargets, target: Target) -> bool:
    """Whether the configuration asks discovery for targets of ``target``'s kind in its
    project, or lists it: only then does its absence mean it is gone."""
    listed = project.clusters if target.kind == "cluster" else project.config_servers
    return listed is None or target.cluster_id in listed


def _as_target(change: OutsideChange) -> Target:
    return Target(change.project_id, change.cluster_id, change.cluster_name)


def _listed_by_id(scope: Scope, target: Target) -> bool:
    """Whether the configuration lists ``target``'s project's clusters by id."""
    return any(p.project_id == target.project_id and p.clusters is not None for p in scope.projects)


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
