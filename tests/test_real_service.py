"""What the real service sends, end to end: discovery of sharded deployments by typeName,
restic's 9999y keep-within through the command line, and real vendor bodies
(tests/fixtures/real, sources in its SOURCES.md) parsed and replayed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.api.client import OpsManagerClient
from retention.api.models import (
    AgentLinks,
    Alert,
    AlertAcknowledgement,
    Cluster,
    ConfigServerSnapshot,
    Host,
    ListPage,
    Snapshot,
    SnapshotSchedule,
)
from retention.config.scope import ProjectTargets
from retention.core.decide import decide
from retention.core.model import AlertView as HoldingAlert
from retention.core.model import ClusterView, Member, SnapshotView, Target
from retention.core.policy.spec import KeepSpec
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import LATEST
from retention.errors import ApiError, AuthenticationError
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator
from retention.walk.inventory import Discovery, discover
from tests.support.client import PRIVATE_KEY, PUBLIC_KEY
from tests.support.digest import DigestChecker
from tests.support.fakeapi import FakeApi, json_answer, paged
from tests.support.planning import loaded_policy
from tests.support.replay_server import VERSION, Replay, serve
from tests.support.simfleet import KEY, NOW, SHARDED, P, running, small_fleet

FIXTURES = Path(__file__).parent / "fixtures" / "real"


def configure(folder: Path, base_url: str, policy: str) -> None:
    """retention.yaml for the small fleet's project and one policy."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text(policy)
    (folder / "retention.yaml").write_text(
        f"api:\n  base_url: {base_url}\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
    )


def test_restic_9999y_keep_within_plans_and_applies_through_the_cli(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """within_yearly: 9999y (one of restic's own vectors) used to crash plan with an
    OverflowError; its horizon now stops at the latest representable time, which keeps."""
    configure(folder, sim.base_url, "name: forever\nkeep:\n  within_yearly: 9999y\n")

    planned = cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now)
    applied = cli.main(["apply", "plan.json"], clock=sim.clock.now)

    out = capsys.readouterr()
    assert "internal error" not in out.err
    # One a year kept: prod-big's other 1,232 shortens are held by max_expire_fraction.
    assert (planned, applied) == (3, 3)
    extends = [
        c for c in open_plan(folder / "plan.json").read_list("changes") if c["action"] == "extend"
    ]
    assert extends
    assert {c["body"].get("expires") for c in extends} == {LATEST}
    written = {p["body"].get("expires") for p in sim.admin("patches")["patches"]}
    assert "9999-12-31T23:59:59Z" in written


def real(name: str) -> dict[str, Any]:
    """A real body of tests/fixtures/real (its source is in SOURCES.md there)."""
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return body


def discovered(fake: FakeApi, client: OpsManagerClient, rows: list[dict[str, Any]]) -> Discovery:
    """What discovery makes of a clusters list holding ``rows`` (and no hosts)."""
    fake.route("GET", rf"/groups/{P}/clusters", paged(rows))
    fake.route("GET", rf"/groups/{P}/hosts", paged([]))
    return discover(client, ProjectTargets(P))


def test_sharded_clusters_are_walked_with_or_without_shard_name_and_members_listed(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Real rows: the operator's sharded row carries shardName and is walked (it used to be
    dropped), as is the Go client's sharded row without one; the shard row is listed as a
    member of its cluster, and so is a config-server replica set; a replica set is walked.
    Every row is either walked or a member."""
    parent, shard, replica_set = (
        real("cluster_get_sharded_k8s.json"),
        real("cluster_get_shard_member_k8s.json"),
        real("cluster_get_replica_set_k8s.json"),
    )
    other = real("cluster_get_sharded_goclient.json")
    # A config-server row as the sharded cluster's: the shard's row with the type changed
    # (no real CONFIG_SERVER_REPLICA_SET row is on record; SOURCES.md, "Not found").
    config = {
        **shard,
        "id": "5ba4ec37a957713d7f9bcbb1",
        "typeName": "CONFIG_SERVER_REPLICA_SET",
        "replicaSetName": "shannon-cfg",
    }
    del config["shardName"]
    rows = [parent, shard, replica_set, other, config]

    found = discovered(fake, client, rows)

    walked = {t.cluster_id: t for t in found.targets}
    members = {m.cluster_id: t.cluster_id for t in found.targets for m in t.members}
    assert set(walked) == {parent["id"], replica_set["id"], other["id"]}
    assert members == {shard["id"]: parent["id"], config["id"]: parent["id"]}
    assert set(walked) | set(members) == {r["id"] for r in rows}
    assert walked[parent["id"]].name == "shannon"
    assert walked[parent["id"]].type_name == "SHARDED_REPLICA_SET"
    assert found.warnings == []


def test_unknown_types_are_walked_and_orphan_members_named_never_dropped(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """A typeName retention does not know is walked with a warning; a shard whose sharded
    cluster is not in the list is not walked (its snapshots are that cluster's) and is named
    in a warning. No row disappears without a word."""
    shard = real("cluster_get_shard_member_k8s.json")  # its cluster "shannon" is not listed
    odd = {**real("cluster_get_replica_set_k8s.json"), "typeName": "REPLICA_SET_V2"}

    found = discovered(fake, client, [shard, odd])

    assert [t.cluster_id for t in found.targets] == [odd["id"]]
    assert len(found.warnings) == 2
    assert any(shard["id"] in w and "not walked" in w for w in found.warnings)
    assert any(odd["id"] in w and "'REPLICA_SET_V2'" in w for w in found.warnings)


def test_a_sharded_deployment_is_planned_through_discovery_with_its_members(
    folder: Path,
) -> None:
    """Against the simulator's real-shaped rows (sharded row with shardName, shard rows,
    config-server replica set), plan walks the sharded cluster, plans its snapshots, and
    lists its shards and config servers as members in plan.json and the report."""
    fleet = small_fleet(NOW)
    with running(lambda _now: fleet) as sim:
        sharded = fleet.projects[P].clusters[SHARDED]
        sharded.listed_shard_name = "sh0"  # as the real row shows it
        configure(folder, sim.base_url, "name: p\nkeep: {last: 1}\n")
        # Held (exit 3): prod-big by max_expire_fraction, prod-small by its open alert.
        assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 3
        rows = sim.admin("fleet")["projects"][0]["clusters"]

    plan = json.loads((folder / "plan.json").read_text())
    entries = {c["clusterId"]: c for c in plan["clusters"] if c["kind"] == "cluster"}
    members = {m["clusterId"] for c in entries.values() for m in c["members"]}
    assert SHARDED in entries
    assert entries[SHARDED]["counts"]["snapshots"] == 2
    assert [m["shardName"] for m in entries[SHARDED]["members"]] == ["sh0"]
    assert set(entries) | members == {r["id"] for r in rows}
    assert plan["warnings"] == []


# Each real body and the model the client reads it with. Left out, with the reason in
# SOURCES.md: the Go client's "alerts" (they are alert configurations), agents by type and
# projects (not read by retention), and the checkpoints list (another endpoint).
MODELS: dict[str, Any] = {
    "cluster_snapshots_list": ListPage[Snapshot],
    "cluster_snapshot_get": Snapshot,
    "cluster_snapshot_patch_response": Snapshot,
    "cluster_snapshot_patch_request": SnapshotPatch,
    "config_server_snapshots_list": ListPage[ConfigServerSnapshot],
    "config_server_snapshot_get": ConfigServerSnapshot,
    "clusters_list": ListPage[Cluster],
    "cluster_get": Cluster,
    "hosts_list": ListPage[Host],
    "host_get": Host,
    "alerts_list_docs": ListPage[Alert],
    "alert_get_docs": Alert,
    "alert_backup_global": Alert,
    "alert_acknowledge_response": Alert,
    "alert_acknowledge_request": AlertAcknowledgement,
    "agents_links": AgentLinks,
    "snapshot_schedule_get": SnapshotSchedule,
}


def modelled() -> list[tuple[str, Any]]:
    """Every fixture that has a model, with it."""
    found = []
    for path in sorted(FIXTURES.glob("*.json")):
        model = next((m for prefix, m in MODELS.items() if path.name.startswith(prefix)), None)
        if model is not None:
            found.append((path.name, model))
    return found


@pytest.mark.parametrize(("name", "model"), modelled(), ids=[n for n, _ in modelled()])
def test_every_real_body_parses_with_its_model(name: str, model: Any) -> None:
    """The models read what the real service (or its documentation) sends. The docs' list
    examples end in an empty {} item, a page-template artifact no answer carries: dropped."""
    body = real(name)
    if isinstance(body.get("results"), list):
        body["results"] = [item for item in body["results"] if item]

    parsed = model.model_validate(body)

    assert parsed is not None
    if isinstance(parsed, ListPage):
        assert parsed.results
        assert all(getattr(item, "id", None) for item in parsed.results)


@pytest.mark.parametrize(
    "name", ["snapshot_schedule_get_docs.json", "snapshot_schedule_get_goclient.json"]
)
def test_real_snapshot_schedules_read_as_the_service_defaults(name: str) -> None:
    """Both real schedule bodies read as the service's defaults; the reference time they
    leave out stays absent rather than invented."""
    schedule = SnapshotSchedule.model_validate(real(name))

    assert (
        schedule.snapshot_interval_hours,
        schedule.snapshot_retention_days,
        schedule.daily_snapshot_retention_days,
        schedule.weekly_snapshot_retention_weeks,
        schedule.monthly_snapshot_retention_months,
        schedule.point_in_time_window_hours,
    ) == (6, 2, 7, 4, 13, 24)
    assert schedule.reference_hour_of_day is None
    assert schedule.cluster_id == real(name)["clusterId"]


def test_real_snapshot_parts_give_their_mongod_version() -> None:
    """Real parts name their version mongodVersion; the models read it."""
    snapshot = Snapshot.model_validate(real("cluster_snapshot_get_docs.json"))

    assert snapshot.parts
    assert all(part.server_version for part in snapshot.parts)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in FIXTURES.glob("error_*.json") if "401" not in p.name)
)
def test_real_error_bodies_become_messages_with_their_error_code(
    fake: FakeApi, client: OpsManagerClient, name: str
) -> None:
    """Recorded error bodies ({detail, error, errorCode, parameters, reason}; parameters
    missing, null or a sentence) give a message with the errorCode and the detail."""
    body = real(name)
    status = int(body["error"])
    path = rf"/groups/{P}/clusters/c1/snapshots/s1"
    fake.route("GET", path, lambda _r: json_answer(body, status))

    with pytest.raises(ApiError) as raised:
        client.get_snapshot(P, "c1", "s1")

    message = str(raised.value)
    assert body["errorCode"] in message
    assert body["detail"] in message
    assert PRIVATE_KEY not in message


def test_a_real_401_body_is_the_credentials_message_exit_5(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """A recorded 401 body (no parameters, errorCode UNEXPECTED_ERROR) is an authentication
    failure: exit 5 and a message about the keys, which names none of them."""
    body = real("error_401_atlas_recorded.json")
    path = rf"/groups/{P}/clusters/c1/snapshots/s1"
    fake.route("GET", path, lambda _r: json_answer(body, 401))

    with pytest.raises(AuthenticationError) as raised:
        client.get_snapshot(P, "c1", "s1")

    assert raised.value.exit_code == 5
    assert "refused the credentials" in str(raised.value)
    assert PRIVATE_KEY not in str(raised.value)


def test_plan_run_and_doctor_replay_against_real_answers(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Replayed real answers (the operator's sharded rows, the Go client's snapshots, hosts,
    agent links and project, the documented alerts, the real version header): doctor passes
    and shows the version, plan walks the sharded cluster and the replica set and lists the
    shard as a member, run finishes; no internal error anywhere."""
    replay = Replay(DigestChecker(PUBLIC_KEY, KEY))
    with serve(replay) as base_url:
        configure(folder, base_url, "name: p\nkeep: {last: 1}\n")
        doctor = cli.main(["doctor", "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        planned = cli.main(["plan", "--out", "plan.json"])
        ran = cli.main(["run"])
    err = capsys.readouterr().err

    checks = {c["name"]: c for c in report["checks"]}
    assert doctor == 0, report
    assert checks["service version"]["detail"] == VERSION
    assert "internal error" not in err
    assert (planned, ran) == (0, 0)
    plan = json.loads((folder / "plan.json").read_text())
    clusters = {c["name"]: c for c in plan["clusters"]}
    assert plan["serviceVersion"] == VERSION
    assert [p["name"] for p in plan["projects"]] == [real("project_get_goclient.json")["name"]]
    assert set(clusters) == {"shannon", "liffey"}
    assert clusters["shannon"]["typeName"] == "SHARDED_REPLICA_SET"
    assert [m["shardName"] for m in clusters["shannon"]["members"]] == ["shannon-0"]
    assert all(c["counts"]["snapshots"] == 1 for c in clusters.values())
    walked = {path.split("?")[0] for _m, path, _s in replay.seen if path.count("/") == 8}
    assert len(walked) == 2  # the two clusters' snapshot lists, and not the shard's


def test_an_alert_on_a_shard_holds_its_sharded_cluster() -> None:
    """An OPEN hold-type alert that names a shard (by its row's id or its replica set) holds
    the destructive changes of the sharded cluster the shard belongs to, not of others."""
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    shard = Member("5ba4ec37a957713d7f9bcba0", "REPLICA_SET", "shannon-0", "shannon-0")
    sharded = Target(P, "5ba3d344a957713d7f8f43fd", "shannon", type_name="SHARDED_REPLICA_SET",
                     members=(shard,))  # fmt: skip
    other = Target(P, "5ba8db64a957713d7fa5018b", "liffey", replica_set_name="liffey")
    snapshots = [
        SnapshotView(f"s{i}", now - timedelta(days=i), True, False, now + timedelta(days=90))
        for i in range(1, 6)
    ]
    policy = loaded_policy(keep=KeepSpec(last=1), max_expire_fraction=1.0)
    by_rs = HoldingAlert("a1", "OPLOG_BEHIND", replica_set_name="shannon-0")
    by_id = HoldingAlert("a2", "BAD_CLUSTERSHOTS", cluster_id=shard.cluster_id)

    for alert in (by_rs, by_id):
        held, free = (
            decide(ClusterView(t, snapshots, [alert]), [policy], now=now, lease_for=timedelta(1))
            for t in (sharded, other)
        )
        assert [h.alert_id for h in held.holds] == [alert.id]
        assert free.holds == ()
