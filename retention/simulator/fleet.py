"""Fleets for the simulator: the ``demo`` and ``bench`` presets, and hand-written fleet files.

The model. Every cluster follows the service's default snapshot schedule: a snapshot every
6 hours at 00/06/12/18 UTC. Each tick is "6-hourly"; a 00:00 tick is also "daily", on a Sunday
also "weekly", on the 1st of a month also "monthly". A snapshot expires at its creation plus
the longest retention of its classes (6-hourly ``six_hourly_days``, default 2 days; daily
7 days; weekly 28 days; monthly 13 calendar months). A history holds every tick whose expiry
is still ahead, plus, for half of the clusters, the one or two most recently expired ones with
an expiry moved into the last 5 hours (awaiting the reaper). The newest snapshot may still be
running (complete false, no expiry), and about 1 in 100 complete ones is held (doNotDelete).
Sharded clusters list their shards as clusters of their own, as the real clusters list does.
Each generated cluster has the schedule its history follows (schedule.py: 6-hourly from
00:00, ``six_hourly_days`` as snapshotRetentionDays), served by the schedule GET; it does not
take snapshots as the clock moves, so the demo and bench fleets stay as they were built.

Ids look like ObjectIds (24 lowercase hex digits) and are unique within a fleet. They follow
two rules:

- Project, cluster (shard and config server rows too), host and alert ids, and alerts'
  alertConfigIds, are a pure function of the seed and the fleet's definition: a hash of the
  seed and the thing's place in the fleet (project name; project id and cluster name, shard
  name or hostname and port; project id and the alert's position), never of the clock or
  ``now``. A ``retention.yaml`` written against ``--seed N`` keeps working after a restart on
  any day. Their first 8 hex digits, which in an ObjectId are its creation time, are a time
  in 2019-2023 drawn from the same hash. The shard count of a generated sharded cluster comes
  from that hash too, so the listed clusters do not change with the clock either.
- A snapshot's id starts with its creation's epoch seconds, as the service's ObjectIds do,
  followed by 64 bits from ``random.Random(seed)``. The snapshots themselves are relative to
  ``now`` (they must be recent), so the same seed and the same ``now`` give the same snapshot
  ids, and another ``now`` gives another history with other snapshot ids.

Everything else (histories, holds, flags, alert times) comes from ``random.Random(seed)`` and
``now``, so a fleet can be rebuilt exactly.

Hand-written scenarios come from fleet files (see fleetfile.py).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from retention.core.timestamps import format_timestamp, to_utc
from retention.simulator.bodies import self_links
from retention.simulator.schedule import SimSchedule, add_months
from retention.simulator.store import Fleet, SimCluster, SimHost, SimProject, SimSnapshot

# Links are written before the server binds its port; this is the app's default base URL.
DEFAULT_BASE_URL = "http://127.0.0.1/api/public/v1.0"
CONFIG_REPLICA_SET = "CONFIG_SERVER_REPLICA_SET"
HOLD_ALERT_TYPES = frozenset(
    {"BAD_CLUSTERSHOTS", "RESYNC_REQUIRED", "OPLOG_BEHIND", "INCONSISTENT_BACKUP_CONFIGURATION"}
)
HOUR, DAY = 3600, 86400
TICK = 6 * HOUR
# The creation times that stable ids carry: 2019-01-01 plus up to five years, not the clock.
STABLE_ID_EPOCH, STABLE_ID_SPAN = 1546300800, 5 * 365 * DAY


@dataclass(frozen=True)
class FleetShape:
    """What a generated fleet holds; no ``six_hourly_days``: chosen per target_per_cluster."""

    projects: int
    clusters: int
    sharded: int = 0
    six_hourly_days: tuple[int, ...] = ()  # cycled over the clusters
    target_per_cluster: int = 300
    config_servers: int = 0
    gate_alert: bool = False  # one cluster gets OPEN alerts that a safety gate holds it for
    min_manual_holds: int = 0
    project_names: tuple[str, ...] = ()
    cluster_names: tuple[str, ...] = ()


DEMO = FleetShape(
    projects=3, clusters=10, sharded=3, six_hourly_days=(75, 60, 75, 30, 75, 60, 2, 75, 60, 30),
    config_servers=3, gate_alert=True, min_manual_holds=3,
    project_names=("production", "analytics", "development"),
    cluster_names=(
        "prod-orders", "prod-billing", "prod-users", "prod-catalog", "analytics-events",
        "analytics-warehouse", "analytics-clickstream", "dev-sandbox", "staging-orders",
        "qa-regression",
    ),
)  # fmt: skip
BENCH = FleetShape(projects=20, clusters=2000)


def _digest(seed: int, key: tuple[str, ...]) -> bytes:
    """12 bytes that depend on the seed and the key only (JSON keeps the parts apart)."""
    text = json.dumps([seed, *key], separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12, person=b"retention-sim").digest()


def stable_object_id(seed: int, *key: str) -> str:
    """An ObjectId-shaped id that is a pure function of the seed and the key.

    The first 8 hex digits, an ObjectId's creation time, are a time in 2019-2023 (fixed, not
    the clock's); the other 16 are the rest of the hash."""
    digest = _digest(seed, key)
    epoch = STABLE_ID_EPOCH + int.from_bytes(digest[:4], "big") % STABLE_ID_SPAN
    return f"{epoch:08x}{digest[4:].hex()}"


Row = tuple[int, datetime, datetime | None]  # epoch seconds, created, expires


@dataclass(frozen=True)
class _Plan:
    """The schedule's ticks for one ``now`` and 6-hourly retention; shared by all its clusters."""

    alive: list[Row]  # newest first
    expired: list[tuple[int, datetime]]  # most recently expired first


def _plan(now: datetime, days: int) -> _Plan:
    last = int(now.timestamp()) // TICK * TICK
    # Older than this only monthly ticks can live; the 2 extra days find the recently expired.
    horizon = last - (max(days, 28) + 2) * DAY
    alive: list[Row] = []
    expired: list[tuple[datetime, int, datetime]] = []
    # The schedule history() gives the cluster: its expiries are the ones it would take now.
    schedule = SimSchedule(retention_days=days)

    def visit(epoch: int) -> None:
        created = datetime.fromtimestamp(epoch, UTC)
        expires = schedule.expires(created)
        if expires > now:
            alive.append((epoch, created, expires))
        else:
            expired.append((expires, epoch, created))

    for epoch in range(last, horizon, -TICK):
        visit(epoch)
    month = datetime.fromtimestamp(horizon, UTC).replace(day=1, hour=0)
    for epoch in (int(add_months(month, -back).timestamp()) for back in range(16)):
        if epoch <= horizon:
            visit(epoch)
    expired.sort(reverse=True)
    return _Plan(alive, [(epoch, created) for _, epoch, created in expired])


class FleetBuilder:
    """Builds one fleet: ids of projects, clusters, hosts and alerts from the seed and their
    keys (``stable_id``), everything else from one random generator, so the call order fixes
    every other value."""

    def __init__(self, seed: int, now: datetime, base_url: str) -> None:
        self.seed = seed
        self.rng = random.Random(seed)  # noqa: S311 - repeatable on purpose, not a secret
        self.now, self.base_url, self.fleet = to_utc(now), base_url.rstrip("/"), Fleet()
        self.seen: set[str] = set()
        self.shards: dict[str, list[SimCluster]] = {}
        self.plans: dict[int, _Plan] = {}

    def stable_id(self, *key: str) -> str:
        """The id of the thing ``key`` names: a function of the seed and the key, not of the
        clock. A key asked for again (two projects of one name in a file), or a hash that is
        taken, gets the next variant, so ids stay unique and still follow the definition."""
        variant = 0
        while True:
            new = stable_object_id(self.seed, *key, *([f"#{variant}"] if variant else []))
            if new not in self.seen:
                self.seen.add(new)
                return new
            variant += 1

    def shard_count(self, project: SimProject, name: str) -> int:
        """2 or 3 shards for a generated sharded cluster, from the seed and its name only."""
        return 2 + _digest(self.seed, ("shards", project.id, name))[0] % 2

    def snapshot_id(self, epoch: int) -> str:
        """A snapshot id: its creation's epoch seconds, then 64 bits from the generator."""
        while True:
            new = f"{epoch & 0xFFFFFFFF:08x}{self.rng.getrandbits(64):016x}"
            if new not in self.seen:
                self.seen.add(new)
                return new

    def host_id(self, project: SimProject, hostname: str, port: int) -> str:
        """The id of a host, from its project, hostname and port."""
        return self.stable_id("host", project.id, hostname, str(port))

    def link(self, *segments: str) -> dict[str, str]:
        """The self link of a resource below the base URL."""
        return self_links(self.base_url, *segments)[0]

    def ago(self, seconds: int) -> str:
        return format_timestamp(self.now - timedelta(seconds=seconds))

    def project(self, name: str, pid: str | None = None) -> SimProject:
        project = SimProject(pid or self.stable_id("project", name), name)
        self.fleet.projects[project.id] = project
        return project

    def cluster(
        self, project: SimProject, name: str, shards: list[str] | None, cid: str | None = None,
        rs_name: str | None = None,
    ) -> SimCluster:  # fmt: skip
        """A cluster. A sharded one is listed as the real clusters list shows it: its own
        row (carrying its first shard's shardName), a REPLICA_SET row per shard with that
        shardName, and its CONFIG_SERVER_REPLICA_SET row, all with the cluster's name; its
        snapshots are the sharded cluster's own."""
        kind = "REPLICA_SET" if shards is None else "SHARDED_REPLICA_SET"
        rs = None if shards is not None else rs_name or name
        cid = cid or self.stable_id("cluster", project.id, name)
        cluster = SimCluster(cid, project.id, name, kind, rs)
        cluster.shard_names = list(shards or [])
        project.clusters[cluster.id] = cluster
        entries = [
            SimCluster(self.stable_id("shard", project.id, name, s), project.id, name,
                       replica_set_name=s, shard_name=s)
            for s in cluster.shard_names
        ]  # fmt: skip
        project.clusters.update((e.id, e) for e in entries)
        self.shards[cluster.id] = entries
        if shards:
            cluster.listed_shard_name = shards[0]
            config_id = self.stable_id("config", project.id, name)
            config = SimCluster(
                config_id, project.id, name, CONFIG_REPLICA_SET, replica_set_name=f"{name}-cfg"
            )
            project.clusters[config.id] = config
        return cluster

    def missing_shard(self, cluster: SimCluster, created: datetime, shard: str | None = None) -> (
        dict[str, Any]
    ):  # fmt: skip
        entries = self.shards[cluster.id]
        entry = next((e for e in entries if e.shard_name == shard), None)
        entry = entry or self.rng.choice(entries)
        heartbeat = created - timedelta(minutes=self.rng.randint(7, 240))
        return {
            "id": entry.id, "groupId": entry.group_id, "typeName": "REPLICA_SET",
            "clusterName": entry.name, "shardName": entry.shard_name,
            "replicaSetName": entry.replica_set_name, "lastHeartbeat": format_timestamp(heartbeat),
            "links": [self.link("groups", entry.group_id, "clusters", entry.id)],
        }  # fmt: skip

    def plan(self, days: int) -> _Plan:
        if days not in self.plans:
            self.plans[days] = _plan(self.now, days)
        return self.plans[days]

    def days_for(self, target: int) -> int:
        """A 6-hourly retention giving ``target`` snapshots or up to 2 more, before extras.

        One more day adds at most 4 snapshots, so the result lands in [target - 1, target + 2];
        the 0-2 awaiting deletion keep a cluster within target +- 5."""
        days = 2
        while len(self.plan(days).alive) < target - 1:
            days += 1
        return days

    def history(self, cluster: SimCluster, days: int, stopped_days_ago: int = 0) -> None:
        """Attach a generated history; per snapshot only id, hold and shard flags are drawn.
        ``stopped_days_ago``: the cluster's backups stopped that many days before now, so
        it has no snapshot since (nor one running); what it took before expires as usual."""
        rng, plan, now = self.rng, self.plan(days), self.now
        # The schedule this history follows, served by the schedule GET; it takes snapshots
        # as the clock moves only when asked to (fleet files: ``taking``), not a stopped one.
        cluster.schedule = SimSchedule(retention_days=days, taken_until=now)
        rows = plan.alive
        if rng.random() < 0.5:
            late = [
                (epoch, created, now - timedelta(seconds=rng.randint(1, 5 * HOUR)))
                for epoch, created in plan.expired[: rng.randint(1, 2)]
            ]
            rows = sorted([*rows, *late], key=lambda row: row[0], reverse=True)
        incomplete = rng.random() < 0.3 and not stopped_days_ago
        if stopped_days_ago:
            last = now - timedelta(days=stopped_days_ago)
            rows = [row for row in rows if row[1] <= last]
        out: list[SimSnapshot] = []
        for epoch, created, expires in rows:
            snapshot = SimSnapshot(self.snapshot_id(epoch), created, expires=expires)
            if rng.random() < 0.01 and expires and expires > now:  # not those awaiting deletion
                snapshot.do_not_delete, snapshot.expires = True, None
            if cluster.sharded:
                snapshot.possibly_inconsistent = rng.random() < 0.03
                missing = rng.random() < 0.02
                snapshot.missing_shards = [self.missing_shard(cluster, created)] if missing else []
            out.append(snapshot)
        if incomplete and out:
            out[0].complete, out[0].do_not_delete, out[0].expires = False, False, None
        # The rows are already newest first; inserting one by one would only cost time.
        if cluster.snapshots:
            for snapshot in out:
                cluster.add(snapshot)
        else:
            cluster.snapshots, cluster.index = out, {s.id: s for s in out}

    def config_server(self, project: SimProject, number: int) -> None:
        hostname = f"cfg{number}.legacy.example.net"
        host = SimHost(self.host_id(project, hostname, 27019), project.id, hostname, 27019)
        midnight = int(self.now.timestamp()) // DAY * DAY
        for epoch in range(midnight, midnight - self.rng.randint(12, 20) * DAY, -DAY):
            created = datetime.fromtimestamp(epoch, UTC)
            # A 7-day schedule; older snapshots predate it and were kept with no expiry.
            expires: datetime | None = created + timedelta(days=7)
            expires = expires if expires and expires > self.now else None
            host.add(SimSnapshot(self.snapshot_id(epoch), created, expires=expires))
        project.hosts[host.id] = host

    def alert(self, project: SimProject, given: dict[str, Any]) -> None:
        """Store an alert in wire form, filling in the fields every alert has."""
        aid = given.get("id") or self.stable_id("alert", project.id, str(len(project.alerts)))
        config_id = given.get("alertConfigId") or self.stable_id("alert-config", project.id, aid)
        created = given.get("created") or self.ago(self.rng.randint(5 * 60, 3 * DAY))
        project.alerts[aid] = {
            "id": aid, "groupId": project.id, "alertConfigId": config_id,
            "created": created, "updated": given.get("resolved", created),
            "links": [self.link("groups", project.id, "alerts", aid)], **given,
        }  # fmt: skip

    def standard_alerts(self, project: SimProject, alert_cluster: SimCluster | None) -> None:
        """Hosts and the usual alert mix; ``alert_cluster`` gets the only OPEN hold-type
        alerts."""
        sets = sorted(
            (c for c in project.clusters.values() if c.type_name != CONFIG_REPLICA_SET),
            key=lambda c: c.shard_name is not None,
        )
        names = [c.replica_set_name for c in sets if c.replica_set_name]  # shards last
        hosts = [
            SimHost(self.host_id(project, f"{rs}-{n}.example.net", 27017), project.id,
                    f"{rs}-{n}.example.net", 27017, role, rs)
            for rs in names[:2] for n, role in enumerate(("REPLICA_PRIMARY", "REPLICA_SECONDARY"))
        ]  # fmt: skip
        project.hosts.update((h.id, h) for h in hosts)
        on = [{"hostId": h.id, "hostnameAndPort": f"{h.hostname}:{h.port}",
               "replicaSetName": h.replica_set_name} for h in hosts[:1] + hosts[-1:]]  # fmt: skip
        alerts: list[dict[str, Any]] = []
        if alert_cluster is not None:
            alerts += [
                {"eventTypeName": "BAD_CLUSTERSHOTS", "clusterId": alert_cluster.id,
                 "clusterName": alert_cluster.name},
                {"eventTypeName": "RESYNC_REQUIRED",
                 "replicaSetName": alert_cluster.replica_set_name,
                 "sourceTypeName": "REPLICA_SET"},
            ]  # fmt: skip
        if on:
            alerts += [
                {"eventTypeName": "OUTSIDE_METRIC_THRESHOLD", "status": "TRACKING",
                 "metricName": "CONNECTIONS", **on[0],
                 "currentValue": {"number": float(self.rng.randint(800, 1500)), "units": "RAW"}},
                {"eventTypeName": "HOST_DOWN", **on[1]},
                {"eventTypeName": "OUTSIDE_METRIC_THRESHOLD", "metricName": "DB_STORAGE_TOTAL",
                 "currentValue": {"number": 912.5, "units": "GIGABYTES"}, **on[0],
                 "acknowledgedUntil": format_timestamp(self.now + timedelta(days=3)),
                 "acknowledgementComment": "disk expansion scheduled",
                 "acknowledgingUsername": "ops@example.net"},
                {"eventTypeName": "OPLOG_BEHIND", "status": "CLOSED", "replicaSetName": names[-1],
                 "sourceTypeName": "REPLICA_SET", "created": self.ago(2 * DAY),
                 "resolved": self.ago(DAY)},
            ]  # fmt: skip
        for given in alerts:
            self.alert(project, {"status": "OPEN", **given})

    def top_up_manual_holds(self, minimum: int) -> None:
        """Set doNotDelete on complete, unexpired snapshots at random until ``minimum`` of
        the fleet's snapshots carry it, as if set by hand (manual-hold, where no protect rule
        asks for it)."""
        snapshots = [s for c in self.fleet.clusters() for s in c.snapshots]
        missing = minimum - sum(s.do_not_delete for s in snapshots)
        if missing > 0:
            free = [s for s in snapshots if s.complete and s.expires and s.expires > self.now]
            for snapshot in self.rng.sample(free, missing):
                snapshot.do_not_delete, snapshot.expires = True, None


def generate(
    shape: FleetShape, *, seed: int, now: datetime, base_url: str = DEFAULT_BASE_URL
) -> Fleet:
    """A generated fleet of the given shape (the presets are ``DEMO`` and ``BENCH``)."""
    b = FleetBuilder(seed, now, base_url)
    names = shape.project_names
    projects = [b.project(names[j] if j < len(names) else f"project-{j:02d}")
                for j in range(shape.projects)]  # fmt: skip
    step = max(1, shape.clusters // shape.sharded) if shape.sharded else 0
    legacy, alert_cluster = projects[0], None
    for i in range(shape.clusters):
        project = projects[i * shape.projects // shape.clusters]
        name = shape.cluster_names[i] if i < len(shape.cluster_names) else f"rs-{i:04d}"
        shards = None
        if step and i % step == 0 and i // step < shape.sharded:
            shards = [f"{name}-shard{k}" for k in range(b.shard_count(project, name))]
            legacy = project  # the legacy config servers join the last sharded setup
        cluster = b.cluster(project, name, shards)
        days = shape.six_hourly_days
        b.history(cluster, days[i % len(days)] if days else b.days_for(shape.target_per_cluster))
        if shape.gate_alert and alert_cluster is None and shards is None and project is projects[0]:
            alert_cluster = cluster
    for number in range(shape.config_servers):
        b.config_server(legacy, number)
    for project in projects:
        mine = alert_cluster is not None and alert_cluster.group_id == project.id
        b.standard_alerts(project, alert_cluster if mine else None)
    b.top_up_manual_holds(shape.min_manual_holds)
    return b.fleet
