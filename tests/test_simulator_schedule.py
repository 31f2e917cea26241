"""The snapshot schedule: the client reads it (None when the service has none), the simulator
serves one per cluster and takes the snapshots it gives as its clock moves."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from requests.auth import HTTPDigestAuth

from retention.api.client import OpsManagerClient
from retention.errors import HTTPStatusError, ServerError
from retention.simulator.fleet import FleetShape, generate
from retention.simulator.fleetfile import FleetFileError, load_fleet_file
from retention.simulator.schedule import SimSchedule
from retention.simulator.server import Simulator
from retention.simulator.store import SimCluster, take_due
from tests.support.client import PUBLIC_KEY
from tests.support.fakeapi import FakeApi, json_answer
from tests.support.simfleet import KEY, NOW, P, client_for, running

# NOW is Saturday 2026-11-21 12:00 UTC. FLEET's project is P; C is any cluster id.
C = "5e4e593f70dfbf1e2f6e1d30"
SCHEDULE_PATH = f"/groups/{P}/backupConfigs/{C}/snapshotSchedule"
FLEET = """
projects:
  - id: "5e2211c17a3e5a48f5497de3"
    name: p
    clusters:
      - name: six-hourly
        schedule: {snapshotRetentionDays: 5, referenceHourOfDay: 3, referenceMinuteOfHour: 30}
      - name: daily
        schedule: {snapshotIntervalHours: 24}
      - name: unscheduled
        backup: false
        snapshots: [{created: "now-6h", expires: "now+2d"}]
      - name: stopped
        generate: {six_hourly_days: 5, stopped_days_ago: 3}
        schedule: {snapshotRetentionDays: 5}
      - name: quiet
        generate: {six_hourly_days: 5}
      - name: sharded
        type: SHARDED_REPLICA_SET
        schedule: {clusterCheckpointIntervalMin: 15, taking: false}
"""


@contextmanager
def fleet_sim(
    tmp_path: Path, text: str = FLEET, **options: object
) -> Iterator[tuple[Simulator, dict[str, str]]]:
    """The fleet file served with the clock frozen at NOW, and its cluster ids by name
    (the first row of each name: the cluster itself, not its shards)."""
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    with running(lambda now: load_fleet_file(path, seed=7, now=now), **options) as sim:
        ids: dict[str, str] = {}
        for cluster in sim.admin("fleet")["projects"][0]["clusters"]:
            ids.setdefault(cluster["name"], cluster["id"])
        yield sim, ids


def created_and_expiry(api: OpsManagerClient, cluster_id: str) -> list[tuple[datetime, datetime]]:
    """The cluster's snapshots as the API serves them, oldest first: (created, expires)."""
    snapshots = api.list_snapshots(P, cluster_id).collect()
    pairs = [(s.created_at, s.expires) for s in snapshots if s.expires is not None]
    assert len(pairs) == len(snapshots)  # every taken snapshot has an expiry
    return sorted(pairs)


def at(day: int, hour: int, minute: int = 0, month: int = 11) -> datetime:
    """A time of 2026 in UTC."""
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


# --- the client ---------------------------------------------------------------------------


def test_client_reads_a_cluster_schedule_from_the_simulator(tmp_path: Path) -> None:
    """get_snapshot_schedule returns the schedule the fleet file sets, reference time and
    the service's defaults included."""
    with fleet_sim(tmp_path) as (sim, ids), client_for(sim) as api:
        schedule = api.get_snapshot_schedule(P, ids["six-hourly"])
        sharded = api.get_snapshot_schedule(P, ids["sharded"])

    assert schedule is not None
    assert schedule.cluster_id == ids["six-hourly"]
    assert schedule.group_id == P
    assert (schedule.reference_hour_of_day, schedule.reference_minute_of_hour) == (3, 30)
    assert schedule.reference_time_zone_offset == "+0000"
    assert (
        schedule.snapshot_interval_hours,
        schedule.snapshot_retention_days,
        schedule.daily_snapshot_retention_days,
        schedule.weekly_snapshot_retention_weeks,
        schedule.monthly_snapshot_retention_months,
    ) == (6, 5, 7, 4, 13)
    assert schedule.cluster_checkpoint_interval_min is None
    assert sharded is not None
    assert sharded.cluster_checkpoint_interval_min == 15
    assert schedule.links[0].href.endswith(f"/backupConfigs/{ids['six-hourly']}/snapshotSchedule")


def test_no_schedule_is_a_404_and_the_client_returns_none(tmp_path: Path) -> None:
    """A cluster without backup answers 404 BACKUP_CONFIG_NOT_FOUND; the client says None."""
    with fleet_sim(tmp_path) as (sim, ids), client_for(sim) as api:
        path = f"/groups/{P}/backupConfigs/{ids['unscheduled']}/snapshotSchedule"
        answer = requests.get(sim.base_url + path, auth=HTTPDigestAuth(PUBLIC_KEY, KEY), timeout=5)
        schedule = api.get_snapshot_schedule(P, ids["unscheduled"])

    assert answer.status_code == 404
    assert answer.json()["errorCode"] == "BACKUP_CONFIG_NOT_FOUND"
    assert schedule is None


def test_an_unknown_cluster_is_none_and_its_id_is_percent_encoded(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Ids are percent-encoded in the path; any 404 (here an unknown cluster) reads as no
    schedule."""
    fake.answer("GET", f"/groups/{P}/backupConfigs/a%20b/snapshotSchedule", {}, 404)

    assert client.get_snapshot_schedule(P, "a b") is None
    assert fake.calls(404)


def test_a_cluster_not_monitored_has_no_schedule_but_other_errors_raise(
    fake: FakeApi, client: OpsManagerClient, instant_retries: None
) -> None:
    """409 CANNOT_GET_BACKUP_CONFIG_INVALID_STATE reads as no schedule; another 409 and a
    500 raise as every endpoint's errors do."""
    del instant_retries
    body = {"error": 409, "errorCode": "CANNOT_GET_BACKUP_CONFIG_INVALID_STATE",
            "detail": "Cannot get backup configuration without cluster being monitored.",
            "reason": "Conflict"}  # fmt: skip
    fake.answer("GET", SCHEDULE_PATH, body, 409)
    assert client.get_snapshot_schedule(P, C) is None

    fake.routes.clear()
    fake.answer("GET", SCHEDULE_PATH, {**body, "errorCode": "OTHER"}, 409)
    with pytest.raises(HTTPStatusError, match="OTHER"):
        client.get_snapshot_schedule(P, C)

    fake.routes.clear()
    fake.route("GET", SCHEDULE_PATH, lambda _r: json_answer({"error": 500}, 500))
    with pytest.raises(ServerError):
        client.get_snapshot_schedule(P, C)


# --- the simulator takes snapshots ------------------------------------------------------------


def test_three_days_take_the_scheduled_snapshots_with_their_expiries(tmp_path: Path) -> None:
    """Advancing the clock 3 days gives a 6-hourly cluster with reference 03:30 the 12
    snapshots at 03:30/09:30/15:30/21:30 after NOW, complete, each expiring after its
    kind's retention: 5 days, the daily 03:30 one 7, Sunday's daily 4 weeks."""
    with fleet_sim(tmp_path) as (sim, ids), client_for(sim) as api:
        assert api.list_snapshots(P, ids["six-hourly"]).collect() == []
        moved = sim.admin("clock", {"advance": 3 * 86400})
        taken = created_and_expiry(api, ids["six-hourly"])
        complete = {s.complete for s in api.list_snapshots(P, ids["six-hourly"]).collect()}

    expected_created = [
        at(21, 15, 30), at(21, 21, 30),
        at(22, 3, 30), at(22, 9, 30), at(22, 15, 30), at(22, 21, 30),
        at(23, 3, 30), at(23, 9, 30), at(23, 15, 30), at(23, 21, 30),
        at(24, 3, 30), at(24, 9, 30),
    ]  # fmt: skip
    assert [created for created, _ in taken] == expected_created
    keep = {at(22, 3, 30): timedelta(weeks=4), at(23, 3, 30): timedelta(days=7),
            at(24, 3, 30): timedelta(days=7)}  # fmt: skip
    assert [expires - created for created, expires in taken] == [
        keep.get(created, timedelta(days=5)) for created in expected_created
    ]
    assert complete == {True}
    assert moved["now"] == "2026-11-24T12:00:00Z"
    assert moved["taken"] == 12 + 3  # and the daily cluster's three midnights


def test_a_daily_schedule_keeps_sundays_and_the_first_of_the_month_longer(
    tmp_path: Path,
) -> None:
    """A 24-hourly schedule takes one snapshot a midnight; Sundays are kept 4 weeks, the 1st
    of December 13 months (to 2028-01-01), the others the daily 7 days (the reaper waits
    longer than the test, so the expired ones are still listed)."""
    with fleet_sim(tmp_path, reap_delay=timedelta(days=30)) as (sim, ids), client_for(sim) as api:
        sim.admin("clock", {"advance": 10 * 86400})
        taken = created_and_expiry(api, ids["daily"])

    assert [created for created, _ in taken] == [at(d, 0) for d in range(22, 31)] + [
        at(1, 0, month=12)
    ]
    long_lived = {c: e for c, e in taken if e - c > timedelta(days=7)}
    assert long_lived == {
        at(22, 0): at(20, 0, month=12),
        at(29, 0): at(27, 0, month=12),
        at(1, 0, month=12): datetime(2028, 1, 1, tzinfo=UTC),
    }
    assert {e - c for c, e in taken if c not in long_lived} == {timedelta(days=7)}


def test_no_schedule_stopped_and_not_taking_clusters_take_nothing(tmp_path: Path) -> None:
    """A cluster without a schedule, a stopped one, one with the default schedule in a file
    that does not ask for taking, and one with taking false gain no snapshot in 3 days."""
    names = ("unscheduled", "stopped", "quiet", "sharded")
    with fleet_sim(tmp_path) as (sim, ids), client_for(sim) as api:
        before = {n: [s.id for s in api.list_snapshots(P, ids[n]).collect()] for n in names}
        sim.admin("clock", {"advance": 3 * 86400})
        newest = {n: api.list_snapshots(P, ids[n]).collect()[:1] for n in names}

    assert all(before[name] for name in ("stopped", "quiet", "unscheduled"))
    for name in names:
        assert all(s.id in before[name] for s in newest[name]), name
    assert newest["stopped"][0].created_at <= NOW - timedelta(days=3)


def test_a_file_with_taking_true_makes_generated_clusters_take_too(tmp_path: Path) -> None:
    """``taking: true`` at the top of a fleet file: a generated cluster with the default
    schedule continues its 6-hourly history; a stopped one still takes none."""
    text = FLEET.replace("projects:", "taking: true\nprojects:", 1)
    with fleet_sim(tmp_path, text) as (sim, ids), client_for(sim) as api:
        sim.admin("clock", {"advance": 86400})
        quiet = api.list_snapshots(P, ids["quiet"]).collect()
        stopped = api.list_snapshots(P, ids["stopped"]).collect()

    assert [s.created_at for s in quiet[:4]] == [at(22, 12), at(22, 6), at(22, 0), at(21, 18)]
    assert quiet[2].expires == at(20, 0, month=12)  # Sunday midnight: a weekly
    assert stopped[0].created_at <= NOW - timedelta(days=3)


def test_a_generated_fleet_serves_schedules_but_takes_nothing() -> None:
    """Generated clusters (as in the demo and bench fleets) answer the schedule their history
    follows (6-hourly from 00:00, their six_hourly_days kept) and take no snapshot when the
    clock moves."""
    shape = FleetShape(projects=1, clusters=1, six_hourly_days=(3,))
    with running(lambda now: generate(shape, seed=7, now=now)) as sim, client_for(sim) as api:
        project = sim.admin("fleet")["projects"][0]
        cluster = project["clusters"][0]
        schedule = api.get_snapshot_schedule(project["id"], cluster["id"])
        moved = sim.admin("clock", {"advance": 2 * 86400})

    assert schedule is not None
    assert (schedule.snapshot_interval_hours, schedule.reference_hour_of_day) == (6, 0)
    assert schedule.snapshot_retention_days == 3
    assert moved["taken"] == 0


def test_a_generated_history_expires_as_its_schedule_says() -> None:
    """Every unexpired generated snapshot with an expiry has the one its cluster's schedule
    gives its creation time, so new snapshots continue the history."""
    fleet = generate(FleetShape(projects=1, clusters=2, six_hourly_days=(2, 40)), seed=3, now=NOW)
    checked = 0
    for cluster in fleet.clusters():
        schedule = cluster.schedule
        assert schedule is not None
        for snapshot in cluster.snapshots:
            if snapshot.expires is not None and snapshot.expires > NOW:
                assert snapshot.expires == schedule.expires(snapshot.created)
                checked += 1
    assert checked > 100


# --- fleet files ----------------------------------------------------------------------------


def test_a_reference_time_with_an_offset_is_stored_in_utc(tmp_path: Path) -> None:
    """referenceHourOfDay 5 at +0200 is served as 03:00 +0000, as the service stores it."""
    text = FLEET.replace("referenceHourOfDay: 3, referenceMinuteOfHour: 30",
                         'referenceHourOfDay: 5, referenceTimeZoneOffset: "+0200"')  # fmt: skip
    with fleet_sim(tmp_path, text) as (sim, ids), client_for(sim) as api:
        schedule = api.get_snapshot_schedule(P, ids["six-hourly"])

    assert schedule is not None
    assert (schedule.reference_hour_of_day, schedule.reference_time_zone_offset) == (3, "+0000")


def test_bad_schedules_are_named_with_their_field(tmp_path: Path) -> None:
    """An interval the service does not offer, an hour past 23, an unknown key, a checkpoint
    interval on a replica set and a schedule on a cluster without backup are all reported at
    once, each at its line and field."""
    path = tmp_path / "bad.yaml"
    path.write_text(
        "projects:\n"
        "  - name: p\n"
        "    clusters:\n"
        "      - name: a\n"
        "        schedule: {snapshotIntervalHours: 7, referenceHourOfDay: 24}\n"
        "      - name: b\n"
        "        schedule: {clusterCheckpointIntervalMin: 15, everyHours: 2}\n"
        "      - {name: c, backup: false, schedule: {}}\n",
        encoding="utf-8",
    )
    with pytest.raises(FleetFileError) as caught:
        load_fleet_file(path, seed=7, now=NOW)

    where = f"{path}:%d: projects[0].clusters[%d].schedule"
    problems = caught.value.problems
    assert problems[:2] == [
        f"{where % (5, 0)}.snapshotIntervalHours: must be 6, 8, 12 or 24, not 7",
        f"{where % (5, 0)}.referenceHourOfDay: must be between 0 and 23, not 24",
    ]
    assert problems[2].startswith(f"{where % (7, 1)}.everyHours: unknown field")
    assert problems[3:] == [
        f"{where % (7, 1)}.clusterCheckpointIntervalMin: only for sharded clusters",
        f"{where % (8, 2)}: not allowed with backup false",
    ]


def test_ticks_are_aligned_to_the_reference_time() -> None:
    """An 8-hourly schedule at 01:15 ticks at 01:15, 09:15 and 17:15: after the start, up to
    and including the end."""
    schedule = SimSchedule(interval_hours=8, reference_hour=1, reference_minute=15)

    ticks = schedule.ticks(at(21, 9, 15), at(22, 9, 15))

    assert ticks == [at(21, 17, 15), at(22, 1, 15), at(22, 9, 15)]


def test_a_schedule_that_stops_takes_up_to_its_stop_and_nothing_after() -> None:
    """A 6-hourly schedule that stops 1 day after its start takes the 4 ticks up to and
    including the stop when the clock moves 3 days, and none when it moves on."""
    start = at(21, 0, 0)
    cluster = SimCluster("c", "g", "rs")
    cluster.schedule = SimSchedule(
        taking=True, taken_until=start, stops_at=start + timedelta(days=1)
    )

    assert take_due(cluster, start + timedelta(days=3)) == 4
    assert take_due(cluster, start + timedelta(days=4)) == 0
    assert [s.created for s in cluster.snapshots] == [
        start + timedelta(hours=h) for h in (24, 18, 12, 6)
    ]
