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
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from retention.api import OpsManagerClient
from retention.api.models import AlertStatus
from retention.errors import EXIT_UNREACHABLE, ApiError, InconsistentListError
from retention.plan.model import Alert, SnapshotView, Target

log = logging.getLogger("retention.inventory")


@dataclass(frozen=True)
class ProjectTargets:
    """What to walk in a project: listed ids, or None to discover them."""

    project_id: str
    clusters: Sequence[str] | None = None
    config_servers: Sequence[str] | None = None


@dataclass
class Walk:
    """One target's snapshots, or the error that stopped its walk."""

    target: Target
    snapshots: list[SnapshotView] = field(default_factory=list)
    error: str | None = None
    pages: int = 0


def discover(client: OpsManagerClient, wanted: ProjectTargets) -> list[Target]:
    """The clusters and legacy config servers of a project, sorted by kind and id.

    Listed ids are used as given (their names are filled from their snapshots); otherwise
    clusters come from the clusters list (shards of a sharded cluster are left out: their
    snapshots are the sharded cluster's) and config servers from the hosts list.
    """
    project = wanted.project_id
    targets: list[Target] = []
    if wanted.clusters is not None:
        targets += [Target(project, cid, cid, "cluster") for cid in wanted.clusters]
    else:
        for cluster in client.list_clusters(project):
            if cluster.shard_name:
                continue
            name = cluster.cluster_name or cluster.id
            targets.append(Target(project, cluster.id, name, "cluster", cluster.replica_set_name))
    if wanted.config_servers is not None:
        targets += [Target(project, hid, hid, "config-server") for hid in wanted.config_servers]
    else:
        for host in client.list_hosts(project):
            if host.is_legacy_config_server:
                targets.append(Target(project, host.id, host.hostname or host.id, "config-server"))
    return sorted(targets, key=lambda t: (t.kind, t.cluster_id))


@dataclass
class Survey:
    """A project's targets and OPEN alerts, or the errors that stopped reading them."""

    project_id: str
    targets: list[Target] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    alerts_error: ApiError | None = None
    discovery_error: ApiError | None = None


def survey(client: OpsManagerClient, wanted: ProjectTargets) -> Survey:
    """Read a project's OPEN alerts and discover its targets.

    An unreachable API (exit 5) is raised: nothing else would work either. Any other
    error is kept on the survey for the planner to report.
    """
    result = Survey(wanted.project_id)
    try:
        result.alerts = open_alerts(client, wanted.project_id)
    except ApiError as exc:
        if exc.exit_code == EXIT_UNREACHABLE:
            raise
        result.alerts_error = exc
    try:
        result.targets = discover(client, wanted)
    except ApiError as exc:
        result.discovery_error = exc
    return result


def survey_all(
    client: OpsManagerClient, projects: Sequence[ProjectTargets], *, concurrency: int
) -> list[Survey]:
    """Survey the projects on ``concurrency`` threads, in their order.

    Surveyed one after another, each project's three list requests left the walk pool
    idle: with 20 projects at 20 ms latency, a fifth of a 2,000-cluster plan.
    """
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="survey") as pool:
        return list(pool.map(lambda wanted: survey(client, wanted), projects))


def open_alerts(client: OpsManagerClient, project_id: str) -> list[Alert]:
    """The project's OPEN alerts, reduced to what can hold a cluster."""
    return [
        Alert(a.id, a.event_type_name, a.cluster_id, a.cluster_name, a.replica_set_name)
        for a in client.list_alerts(project_id, status=AlertStatus.OPEN)
        if a.status == AlertStatus.OPEN
    ]


def walk(client: OpsManagerClient, target: Target, *, retries: int = 2) -> Walk:
    """Every snapshot of one target; an inconsistent walk is retried ``retries`` times."""
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

    At most ``2 * concurrency`` walks are in flight or waiting, so memory stays bounded
    whatever the size of the fleet.
    """
    window = max(1, 2 * concurrency)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="walk") as pool:
        pending: deque[Future[Walk]] = deque()
        for target in targets:
            pending.append(pool.submit(walk, client, target))
            if len(pending) >= window:
                yield _finish(pending.popleft(), on_done)
        while pending:
            yield _finish(pending.popleft(), on_done)


def _finish(future: Future[Walk], on_done: Callable[[Walk], None] | None) -> Walk:
    result = future.result()
    if on_done is not None:
        on_done(result)
    return result
