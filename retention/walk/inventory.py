"""Discovery and the snapshot walk: the targets of each project, every snapshot of each
target (``completed=all``), and the project's OPEN alerts. Uses retention.api and returns
plain data for the pure planner.

The walk runs across clusters on a bounded pool (``api.concurrency``) and yields results in
the order of the targets, with at most a small window of clusters in memory: memory holds
a few clusters' snapshots at a time, never the fleet's. A cluster whose walk fails, or
disagrees with totalCount after two retries, comes back with its error; the planner then
makes no destructive change to it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from retention.api.client import OpsManagerClient
from retention.api.models import AlertStatus, Cluster, SnapshotSchedule
from retention.config.scope import ProjectTargets
from retention.core.model import AlertView, Member, SnapshotView, Target
from retention.errors import ApiError, InconsistentListError
from retention.ops.window import ordered

log = logging.getLogger("retention.inventory")


@dataclass
class Walk:
    """One target's snapshots, or the error that stopped its walk."""

    target: Target
    snapshots: list[SnapshotView] = field(default_factory=list)
    error: str | None = None
    pages: int = 0
    # The target's snapshot schedule, when the job read it beside the snapshots (a forecast).
    schedule: SnapshotSchedule | None = None


class WalkListener(Protocol):
    """Who hears how a walk goes (the command line's progress): how many targets there
    are to walk, once discovery has found them, then each target as its walk ends."""

    def walks(self, total: int) -> None:
        """Discovery ended: ``total`` clusters and config servers to walk."""

    def walk(self, walk: Walk) -> None:
        """One more target walked (its snapshots, or its error)."""


# Discovery decides by typeName, never by the presence of shardName: in real answers the
# sharded cluster's own row may carry a shardName (its first shard's).
SHARDED_TYPES = frozenset({"SHARDED_REPLICA_SET", "SHARDED"})
CONFIG_REPLICA_SET_TYPES = frozenset({"CONFIG_SERVER_REPLICA_SET", "CONFIG_SHARD_REPLICA_SET"})
REPLICA_SET = "REPLICA_SET"


@dataclass
class Discovery:
    """A project's targets, and what discovery has to say about rows it did not walk."""

    targets: list[Target] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def discover(client: OpsManagerClient, wanted: ProjectTargets) -> Discovery:
    """The clusters and legacy config servers of a project, sorted by kind and id.

    Listed ids are used as given (their names are filled from their snapshots). Otherwise
    every row of the clusters list is either walked or a member of a walked cluster:
    sharded clusters and replica sets are walked; a shard (a replica set with a shardName)
    and a config-server replica set are members of the sharded cluster of the same
    clusterName, whose snapshots are theirs; a row of a type we do not know is walked, and
    warned about. A member whose sharded cluster is missing from the list is not walked
    (its snapshots are that cluster's) and is warned about. Config servers come from the
    hosts list. A target whose id a plan cannot carry (retention.core.ids), listed or
    found, stays a target, to be held rather than walked, and is warned about.
    """
    project = wanted.project_id
    found = Discovery()
    if wanted.clusters is not None:
        found.targets += [Target(project, cid, cid, "cluster") for cid in wanted.clusters]
    else:
        found.targets += _cluster_targets(project, list(client.list_clusters(project)), found)
    if wanted.config_servers is not None:
        found.targets += [
            Target(project, hid, hid, "config-server") for hid in wanted.config_servers
        ]
    else:
        for host in client.list_hosts(project):
            if host.is_legacy_config_server:
                name = host.hostname or host.id
                found.targets.append(Target(project, host.id, name, "config-server"))
    found.targets.sort(key=lambda t: (t.kind, t.cluster_id))
    for target in found.targets:
        if (unfit := target.id_problem()) is not None:
            named = f" (named {target.name!r})" if target.name != target.cluster_id else ""
            found.warnings.append(f"project {project}: {unfit}; held{named}")
    return found


def _member_order(member: Member) -> tuple[bool, str, str]:
    """Shards by shard name first, then the config-server replica set."""
    return (member.shard_name is None, member.shard_name or "", member.cluster_id)


def _cluster_targets(project: str, rows: list[Cluster], found: Discovery) -> list[Target]:
    parents = {r.cluster_name: r for r in rows if r.type_name in SHARDED_TYPES}
    members: dict[str, list[Member]] = {r.id: [] for r in parents.values()}
    walked: list[Cluster] = []
    for row in rows:
        kind = row.type_name
        is_member = kind in CONFIG_REPLICA_SET_TYPES or (
            kind in (REPLICA_SET, None) and row.shard_name is not None
        )
        if kind in SHARDED_TYPES:
            walked.append(row)
        elif is_member:
            parent = parents.get(row.cluster_name)
            if parent is None:
                found.warnings.append(
                    f"project {project}: cluster row {row.id} ({kind}, cluster "
                    f"{row.cluster_name!r}) belongs to a sharded cluster that is not in the "
                    "clusters list; not walked: its snapshots are that cluster's"
                )
                continue
            member = Member(row.id, kind, row.shard_name, row.replica_set_name)
            members[parent.id].append(member)
        else:
            if kind != REPLICA_SET:
                found.warnings.append(
                    f"project {project}: cluster {row.id} ({row.cluster_name!r}) has typeName "
                    f"{kind!r}, which retention does not know; walked as a cluster"
                )
            walked.append(row)
    return [
        Target(
            project,
            row.id,
            row.cluster_name or row.id,
            "cluster",
            row.replica_set_name,
            row.type_name,
            tuple(sorted(members.get(row.id, []), key=_member_order)),
        )
        for row in walked
    ]


@dataclass
class Survey:
    """A project's targets and OPEN alerts, or the errors that stopped reading them."""

    project_id: str
    targets: list[Target] = field(default_factory=list)
    alerts: list[AlertView] = field(default_factory=list)
    alerts_error: ApiError | None = None
    discovery_error: ApiError | None = None
    warnings: list[str] = field(default_factory=list)
    name: str | None = None  # the project's name, when GET /groups/{id} gave it


def survey(client: OpsManagerClient, wanted: ProjectTargets, *, alerts: bool = True) -> Survey:
    """Read a project's OPEN alerts (unless not ``alerts``: a job that decides nothing) and
    discover its targets.

    An unreachable API (exit 5) is raised: nothing else would work either. Any other
    error is kept on the survey for the planner to report.
    """
    result = Survey(wanted.project_id)
    try:
        result.name = client.get_project(wanted.project_id).name
    except ApiError as exc:
        if exc.stops_everything:
            raise
        # Only the name is lost: reports show the id alone.
        log.info("cannot read the name of project %s: %s", wanted.project_id, exc)
    try:
        result.alerts = open_alerts(client, wanted.project_id) if alerts else []
    except ApiError as exc:
        if exc.stops_everything:
            raise
        result.alerts_error = exc
    try:
        found = discover(client, wanted)
    except ApiError as exc:
        result.discovery_error = exc
    else:
        result.targets, result.warnings = found.targets, found.warnings
        for warning in found.warnings:
            log.warning("%s", warning)
    return result


@dataclass
class FleetSurvey:
    """Every project surveyed: the targets, each project's OPEN alerts and name, why a
    project's alerts are unknown, and the survey's errors and warnings in words."""

    targets: list[Target] = field(default_factory=list)
    alerts: dict[str, list[AlertView]] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)  # why a project's alerts are unknown
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what discovery could not place
    names: dict[str, str | None] = field(default_factory=dict)  # each project's name
    undiscovered: list[str] = field(default_factory=list)  # projects whose discovery failed


def survey_fleet(
    client: OpsManagerClient,
    projects: Sequence[ProjectTargets],
    *,
    concurrency: int,
    alerts: bool = True,
) -> FleetSurvey:
    """The targets and open alerts of every project (a plan's, a review's, a forecast's;
    not the alerts unless ``alerts``: a listing of the fleet), projects in id order; a
    project whose discovery failed gives no target and one error."""
    found = FleetSurvey()
    # On ``concurrency`` threads: surveyed one after another, each project's three list
    # requests left the walk pool idle (20 projects at 20 ms latency: a fifth of a
    # 2,000-cluster plan).
    for surveyed in ordered(
        lambda wanted: survey(client, wanted, alerts=alerts),
        sorted(projects, key=lambda p: p.project_id),
        workers=concurrency,
        name="survey",
    ):
        project = surveyed.project_id
        found.alerts[project] = surveyed.alerts
        found.names[project] = surveyed.name
        found.warnings += surveyed.warnings
        if surveyed.alerts_error is not None:
            found.unread[project] = (
                f"cannot read the project's alerts, so no alert can be honoured: "
                f"{surveyed.alerts_error}"
            )
            found.errors.append(found.unread[project])
        if surveyed.discovery_error is not None:
            found.errors.append(f"project {project}: discovery failed: {surveyed.discovery_error}")
            found.undiscovered.append(project)
            continue
        found.targets += surveyed.targets
    return found


def open_alerts(client: OpsManagerClient, project_id: str) -> list[AlertView]:
    """The project's OPEN alerts, reduced to what can hold a cluster."""
    return [
        AlertView(a.id, a.event_type_name, a.cluster_id, a.cluster_name, a.replica_set_name)
        for a in client.list_alerts(project_id, status=AlertStatus.OPEN)
        if a.status == AlertStatus.OPEN
    ]


def walk(client: OpsManagerClient, target: Target, *, retries: int = 2) -> Walk:
    """Every snapshot of one target; an inconsistent walk is retried ``retries`` times. A
    target whose id a plan cannot carry is not walked (no request: the id could name another
    resource once a server decodes it) and comes back empty, without an error: the planner
    holds it."""
    if target.id_problem() is not None:
        return Walk(target)
    attempt = 0
    while True:
        try:
            if target.kind == "config-server":
                listing = client.list_config_server_snapshot_states(
                    target.project_id, target.cluster_id
                )
            else:
                listing = client.list_snapshot_states(target.project_id, target.cluster_id)
            snapshots = list(listing)
            names = {s.cluster_name for s in snapshots if s.cluster_name}
            if target.kind == "cluster" and target.name == target.cluster_id and len(names) == 1:
                # A cluster listed by id in the config: its snapshots carry its name.
                target = replace(target, name=names.pop())
            return Walk(target, [SnapshotView.of(s) for s in snapshots], pages=listing.pages)
        except InconsistentListError as exc:
            attempt += 1
            if attempt > retries:
                return Walk(target, error=f"inconsistent after {attempt} walks: {exc}")
            log.warning("walk of %s changed under us; walking it again", target.cluster_id)
        except ApiError as exc:
            return Walk(target, error=str(exc))


def walk_all(
    client: OpsManagerClient,
    targets: Iterable[Target],
    *,
    concurrency: int,
    on_done: Callable[[Walk], None] | None = None,
) -> Iterator[Walk]:
    """Walk targets on ``concurrency`` threads; yield results in the targets' order.

    At most ``2 * concurrency`` walks are in flight or waiting (``retention.ops.window``), so
    memory stays bounded whatever the size of the fleet.
    """
    for result in ordered(
        lambda target: walk(client, target), targets, workers=concurrency, name="walk"
    ):
        if on_done is not None:
            on_done(result)
        yield result
