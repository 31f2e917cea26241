"""Tests of retention.simulator.fleet: the demo and bench presets and fleet files."""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import retention.simulator.fleetfile as fleetfile_module
from retention.api.models import Alert, MissingShard
from retention.core.timestamps import format_timestamp
from retention.simulator.fleet import (
    BENCH,
    HOLD_ALERT_TYPES,
    FleetShape,
    generate,
)
from retention.simulator.fleetfile import FleetFileError, build_fleet
from retention.simulator.schedule import add_months
from retention.simulator.store import Fleet, SimCluster, SimHost, SimSnapshot

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)  # a Saturday, 12:00 UTC: a tick
SEED = 7
OBJECT_ID = re.compile(r"[0-9a-f]{24}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
ONE = FleetShape(projects=1, clusters=1, six_hourly_days=(2,))


@pytest.fixture(scope="module")
def demo() -> Fleet:
    """The demo fleet for SEED and NOW, built once for the module."""
    return build_fleet("demo", seed=SEED, now=NOW)


def digest(fleet: Fleet) -> str:
    """A stable hash of every id, name, time and flag in a fleet."""

    def snaps(snapshots: list[SimSnapshot]) -> list[Any]:
        return [
            [s.id, s.created.isoformat(), s.expires.isoformat() if s.expires else None,
             s.complete, s.do_not_delete, s.increment, s.possibly_inconsistent, s.missing_shards]
            for s in snapshots
        ]  # fmt: skip

    state = [
        [p.id, p.name,
         [[c.id, c.name, c.type_name, c.replica_set_name, c.shard_name, c.shard_names,
           snaps(c.snapshots)] for c in p.clusters.values()],
         [[h.id, h.hostname, h.port, h.type_name, snaps(h.snapshots)] for h in p.hosts.values()],
         [p.alerts[k] for k in sorted(p.alerts)]]
        for p in fleet.projects.values()
    ]  # fmt: skip
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def only_cluster(fleet: Fleet) -> SimCluster:
    """The single cluster of a one-cluster fleet."""
    (cluster,) = fleet.clusters()
    return cluster


def natural_expiries(now: datetime, six_hourly_days: int) -> dict[datetime, datetime]:
    """Oracle: every default-schedule tick of the last 14 months and its schedule expiry."""

    def months_later(when: datetime, months: int) -> datetime:
        year, month = when.year + (when.month - 1 + months) // 12, (when.month - 1 + months) % 12
        last_day = calendar.monthrange(year, month + 1)[1]
        return when.replace(year=year, month=month + 1, day=min(when.day, last_day))

    newest = now.replace(hour=now.hour - now.hour % 6, minute=0, second=0, microsecond=0)
    expiries = {}
    for i in range(4 * 430):
        tick = newest - timedelta(hours=6 * i)
        candidates = [tick + timedelta(days=six_hourly_days)]
        if tick.hour == 0:
            candidates.append(tick + timedelta(days=7))
            if tick.weekday() == 6:
                candidates.append(tick + timedelta(days=28))
            if tick.day == 1:
                candidates.append(months_later(tick, 13))
        expiries[tick] = max(candidates)
    return expiries


def expected_alive(now: datetime, six_hourly_days: int) -> dict[datetime, datetime]:
    """Oracle: the ticks whose schedule expiry is after now."""
    return {t: e for t, e in natural_expiries(now, six_hourly_days).items() if e > now}


def test_same_seed_and_now_give_an_identical_fleet() -> None:
    """Two builds from the same seed and now agree on every id, time and flag."""
    assert digest(build_fleet("demo", seed=SEED, now=NOW)) == digest(
        build_fleet("demo", seed=SEED, now=NOW)
    )


def test_another_seed_or_now_gives_another_fleet(demo: Fleet) -> None:
    """A different seed, or a different now, changes the fleet's digest and its ids."""
    other = build_fleet("demo", seed=SEED + 1, now=NOW)
    assert digest(other) != digest(demo)
    assert set(other.projects).isdisjoint(demo.projects)
    assert digest(build_fleet("demo", seed=SEED, now=NOW + timedelta(hours=6))) != digest(demo)


def entity_ids(fleet: Fleet) -> dict[tuple[str, ...], str]:
    """Every project, cluster row, host and alert id (and alertConfigId), keyed by what it
    names in the fleet's definition; snapshots are left out."""
    ids: dict[tuple[str, ...], str] = {}
    for p in fleet.projects.values():
        ids["project", p.name] = p.id
        for c in p.clusters.values():
            ids["cluster", p.name, c.name, c.type_name, c.shard_name or ""] = c.id
        for h in p.hosts.values():
            ids["host", p.name, h.hostname, str(h.port)] = h.id
        for n, a in enumerate(p.alerts.values()):
            ids["alert", p.name, str(n), a["eventTypeName"]] = a["id"]
            ids["alert-config", p.name, str(n)] = a["alertConfigId"]
    count = sum(
        1 + len(p.clusters) + len(p.hosts) + 2 * len(p.alerts) for p in fleet.projects.values()
    )
    assert len(ids) == count  # no two things share a key, so none is left out
    return ids


@pytest.mark.parametrize("spec", ["demo", "bench:40"])
@pytest.mark.parametrize(
    "later", [timedelta(days=1, minutes=17, seconds=3), timedelta(days=365, hours=5)]
)
def test_the_same_seed_gives_the_same_ids_a_day_or_a_year_later(
    spec: str, later: timedelta
) -> None:
    """Project, cluster, shard, host and alert ids of a seed do not change when now does."""
    before = entity_ids(build_fleet(spec, seed=SEED, now=NOW))
    after = build_fleet(spec, seed=SEED, now=NOW + later)
    assert entity_ids(after) == before
    assert len(set(before.values())) == len(before)
    assert all(OBJECT_ID.fullmatch(i) for i in before.values())
    # The histories did follow the clock: snapshots are still recent at the later now.
    newest = max(s.created for c in after.clusters() for s in c.snapshots)
    assert NOW + later - timedelta(hours=6) < newest <= NOW + later


def test_another_seed_gives_other_ids_to_everything(demo: Fleet) -> None:
    """A different seed gives every project, cluster, host and alert a different id."""
    ids = entity_ids(demo)
    other = entity_ids(build_fleet("demo", seed=SEED + 1, now=NOW))
    assert set(other.values()).isdisjoint(ids.values())
    assert {k for k in other if k[0] == "project"} == {k for k in ids if k[0] == "project"}
    assert other["project", "production"] != ids["project", "production"]


def test_a_bench_fleet_has_unique_object_ids_and_stable_ones_carry_a_fixed_era() -> None:
    """Across the full bench fleet (2,000 clusters, ~600,000 snapshots) every id is a distinct
    24-hex ObjectId; non-snapshot ids carry a 2019-2023 time, snapshot ids their creation."""
    fleet = build_fleet("bench", seed=SEED, now=NOW)
    stable = list(entity_ids(fleet).values())
    snapshots = [s for c in fleet.clusters() for s in c.snapshots]
    ids = stable + [s.id for s in snapshots]
    assert len(fleet.projects) == 20
    assert len(snapshots) > 500_000
    assert len(ids) == len(set(ids))
    assert all(OBJECT_ID.fullmatch(i) for i in ids)
    era = (datetime(2019, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC))
    assert all(era[0] <= datetime.fromtimestamp(int(i[:8], 16), UTC) < era[1] for i in stable)
    assert all(s.id[:8] == f"{int(s.created.timestamp()):08x}" for s in snapshots)


def test_a_fleet_file_gets_stable_ids_where_it_gives_none_and_keeps_the_given_ones(
    tmp_path: Path,
) -> None:
    """Ids a fleet file leaves out (project, cluster, shard rows, host, alert) are the same a
    year later, and the ids it gives are used as written."""
    path = write_yaml(tmp_path / "fleet.yaml", """
projects:
  - name: generated
    clusters:
      - {name: rs, generate: {six_hourly_days: 2}}
      - {name: sh, type: SHARDED_REPLICA_SET, shards: [sh-a, sh-b]}
    hosts:
      - {hostname: cfg0.example.net, snapshots: [{created: "now-1d"}]}
    alerts:
      - {eventTypeName: BAD_CLUSTERSHOTS, status: OPEN, clusterName: rs}
  - id: "5e2211c17a3e5a48f5497de3"
    name: given
    clusters:
      - {id: c-given, name: rs}
    hosts:
      - {id: h-given, hostname: cfg0.example.net}
    alerts:
      - {id: a-given, alertConfigId: ac-given, eventTypeName: HOST_DOWN, status: OPEN}
""")  # fmt: skip
    before = entity_ids(build_fleet(path, seed=SEED, now=NOW))
    later = build_fleet(path, seed=SEED, now=NOW + timedelta(days=365))
    assert entity_ids(later) == before
    assert [before["project", "given"], before["cluster", "given", "rs", "REPLICA_SET", ""],
            before["host", "given", "cfg0.example.net", "27019"],
            before["alert", "given", "0", "HOST_DOWN"], before["alert-config", "given", "0"]] == [
        "5e2211c17a3e5a48f5497de3", "c-given", "h-given", "a-given", "ac-given"
    ]  # fmt: skip
    generated = [v for k, v in before.items() if k[1] == "generated"]
    # The project; rs, sh, its 2 shard rows and config row; the host; the alert and its config.
    assert len(generated) == 1 + 5 + 1 + 2
    assert all(OBJECT_ID.fullmatch(i) for i in generated)
    # The same host name in two projects is two hosts with two ids.
    assert before["host", "generated", "cfg0.example.net", "27019"] != "h-given"
    (alert,) = later.projects[before["project", "generated"]].alerts.values()
    assert alert["clusterId"] == before["cluster", "generated", "rs", "REPLICA_SET", ""]


def test_demo_has_three_projects_ten_snapshot_clusters_and_a_few_thousand_snapshots(
    demo: Fleet,
) -> None:
    """Demo: 3 named projects, 10 snapshot-bearing clusters (3 sharded), 2,000-6,000 snapshots."""
    assert [p.name for p in demo.projects.values()] == ["production", "analytics", "development"]
    bearing = [c for c in demo.clusters() if c.snapshots]
    assert len(bearing) == 10
    assert {"prod-orders", "prod-billing", "dev-sandbox", "analytics-events"} <= {
        c.name for c in bearing
    }
    assert len([c for c in bearing if c.sharded]) == 3
    cluster_snapshots = sum(len(c.snapshots) for c in bearing)
    assert 2000 <= cluster_snapshots <= demo.snapshot_count() <= 6000
    # six_hourly_days of 2, 30, 60 and 75 days give clearly different history lengths.
    sizes = sorted(len(c.snapshots) for c in bearing)
    bands = [sum(low <= n <= high for n in sizes)
             for low, high in ((25, 35), (125, 140), (245, 260), (305, 320))]  # fmt: skip
    assert bands == [1, 2, 3, 4]


def test_demo_lists_a_sharded_cluster_as_the_real_clusters_list_does(demo: Fleet) -> None:
    """A sharded cluster is its own row (showing its first shard's shardName, as real rows
    do), a REPLICA_SET row per shard with that shardName, and a CONFIG_SERVER_REPLICA_SET
    row, all with the cluster's name; only the sharded cluster has snapshots."""
    for project in demo.projects.values():
        for cluster in [c for c in project.clusters.values() if c.sharded]:
            rows = [c for c in project.clusters.values() if c.name == cluster.name]
            shards = [c for c in rows if c.shard_name is not None]
            configs = [c for c in rows if c.type_name == "CONFIG_SERVER_REPLICA_SET"]
            assert cluster.replica_set_name is None
            assert cluster.listed_shard_name == cluster.shard_names[0]
            assert len(cluster.shard_names) in (2, 3)
            assert [(s.type_name, s.shard_name, s.replica_set_name) for s in shards] == [
                ("REPLICA_SET", name, name) for name in cluster.shard_names
            ]
            assert [c.replica_set_name for c in configs] == [f"{cluster.name}-cfg"]
            assert all(c.snapshots == [] for c in [*shards, *configs])
            assert cluster.snapshots


def test_demo_holds_and_legacy_config_servers(demo: Fleet) -> None:
    """Demo: at least 3 held snapshots, and 3 SHARD_CONFIG hosts in one project with snapshots."""
    held = [s for c in demo.clusters() for s in c.snapshots if s.do_not_delete]
    assert len(held) >= 3
    assert all(s.expires is None and s.complete for s in held)
    configs = [(p.id, h) for p in demo.projects.values() for h in p.hosts.values()
               if h.type_name == "SHARD_CONFIG"]  # fmt: skip
    assert sorted(h.hostname for _, h in configs) == [
        f"cfg{n}.legacy.example.net" for n in range(3)
    ]
    assert len({project_id for project_id, _ in configs}) == 1
    for _, host in configs:
        assert host.port == 27019
        assert 12 <= len(host.snapshots) <= 20
        for snapshot in host.snapshots:
            assert snapshot.complete
            assert snapshot.created.hour == 0
            if snapshot.created + timedelta(days=7) > NOW:
                assert snapshot.expires == snapshot.created + timedelta(days=7)
            else:
                assert snapshot.expires is None
    others = [h for p in demo.projects.values() for h in p.hosts.values()
              if h.type_name != "SHARD_CONFIG"]  # fmt: skip
    assert {h.type_name for h in others} == {"REPLICA_PRIMARY", "REPLICA_SECONDARY"}
    assert all(h.snapshots == [] for h in others)


def test_demo_has_exactly_one_cluster_named_by_an_open_hold_type_alert(demo: Fleet) -> None:
    """Only prod-billing is named (by clusterId/Name or replicaSetName) by OPEN hold-type alerts."""
    named = set()
    for project in demo.projects.values():
        for alert in project.alerts.values():
            if alert["status"] != "OPEN" or alert["eventTypeName"] not in HOLD_ALERT_TYPES:
                continue
            for cluster in project.clusters.values():
                if (
                    alert.get("clusterId") == cluster.id
                    or alert.get("clusterName") == cluster.name
                    or (alert.get("replicaSetName") or 0) == cluster.replica_set_name
                ):
                    named.add(cluster.name)
    assert named == {"prod-billing"}


def test_demo_alerts_are_wire_form_with_several_types_and_states(demo: Fleet) -> None:
    """Alerts carry the always-present fields, API timestamps, a self link and the type's fields."""
    kinds = set()
    for project in demo.projects.values():
        hosts = {h.id: h for h in project.hosts.values()}
        for alert_id, alert in project.alerts.items():
            assert alert["id"] == alert_id
            assert OBJECT_ID.fullmatch(alert_id)
            assert alert["groupId"] == project.id
            assert OBJECT_ID.fullmatch(alert["alertConfigId"])
            assert TIMESTAMP.fullmatch(alert["created"])
            assert TIMESTAMP.fullmatch(alert["updated"])
            assert alert["links"][0]["rel"] == "self"
            assert alert["links"][0]["href"].endswith(f"/groups/{project.id}/alerts/{alert_id}")
            Alert.model_validate(alert)  # the shared client model reads it
            kinds.add((alert["eventTypeName"], alert["status"]))
            if alert["eventTypeName"] == "OUTSIDE_METRIC_THRESHOLD":
                assert alert["metricName"] in ("CONNECTIONS", "DB_STORAGE_TOTAL")
                assert set(alert["currentValue"]) == {"number", "units"}
            if "hostId" in alert:
                host = hosts[alert["hostId"]]
                assert alert["hostnameAndPort"] == f"{host.hostname}:{host.port}"
                assert alert["replicaSetName"] == host.replica_set_name
            if alert["status"] == "CLOSED":
                assert alert["resolved"] == alert["updated"] > alert["created"]
    assert {
        ("BAD_CLUSTERSHOTS", "OPEN"), ("RESYNC_REQUIRED", "OPEN"), ("OPLOG_BEHIND", "CLOSED"),
        ("OUTSIDE_METRIC_THRESHOLD", "TRACKING"), ("HOST_DOWN", "OPEN"),
    } <= kinds  # fmt: skip
    acknowledged = [a for p in demo.projects.values() for a in p.alerts.values()
                    if "acknowledgedUntil" in a]  # fmt: skip
    assert acknowledged
    assert all(
        a["acknowledgingUsername"] == "ops@example.net" and a["acknowledgementComment"]
        for a in acknowledged
    )
    resync = next(a for p in demo.projects.values() for a in p.alerts.values()
                  if a["eventTypeName"] == "RESYNC_REQUIRED")  # fmt: skip
    assert (resync["replicaSetName"], resync["sourceTypeName"]) == ("prod-billing", "REPLICA_SET")


def test_ids_are_object_ids_unique_and_snapshot_ids_start_with_creation_time(demo: Fleet) -> None:
    """All ids are 24 lowercase hex, unique; a snapshot id's first 8 digits are its epoch secs."""
    ids: list[str] = []
    for project in demo.projects.values():
        ids += [project.id, *project.clusters, *project.hosts, *project.alerts]
        owners: list[SimCluster | SimHost] = [*project.clusters.values(), *project.hosts.values()]
        for snapshot in [s for owner in owners for s in owner.snapshots]:
            assert snapshot.id[:8] == f"{int(snapshot.created.timestamp()):08x}"
            ids.append(snapshot.id)
    assert all(OBJECT_ID.fullmatch(i) for i in ids)
    assert len(ids) == len(set(ids)) > 2000


def test_snapshots_are_newest_first_and_indexed(demo: Fleet) -> None:
    """Every snapshot list is ordered newest first and its index holds exactly its snapshots."""
    owners: list[SimCluster | SimHost] = [*demo.clusters()]
    owners += [h for p in demo.projects.values() for h in p.hosts.values()]
    for owner in owners:
        created = [s.created for s in owner.snapshots]
        assert created == sorted(created, reverse=True)
        assert len(set(created)) == len(created)
        assert list(owner.index) == [s.id for s in owner.snapshots]


def test_generated_expiry_follows_the_longest_retention_of_each_ticks_classes() -> None:
    """06:00 tick +2 days, daily +7, Sunday +28, 1st of month +13 months; 6-hourly days apply."""
    by_created = {s.created: s for s in only_cluster(generate(ONE, seed=SEED, now=NOW)).snapshots}

    def expiry(created: datetime) -> datetime | None:
        return by_created[created].expires

    six = datetime(2026, 11, 21, 6, tzinfo=UTC)
    assert expiry(six) == datetime(2026, 11, 23, 6, tzinfo=UTC)
    assert expiry(datetime(2026, 11, 18, tzinfo=UTC)) == datetime(2026, 11, 25, tzinfo=UTC)
    assert expiry(datetime(2026, 11, 15, tzinfo=UTC)) == datetime(2026, 12, 13, tzinfo=UTC)
    assert expiry(datetime(2026, 10, 1, tzinfo=UTC)) == datetime(2027, 11, 1, tzinfo=UTC)
    assert expiry(datetime(2026, 11, 1, tzinfo=UTC)) == datetime(2027, 12, 1, tzinfo=UTC)
    assert datetime(2026, 11, 19, 6, tzinfo=UTC) not in by_created  # 6-hourly, expired
    long = replace(ONE, six_hourly_days=(30,))
    by_created = {s.created: s for s in only_cluster(generate(long, seed=SEED, now=NOW)).snapshots}
    assert expiry(datetime(2026, 11, 10, 6, tzinfo=UTC)) == datetime(2026, 12, 10, 6, tzinfo=UTC)


def test_add_months_clamps_the_day_to_the_target_month() -> None:
    """Month arithmetic keeps the time, clamps Jan 31 to Feb's end and crosses years."""
    assert add_months(datetime(2026, 1, 31, 6, tzinfo=UTC), 1) == datetime(
        2026, 2, 28, 6, tzinfo=UTC
    )
    assert add_months(datetime(2028, 1, 31, tzinfo=UTC), 1) == datetime(2028, 2, 29, tzinfo=UTC)
    assert add_months(datetime(2026, 12, 1, tzinfo=UTC), 13) == datetime(2028, 1, 1, tzinfo=UTC)
    assert add_months(datetime(2026, 3, 31, tzinfo=UTC), -1) == datetime(2026, 2, 28, tzinfo=UTC)


@pytest.mark.parametrize("days", [2, 30])
def test_history_is_the_alive_ticks_plus_at_most_two_awaiting_deletion(days: int) -> None:
    """A history is the ticks alive at now plus 0-2 expired ones, their expiry in [now-5h, now)."""
    shape = FleetShape(projects=1, clusters=12, six_hourly_days=(days,))
    alive = expected_alive(NOW, days)
    expired = sorted((e, t) for t, e in natural_expiries(NOW, days).items() if e <= NOW)
    latest_two = {t for _, t in expired[-2:]}
    awaiting_total = 0
    for cluster in generate(shape, seed=SEED, now=NOW).clusters():
        awaiting = [s for s in cluster.snapshots if s.expires and s.expires <= NOW]
        assert len(awaiting) <= 2
        assert all(NOW - timedelta(hours=5) <= s.expires < NOW for s in awaiting if s.expires)
        assert all(s.created in latest_two and s.complete for s in awaiting)
        awaiting_total += len(awaiting)
        rest = [s for s in cluster.snapshots if s not in awaiting]
        assert {s.created for s in rest} == set(alive)
        for snapshot in rest:
            if snapshot.complete and not snapshot.do_not_delete:
                assert snapshot.expires == alive[snapshot.created]
    assert awaiting_total >= 3  # half of the clusters, on average, keep some


def test_an_incomplete_snapshot_is_only_ever_the_newest_and_has_no_expiry(demo: Fleet) -> None:
    """Incomplete snapshots are the newest tick of their cluster, unprotected, with no expires."""
    incomplete = [(c, i, s) for c in demo.clusters() for i, s in enumerate(c.snapshots)
                  if not s.complete]  # fmt: skip
    assert len(incomplete) >= 1
    for cluster, position, snapshot in incomplete:
        assert position == 0
        assert snapshot.expires is None
        assert not snapshot.do_not_delete
        assert snapshot.created == datetime(2026, 11, 21, 12, tzinfo=UTC)
        assert cluster.snapshots[1].complete


def test_sharded_snapshots_carry_shard_fields_and_replica_set_ones_do_not(demo: Fleet) -> None:
    """Sharded: isPossiblyInconsistent bool, missingShards list (some filled); replica set: None."""
    flagged, missing = 0, []
    for cluster in [c for c in demo.clusters() if c.snapshots]:
        for snapshot in cluster.snapshots:
            if not cluster.sharded:
                assert snapshot.possibly_inconsistent is None
                assert snapshot.missing_shards is None
                continue
            assert isinstance(snapshot.possibly_inconsistent, bool)
            assert isinstance(snapshot.missing_shards, list)
            flagged += snapshot.possibly_inconsistent
            missing += [(cluster, shard) for shard in snapshot.missing_shards]
    assert flagged >= 1
    assert len(missing) >= 1
    for cluster, shard in missing:
        entry = next(c for c in demo.clusters() if c.id == shard["id"])
        assert entry.shard_name in cluster.shard_names
        assert shard == {
            "id": entry.id, "groupId": cluster.group_id, "typeName": "REPLICA_SET",
            "clusterName": entry.name, "shardName": entry.shard_name,
            "replicaSetName": entry.replica_set_name, "lastHeartbeat": shard["lastHeartbeat"],
            "links": [{"href": f"http://127.0.0.1/api/public/v1.0/groups/{cluster.group_id}"
                                f"/clusters/{entry.id}", "rel": "self"}],
        }  # fmt: skip
        assert TIMESTAMP.fullmatch(shard["lastHeartbeat"])
        MissingShard.model_validate(shard)


@pytest.mark.parametrize("now", [NOW, datetime(2027, 2, 28, 23, 59, 59, tzinfo=UTC)])
def test_a_small_bench_shaped_fleet_has_300_plus_minus_5_snapshots_per_cluster(
    now: datetime,
) -> None:
    """The bench shape, scaled to 20 clusters, gives each 295-305 snapshots, replica sets only."""
    fleet = generate(replace(BENCH, projects=2, clusters=20), seed=SEED, now=now)
    clusters = list(fleet.clusters())
    assert len(clusters) == 20
    assert len(fleet.projects) == 2
    assert all(295 <= len(c.snapshots) <= 305 for c in clusters)
    assert all(c.type_name == "REPLICA_SET" for c in clusters)
    hosts = [h for p in fleet.projects.values() for h in p.hosts.values()]
    assert all(h.type_name != "SHARD_CONFIG" for h in hosts)
    alerts = [a for p in fleet.projects.values() for a in p.alerts.values()]
    assert len(alerts) == 8
    assert not [
        a for a in alerts if a["status"] == "OPEN" and a["eventTypeName"] in HOLD_ALERT_TYPES
    ]


def write_yaml(path: Path, text: str) -> Path:
    """Write a fleet file and return its path."""
    path.write_text(text, encoding="utf-8")
    return path


def test_a_yaml_fleet_file_loads_absolute_and_relative_times(tmp_path: Path) -> None:
    """A YAML file's ids, absolute/relative times, flags and alerts arrive as written."""
    path = write_yaml(tmp_path / "fleet.yaml", """
projects:
  - id: "5e2211c17a3e5a48f5497de3"
    name: demo
    clusters:
      - id: c-rs
        name: prod-rs0
        snapshots:
          - {id: s1, created: "now-6h", expires: "now+2d"}
          - {id: s2, created: 2026-11-01T00:00:00Z, doNotDelete: true}
          - {id: s3, created: "2026-11-21T11:00:00Z", complete: false}
      - name: prod-sh
        type: SHARDED_REPLICA_SET
        shards: [sh0, sh1]
        snapshots:
          - {id: s4, created: "now-1d", expires: "now+30d", isPossiblyInconsistent: true,
             missingShards: [sh1]}
          - {id: s5, created: "now-2d"}
    hosts:
      - {hostname: cfg0.example.net, snapshots: [{id: c1, created: "now-1d", expires: "now+6d"}]}
    alerts:
      - {eventTypeName: BAD_CLUSTERSHOTS, status: OPEN, clusterName: prod-rs0, created: "now-3h"}
""")  # fmt: skip
    fleet = build_fleet(path, seed=SEED, now=NOW)
    project = fleet.projects["5e2211c17a3e5a48f5497de3"]
    rs = project.clusters["c-rs"]
    assert [s.id for s in rs.snapshots] == ["s3", "s1", "s2"]
    assert rs.index["s1"].created == datetime(2026, 11, 21, 6, tzinfo=UTC)
    assert rs.index["s1"].expires == datetime(2026, 11, 23, 12, tzinfo=UTC)
    assert rs.index["s2"].do_not_delete
    assert rs.index["s2"].expires is None
    assert rs.index["s2"].created == datetime(2026, 11, 1, tzinfo=UTC)
    assert not rs.index["s3"].complete
    assert rs.replica_set_name == "prod-rs0"
    assert rs.index["s1"].possibly_inconsistent is None
    sharded = next(c for c in project.clusters.values() if c.name == "prod-sh")
    shard1 = next(c for c in project.clusters.values() if c.shard_name == "sh1")
    s4, s5 = sharded.snapshots
    assert (s4.possibly_inconsistent, s5.possibly_inconsistent, s5.missing_shards) == (
        True, False, []
    )  # fmt: skip
    assert s4.missing_shards is not None
    assert s4.missing_shards[0]["id"] == shard1.id
    (host,) = project.hosts.values()
    assert (host.type_name, host.port, host.snapshots[0].expires) == (
        "SHARD_CONFIG", 27019, datetime(2026, 11, 27, 12, tzinfo=UTC)
    )  # fmt: skip
    (alert,) = project.alerts.values()
    assert alert["clusterId"] == "c-rs"
    assert alert["created"] == "2026-11-21T09:00:00Z"
    assert alert["groupId"] == project.id
    assert alert["links"][0]["rel"] == "self"


def test_a_json_fleet_file_loads_with_a_generated_history(tmp_path: Path) -> None:
    """A JSON file with ``generate`` gets the default history plus its explicit snapshots."""
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"projects": [{"name": "p", "clusters": [{
        "name": "rs", "generate": {"six_hourly_days": 2},
        "snapshots": [{"id": "x", "created": "2026-11-21T11:30:00Z", "expires": "now+1h"}],
    }], "alerts": [{"eventTypeName": "OPLOG_BEHIND", "status": "CLOSED",
                    "created": "now-2d", "resolved": "2026-11-20T12:00:00+02:00"}]}]}))  # fmt: skip
    fleet = build_fleet(str(path), seed=SEED, now=NOW)
    cluster = only_cluster(fleet)
    assert cluster.snapshots[1].id == "x"
    assert cluster.index["x"].expires == datetime(2026, 11, 21, 13, tzinfo=UTC)
    alive = expected_alive(NOW, 2)
    generated = [s for s in cluster.snapshots if s.id != "x" and s.created in alive]
    assert len(generated) == len(alive)
    assert all(OBJECT_ID.fullmatch(s.id) for s in generated)
    (project,) = fleet.projects.values()
    (alert,) = project.alerts.values()
    assert (alert["created"], alert["resolved"], alert["updated"]) == (
        "2026-11-19T12:00:00Z", "2026-11-20T10:00:00Z", "2026-11-20T10:00:00Z"
    )  # fmt: skip


def test_a_file_with_several_mistakes_reports_all_of_them_at_once(tmp_path: Path) -> None:
    """One FleetFileError lists every problem, each prefixed with the file and field path."""
    path = write_yaml(tmp_path / "fleet.yaml", """
projects:
  - name: p
    clusters:
      - name: a
        snapshots: [{created: "now-6h"}]
      - name: b
        type: SHARDED
        snapshots:
          - {created: "now-6h"}
          - {created: "now-12h", doNotDelete: "maybe"}
          - {created: "yesterday"}
          - {created: "now-1d", isPossiblyInconsistent: true}
    alerts:
      - {status: SHOUTING}
""")  # fmt: skip
    with pytest.raises(FleetFileError) as caught:
        build_fleet(str(path), seed=SEED, now=NOW)
    message = str(caught.value)
    expected = [
        "8: projects[0].clusters[1].type: must be 'REPLICA_SET' or 'SHARDED_REPLICA_SET', not"
        " 'SHARDED'",
        "11: projects[0].clusters[1].snapshots[1].doNotDelete: must be true or false, not 'maybe'",
        "12: projects[0].clusters[1].snapshots[2].created: not a timestamp",
        "13: projects[0].clusters[1].snapshots[3].isPossiblyInconsistent: only for snapshots of"
        " sharded clusters",
        "15: projects[0].alerts[0].eventTypeName: required",
        "15: projects[0].alerts[0].status: must be 'TRACKING', 'OPEN', 'CLOSED' or 'CANCELLED',"
        " not 'SHOUTING'",
    ]
    lines = message.splitlines()
    assert len(caught.value.problems) == len(expected) == len(lines)
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(f"{path}:{start}")
    assert isinstance(caught.value, ValueError)


def test_duplicate_snapshot_ids_are_refused(tmp_path: Path) -> None:
    """The same snapshot id twice in a file (across clusters and hosts) is an error naming both."""
    path = write_yaml(tmp_path / "dup.yml", """
projects:
  - name: p
    clusters:
      - {name: a, snapshots: [{id: s1, created: "now-6h"}]}
      - {name: b, snapshots: [{id: s2, created: "now-6h"}, {id: s1, created: "now-12h"}]}
    hosts:
      - {hostname: cfg0, snapshots: [{id: s2, created: "now-1d"}]}
""")  # fmt: skip
    with pytest.raises(FleetFileError) as caught:
        build_fleet(str(path), seed=SEED, now=NOW)
    assert caught.value.problems == [
        f"{path}:6: projects[0].clusters[1].snapshots[1].id: duplicate snapshot id 's1' "
        "(first at projects[0].clusters[0].snapshots[0])",
        f"{path}:8: projects[0].hosts[0].snapshots[0].id: duplicate snapshot id 's2' "
        "(first at projects[0].clusters[1].snapshots[0])",
    ]


def test_unknown_keys_are_refused_at_every_level(tmp_path: Path) -> None:
    """Keys the format does not define are errors, also snake_case spellings of camelCase ones."""
    path = write_yaml(tmp_path / "extra.yaml", """
version: 1
projects:
  - name: p
    clusters:
      - {name: a, replicas: 3, snapshots: [{created: "now", do_not_delete: true}]}
    alerts:
      - {eventTypeName: HOST_DOWN, status: OPEN, severity: high}
""")  # fmt: skip
    with pytest.raises(FleetFileError) as caught:
        build_fleet(str(path), seed=SEED, now=NOW)
    assert caught.value.problems == [
        f"{path}:2: version: unknown field (allowed: projects, taking)",
        f"{path}:6: projects[0].clusters[0].snapshots[0].do_not_delete: unknown field; did you"
        " mean 'doNotDelete'?",
        f"{path}:6: projects[0].clusters[0].replicas: unknown field; did you mean"
        " 'replicaSetName'?",
        f"{path}:8: projects[0].alerts[0].severity: unknown field",
    ]


def test_unreadable_files_and_unknown_specs_are_refused(tmp_path: Path) -> None:
    """A missing file or bad YAML is a FleetFileError naming the file (and line); a spec naming
    nothing is a ValueError."""
    with pytest.raises(FleetFileError, match=r"missing\.yaml: cannot read"):
        build_fleet(str(tmp_path / "missing.yaml"), seed=SEED, now=NOW)
    bad = write_yaml(tmp_path / "bad.yaml", "projects: [unclosed\n")
    with pytest.raises(FleetFileError, match=r"bad\.yaml:2: YAML syntax error: "):
        build_fleet(str(bad), seed=SEED, now=NOW)
    with pytest.raises(ValueError, match="unknown fleet 'huge'"):
        build_fleet("huge", seed=SEED, now=NOW)


def test_the_docstring_example_is_a_valid_fleet_file(tmp_path: Path) -> None:
    """The example in the module docstring loads and means what its comments say."""
    doc = fleetfile_module.__doc__ or ""
    example = doc[doc.index("    projects:") : doc.index("``missingShards`` lists")]
    fleet = build_fleet(write_yaml(tmp_path / "example.yaml", example), seed=SEED, now=NOW)
    (project,) = fleet.projects.values()
    assert project.id == "5e2211c17a3e5a48f5497de3"
    rs = next(c for c in project.clusters.values() if c.name == "prod-rs0")
    assert {"s1", "s2", "s3"} <= set(rs.index)
    assert len(rs.snapshots) > 20
    assert rs.index["s2"].do_not_delete
    stopped = next(c for c in project.clusters.values() if c.name == "prod-stopped")
    assert stopped.snapshots
    assert max(s.created for s in stopped.snapshots) <= NOW - timedelta(days=3)
    sharded = next(c for c in project.clusters.values() if c.name == "prod-sh")
    assert sharded.index["s4"].missing_shards is not None
    assert sharded.index["s4"].missing_shards[0]["shardName"] == "prod-sh-shard1"
    closed = next(a for a in project.alerts.values() if a["status"] == "CLOSED")
    assert closed["resolved"] == format_timestamp(NOW - timedelta(days=1))
    opened = next(a for a in project.alerts.values() if a["status"] == "OPEN")
    assert opened["clusterId"] == rs.id
