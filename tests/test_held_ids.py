"""What the planner does with an id a plan cannot carry: a cluster or config server with one
is held at discovery and never walked, a snapshot with one gets no change and holds its
cluster's destructive changes, and the plan's files stay ones apply accepts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from retention.api.client import OpsManagerClient
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.decide import decide
from retention.core.model import ClusterView, SnapshotView, Target
from retention.core.planfile import DECISION
from retention.core.policy.spec import KeepSpec
from retention.forecast.forecaster import forecast_fleet
from retention.plan.planner import make_plan
from retention.report.lines import summary_lines
from retention.runfolder.folder import decisions_path
from retention.runfolder.planread import open_plan
from retention.runfolder.planrecords import decision_record
from retention.runfolder.planwrite import EncodedCluster, PlanBuilder, encode_cluster
from tests.support.fakeapi import FakeApi, list_page, paged, snapshot
from tests.support.planning import described, loaded_policy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
ODD = "5e4e/../../../alerts"
POLICY = loaded_policy("prod", KeepSpec(last=1), max_expire_fraction=1.0)


def view(sid: str, hours: int, expires_in: timedelta = 30 * DAY) -> SnapshotView:
    """A complete, consistent snapshot taken ``hours`` before NOW."""
    return SnapshotView(sid, NOW - timedelta(hours=hours), True, False, NOW + expires_in)


def written_plan(folder: Path, cluster: EncodedCluster) -> Path:
    """plan.json and its decisions in ``folder``, of the one encoded cluster, as the planner
    writes them."""
    plan_path = folder / "plan.json"
    builder = PlanBuilder(NOW, NOW, "https://om.test/api/public/v1.0", [])
    with decisions_path(plan_path).open("wb") as decisions:
        builder.decisions_out = decisions
        builder.add_encoded(cluster)
    with plan_path.open("wb") as out:
        builder.write(out)
    return plan_path


def test_a_cluster_whose_id_cannot_be_carried_is_held_and_decides_nothing() -> None:
    """decide gives such a cluster one id hold naming the id and why, and no decision,
    whatever snapshots it is handed."""
    cluster = ClusterView(Target("p1", ODD, "alerts-prod"), [view("s1", 1)])
    plan = decide(cluster, [POLICY], now=NOW, lease_for=DAY)

    [hold] = plan.holds
    assert hold.kind == "id"
    assert hold.reason.startswith(f"cluster id {ODD!r} cannot be carried by a plan (it holds '/'")
    assert hold.reason.endswith("not walked, nothing of it is changed")
    assert plan.decisions == ()
    assert plan.policies == ("prod",)


def test_an_unmanaged_config_server_with_such_an_id_is_held_with_its_id_escaped() -> None:
    """A config server no policy matches is held too, and a control character of its id is
    written as an escape in the reason."""
    host = "cfg\x1b[2J0"
    plan = decide(
        ClusterView(Target("p1", host, host, "config-server")), [], now=NOW, lease_for=DAY
    )

    [hold] = plan.holds
    assert hold.reason.startswith("config server id 'cfg\\x1b[2J0' cannot be carried")
    assert "U+001B" in hold.reason
    assert "\x1b" not in hold.reason


def test_a_snapshot_whose_id_cannot_be_carried_gets_no_change_and_holds_the_cluster(
    tmp_path: Path,
) -> None:
    """The odd snapshot keeps its state but gets no change and a reason; the cluster gets an
    id hold, its destructive changes are held, and its extension still goes."""
    snapshots = [
        view("newest", 1, expires_in=timedelta(hours=2)),  # kept: extended
        view("a/b", 5),  # unkept: would be shortened
        view("older", 9),  # unkept: shortened, held
    ]

    cluster = ClusterView(Target("p1", "c1", "prod-rs"), snapshots)
    plan = decide(cluster, [POLICY], now=NOW, lease_for=DAY)
    by_id = {d.snapshot.id: d for d in plan.decisions}
    plan_path = written_plan(tmp_path, encode_cluster(described(plan, NOW)))

    [hold] = plan.holds
    assert hold.kind == "id"
    assert hold.reason.startswith("1 snapshot id cannot be carried by a plan ('a/b': it holds '/'")
    odd = by_id["a/b"]
    assert (odd.state, odd.action, odd.patch, odd.held) == ("unkept", "none", None, None)
    assert odd.reasons[-1]["rule"] == "id"
    assert (by_id["older"].action, by_id["older"].held) == ("shorten", hold.reason)
    assert (by_id["newest"].action, by_id["newest"].held) == ("extend", None)
    assert [c["snapshotId"] for c in open_plan(plan_path).read_list("changes")] == ["newest"]
    assert [c["snapshotId"] for c in open_plan(plan_path).read_list("held")] == ["older"]
    assert DECISION.validate_python(decision_record(plan, odd))["snapshotId"] == "a/b"


def test_an_unmatched_cluster_with_an_odd_snapshot_is_not_held() -> None:
    """Where no policy matches, nothing would change anyway: no hold for a snapshot id."""
    plan = decide(
        ClusterView(Target("p1", "c1", "rs"), [view("..", 1)]), [], now=NOW, lease_for=DAY
    )

    assert plan.holds == ()
    assert [d.state for d in plan.decisions] == ["unmatched"]


def odd_project(fake: FakeApi) -> None:
    """Project p1 with an ordinary cluster c1 (two daily snapshots, s0 the newer) and a
    cluster whose id a plan cannot carry, no alerts and no hosts."""
    rows = [
        {"id": "c1", "clusterName": "rs", "typeName": "REPLICA_SET"},
        {"id": ODD, "clusterName": "alerts-prod", "typeName": "REPLICA_SET"},
    ]
    fake.answer("GET", "/groups/p1", {"id": "p1", "name": "shop"})
    fake.answer("GET", "/groups/p1/alerts", list_page([], 0))
    fake.answer("GET", "/groups/p1/clusters", list_page(rows, 2))
    fake.answer("GET", "/groups/p1/hosts", list_page([], 0))
    days = ["2026-11-20T00:00:00Z", "2026-11-19T00:00:00Z"]
    fake.route(
        "GET",
        "/groups/p1/clusters/c1/snapshots",
        paged([snapshot(f"s{i}", d, clusterName="rs") for i, d in enumerate(days)]),
    )


def test_discovery_holds_the_odd_cluster_without_a_request_and_plans_the_rest(
    fake: FakeApi, client: OpsManagerClient, tmp_path: Path
) -> None:
    """make_plan warns of the odd cluster, never asks for its snapshots, writes it with its
    hold, plans the ordinary cluster, and apply's reader takes the plan it wrote."""
    odd_project(fake)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "prod.yaml").write_text(
        "name: prod\nkeep: {last: 1}\ngrace: 24h\nsafety: {max_expire_fraction: 1.0}\n"
    )

    scope = Scope(load_policies(tmp_path / "policies"), [ProjectTargets("p1")], concurrency=2)
    result = make_plan(client, scope, plan_path=tmp_path / "plan.json", now=NOW)

    head = result.plan.head
    clusters = {c["clusterId"]: c for c in result.plan.read_clusters()}
    assert [h["kind"] for h in clusters[ODD]["holds"]] == ["id"]
    assert clusters[ODD]["counts"] == {"snapshots": 0}
    assert clusters["c1"]["holds"] == []
    assert [c["snapshotId"] for c in result.plan.read_list("changes")] == ["s1"]
    [warning] = head["warnings"]
    assert warning.startswith(f"project p1: cluster id {ODD!r} cannot be carried by a plan")
    assert warning.endswith("; held (named 'alerts-prod')")
    assert result.errors == []
    assert head["summary"]["clustersHeld"] == 1
    walked = {seen.path for seen in fake.seen if seen.path.endswith("/snapshots")}
    assert walked == {"/api/public/v1.0/groups/p1/clusters/c1/snapshots"}


def test_a_forecast_walks_past_the_odd_cluster_without_a_request_for_it(
    fake: FakeApi, client: OpsManagerClient, tmp_path: Path
) -> None:
    """forecast_fleet asks nothing about a cluster whose id a plan cannot carry (neither its
    snapshots nor its schedule) and still forecasts the ordinary cluster."""
    odd_project(fake)
    fake.answer(
        "GET", "/groups/p1/backupConfigs/c1/snapshotSchedule", {"snapshotIntervalHours": 24}
    )
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "prod.yaml").write_text("name: prod\nkeep: {last: 1}\n")

    scope = Scope(load_policies(tmp_path / "policies"), [ProjectTargets("p1")], concurrency=2)
    result = forecast_fleet(client, scope, None, now=NOW, days=3, step=DAY)

    assert sorted(c.target.cluster_id for c in result.clusters) == sorted(["c1", ODD])
    asked = {seen.path for seen in fake.seen if "c1" not in seen.path and ODD in seen.path}
    assert asked == set()
    assert "/api/public/v1.0/groups/p1/backupConfigs/c1/snapshotSchedule" in {
        seen.path for seen in fake.seen
    }


def test_the_terminal_summary_names_the_held_id_with_its_control_characters_escaped(
    tmp_path: Path,
) -> None:
    """A cluster held for an id with an escape sequence and no name of its own appears in
    the summary's table and hold line, written with \\x1b, never the raw character."""
    odd = "c\x1b]0;pwned\x07"
    builder = PlanBuilder(NOW, NOW, "https://om.test/api/public/v1.0", [])
    decided = decide(ClusterView(Target("p1", odd, odd)), [POLICY], now=NOW, lease_for=DAY)
    builder.add(described(decided, NOW))
    with (tmp_path / "plan.json").open("wb") as out:
        builder.write(out)
    plan = open_plan(tmp_path / "plan.json")

    lines = summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path)

    assert not [line for line in lines if "\x1b" in line or "\x07" in line]
    [hold] = [line for line in lines if line.startswith("  hold ")]
    assert hold.startswith("  hold c\\x1b]0;pwned\\x07: cluster id 'c\\x1b]0;pwned\\x07' cannot")
    assert any(line.startswith("  c\\x1b]0;pwned\\x07  cluster") for line in lines)
