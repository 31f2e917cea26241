"""A small, exact fleet for simulator tests, built from the store classes (no generator),
and the one clock the simulator and the product share in a test: running() serves the
fleet with the simulator's clock frozen at NOW, and a test hands that clock to the product
(``cli.main(argv, clock=sim.clock.now)``, ``run_job(..., clock=sim.clock.now)``); and a
working folder set up against it with one policy that always changes prod-small."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from retention.api.client import OpsManagerClient
from retention.core.timestamps import format_timestamp
from retention.ops.clock import Clock
from retention.simulator.server import Simulator, SimulatorConfig
from retention.simulator.store import Fleet, SimCluster, SimHost, SimProject, SimSnapshot
from tests.support.client import FAST_RETRY, credentials

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
P = "5e2211c17a3e5a48f5497de3"
BIG = "5e4e593f70dfbf1e2f6e1d30"  # replica set with 1,234 snapshots
SMALL = "5e4e593f70dfbf1e2f6e1d31"  # replica set with one of each kind of snapshot
SHARDED = "5e4e593f70dfbf1e2f6e1d32"
SHARD0 = "5e4e593f70dfbf1e2f6e1d33"
CFG = "5e4e593f70dfbf1e2f6e1d40"  # legacy mirrored config server
KEY = "sim-secret-key"
# Keeps one snapshot of prod-small and lifts its doNotDelete; no alert and no safety limit
# holds it, so a plan of it always changes prod-small (what a typo in production does).
SHORTEN_SMALL = """\
match: {clusters: [prod-small]}
keep: {last: 1}
release_protection: true
safety: {min_keep: 1, max_expire_fraction: 1.0, hold_on_alerts: []}
"""


def small_fleet(now: datetime = NOW) -> Fleet:
    """One project: a big cluster, a small one with every state, a sharded one, a config
    server; every time in it is taken from ``now``."""
    project = SimProject(P, "test-project")
    big = SimCluster(BIG, P, "prod-big", replica_set_name="rs-big")
    for i in range(1234):
        created = now - timedelta(hours=6 * (i + 1))
        big.add(SimSnapshot(f"big{i:04d}", created, expires=created + timedelta(days=400)))
    small = SimCluster(SMALL, P, "prod-small", replica_set_name="rs-small")
    small.add(SimSnapshot("running", now - timedelta(minutes=5), complete=False))
    small.add(SimSnapshot("fresh", now - timedelta(hours=6), expires=now + timedelta(days=2)))
    small.add(SimSnapshot("held", now - timedelta(days=3), do_not_delete=True))
    small.add(SimSnapshot("doomed", now - timedelta(days=9), expires=now - timedelta(hours=1)))
    small.add(SimSnapshot("noexpiry", now - timedelta(days=20)))
    sharded = SimCluster(
        SHARDED, P, "prod-sharded", type_name="SHARDED_REPLICA_SET", shard_names=["sh0", "sh1"]
    )
    sharded.add(
        SimSnapshot(
            "shard-ok",
            now - timedelta(hours=6),
            expires=now + timedelta(days=2),
            possibly_inconsistent=False,
            missing_shards=[],
        )
    )
    sharded.add(
        SimSnapshot(
            "shard-bad",
            now - timedelta(hours=12),
            expires=now + timedelta(days=2),
            possibly_inconsistent=True,
            missing_shards=[
                {
                    "id": SHARD0,
                    "groupId": P,
                    "typeName": "REPLICA_SET",
                    "clusterName": "prod-sharded",
                    "shardName": "sh0",
                    "replicaSetName": "sh0",
                    "lastHeartbeat": format_timestamp(now - timedelta(hours=7)),
                    "links": [],
                }
            ],
        )
    )
    shard0 = SimCluster(SHARD0, P, "prod-sharded", shard_name="sh0", replica_set_name="sh0")
    cfg = SimHost(CFG, P, "cfg0.legacy.example.net")
    for i in range(3):
        created = now - timedelta(days=i + 1)
        cfg.add(SimSnapshot(f"cfg{i}", created, expires=created + timedelta(days=7)))
    replica = SimHost("5e4e593f70dfbf1e2f6e1d41", P, "db0.example.net", 27017, "REPLICA_PRIMARY")
    for cluster in (big, small, sharded, shard0):
        project.clusters[cluster.id] = cluster
    project.hosts = {cfg.id: cfg, replica.id: replica}

    def ago(hours: int) -> str:
        return format_timestamp(now - timedelta(hours=hours))

    project.alerts = {
        "a-open": alert("a-open", "BAD_CLUSTERSHOTS", "OPEN", ago(2),
                        clusterId=SMALL, clusterName="prod-small"),
        "a-closed": alert("a-closed", "OPLOG_BEHIND", "CLOSED", ago(26),
                          replicaSetName="rs-big", resolved=ago(25)),
        "a-tracking": alert("a-tracking", "OUTSIDE_METRIC_THRESHOLD", "TRACKING",
                            ago(1), metricName="CONNECTIONS",
                            currentValue={"number": 812.0, "units": "RAW"}),
    }  # fmt: skip
    return Fleet({P: project})


def alert(
    alert_id: str, event: str, status: str, created: str, **fields: object
) -> dict[str, object]:
    """An alert in wire form."""
    return {
        "id": alert_id,
        "groupId": P,
        "alertConfigId": "cfg-" + alert_id,
        "eventTypeName": event,
        "status": status,
        "created": created,
        "updated": created,
        "links": [{"href": f"http://sim/groups/{P}/alerts/{alert_id}", "rel": "self"}],
        **fields,
    }


def clock_at(when: datetime) -> Clock:
    """A product clock standing still at ``when``: a time apart from the simulator's."""
    return lambda: when


@contextmanager
def running(
    fleet_factory: Callable[[datetime], Fleet] = small_fleet, /, **options: object
) -> Iterator[Simulator]:
    """A simulator on a free port serving ``fleet_factory(NOW)`` (the small fleet) with its
    clock frozen at NOW (``sim.clock.now``, the product's clock too in a test);
    ``options`` are the simulator's (SimulatorConfig)."""
    config = SimulatorConfig(
        public_key=credentials().public_key,
        private_key=KEY,
        now=NOW,
        frozen=True,
        **options,  # type: ignore[arg-type]
    )
    with Simulator(config, fleet_factory=fleet_factory) as sim:
        yield sim


def outside_change(
    sim: Simulator,
    action: str,
    *,
    cluster_id: str,
    snapshot_id: str | None = None,
    user: str | None = None,
    **change: object,
) -> dict[str, Any]:
    """A change made outside retention, "as someone else" (POST /__admin/outside): ``action``
    expires, doNotDelete, delete, terminate or remove, on a cluster's (or config server's)
    id; ``change`` is ``expires=`` (a datetime, a timestamp, or None to clear it) or
    ``do_not_delete=``. What the simulator logged: before, after, deleted, alertId."""
    body: dict[str, Any] = {"action": action, "clusterId": cluster_id}
    if snapshot_id is not None:
        body["snapshotId"] = snapshot_id
    if user is not None:
        body["user"] = user
    for name, value in change.items():
        key = {"do_not_delete": "doNotDelete"}.get(name, name)
        body[key] = format_timestamp(value) if isinstance(value, datetime) else value
    entry: dict[str, Any] = sim.admin("outside", body)
    return entry


def client_for(sim: Simulator, **options: object) -> OpsManagerClient:
    """Our client, pointed at the simulator with its credentials."""
    options.setdefault("retry", FAST_RETRY)
    options.setdefault("clock", sim.clock.now)
    return OpsManagerClient(sim.base_url, credentials(KEY), **options)  # type: ignore[arg-type]


def shorten_small_in(folder: Path, base_url: str, name: str) -> None:
    """``folder`` set up for the small fleet's project at ``base_url``: retention.yaml and
    policies/NAME.yaml, the policy ``name`` that SHORTEN_SMALL describes."""
    (folder / "policies").mkdir()
    (folder / "policies" / f"{name}.yaml").write_text(f"name: {name}\n{SHORTEN_SMALL}")
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\npolicies: policies/\n'
    )
