"""End to end against the simulator: a fleet with one cluster whose id a plan cannot carry
still plans and applies every other cluster (exit 3, the odd one named in the summary,
the warnings and report.md), and unusual ids are carried, percent-encoded and PATCHed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from retention import cli
from retention.runfolder.planread import open_plan
from retention.runfolder.schema import plan_json_schema
from retention.simulator.server import Simulator, SimulatorConfig
from retention.simulator.store import Fleet, SimCluster, SimProject, SimSnapshot
from tests.support.client import credentials
from tests.support.planfiles import decision_lines
from tests.support.simfleet import KEY, NOW

P = "5e2211c17a3e5a48f5497d10"
ODD = "5e4e/../../../alerts"
POLICY = """\
name: prod
keep: {last: 1}
grace: 24h
safety: {min_keep: 1, max_expire_fraction: 1.0, hold_on_alerts: []}
"""


def cluster(cluster_id: str, name: str, snapshot_ids: list[str], now: datetime) -> SimCluster:
    """A replica set whose snapshots are taken a day apart, newest first, each expiring in
    60 days: the newest is kept, the others are shortened."""
    found = SimCluster(cluster_id, P, name, replica_set_name=name)
    for age, sid in enumerate(snapshot_ids, start=1):
        created = now - timedelta(days=age)
        found.add(SimSnapshot(sid, created, expires=now + timedelta(days=60)))
    return found


@contextmanager
def serving(clusters: list[SimCluster], now: datetime) -> Iterator[Simulator]:
    """A simulator of one project holding ``clusters``, its clock frozen at ``now``."""

    def fleet(_now: datetime) -> Fleet:
        project = SimProject(P, "odd-ids")
        project.clusters = {c.id: c for c in clusters}
        return Fleet({P: project})

    config = SimulatorConfig(
        public_key=credentials().public_key, private_key=KEY, now=now, frozen=True
    )
    with Simulator(config, fleet_factory=fleet) as sim:
        yield sim


def configure(folder: Path, base_url: str) -> None:
    """retention.yaml for the simulator's project, and the one policy."""
    (folder / "policies").mkdir()
    (folder / "policies" / "prod.yaml").write_text(POLICY)
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\npolicies: policies/\n'
    )


def patched(sim: Simulator) -> set[tuple[str, str]]:
    """(cluster id, snapshot id) of every PATCH the simulator answered with 200."""
    log: list[dict[str, Any]] = sim.admin("patches")["patches"]
    return {(p["clusterId"], p["snapshotId"]) for p in log if p["status"] == 200}


def only_run_folder(folder: Path) -> Path:
    """The one run folder under reports/."""
    [run_dir] = [p for p in (folder / "reports").iterdir() if p.is_dir()]
    return run_dir


def test_a_cluster_whose_id_cannot_be_carried_leaves_the_rest_of_the_fleet_applied(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """retention run plans and applies both ordinary clusters, never touches the odd one,
    exits 3, and names the odd id in its summary's hold and warning lines, report.md and
    plan.json, which validates against the schema. A cluster with one odd snapshot id is
    walked, and held instead of refused: nothing of it is shortened."""
    now = NOW
    fleet = [
        cluster("5e4e593f70dfbf1e2f6e1d50", "prod-a", ["a0", "a1", "a2"], now),
        cluster(ODD, "alerts-prod", ["o0", "o1"], now),
        cluster("5e4e593f70dfbf1e2f6e1d52", "prod-c", ["c0", "c1"], now),
        cluster("5e4e593f70dfbf1e2f6e1d53", "prod-d", ["d0", "d/1", "d2"], now),
    ]
    with serving(fleet, now) as sim:
        configure(folder, sim.base_url)

        code = cli.main(["run"], clock=sim.clock.now)
        out = capsys.readouterr().out
        sent = patched(sim)
        counters = sim.admin("counters")

    assert code == 3
    assert sent == {
        ("5e4e593f70dfbf1e2f6e1d50", "a1"),
        ("5e4e593f70dfbf1e2f6e1d50", "a2"),
        ("5e4e593f70dfbf1e2f6e1d52", "c1"),
    }
    walks = counters["byEndpoint"]["GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots"]
    assert walks == 3  # one walk for each cluster but the odd one
    held_line = f"  hold alerts-prod: cluster id {ODD!r} cannot be carried by a plan (it holds '/'"
    assert any(line.startswith(held_line) for line in out.splitlines())
    assert f"  warning project {P}: cluster id {ODD!r} cannot be carried" in out
    run_dir = only_run_folder(folder)
    plan = json.loads((run_dir / "plan.json").read_text())
    jsonschema.validate(plan, plan_json_schema())
    held = {c["clusterId"]: c["holds"] for c in plan["clusters"]}
    assert [h["kind"] for h in held[ODD]] == ["id"]
    assert held["5e4e593f70dfbf1e2f6e1d50"] == held["5e4e593f70dfbf1e2f6e1d52"] == []
    assert [h["kind"] for h in held["5e4e593f70dfbf1e2f6e1d53"]] == ["id"]
    held_changes = open_plan(run_dir / "plan.json").read_list("held")
    assert [(c["snapshotId"], c["action"]) for c in held_changes] == [("d2", "shorten")]
    decided = [json.loads(line) for line in decision_lines(run_dir / "plan.json")]
    [odd_snapshot] = [d for d in decided if d["snapshotId"] == "d/1"]
    assert (odd_snapshot["action"], odd_snapshot["body"]) == ("none", None)
    assert [w for w in plan["warnings"] if repr(ODD) in w] == [
        f"project {P}: cluster id {ODD!r} cannot be carried by a plan (it holds '/', which "
        "servers and proxies may decode from its percent-encoding and take as a path "
        "separator, or refuse): not walked, nothing of it is changed; held (named "
        "'alerts-prod')"
    ]
    markdown = (run_dir / "report.md").read_text()
    assert (
        f"**alerts-prod**, 0 held changes: id: cluster id '{ODD}' cannot be carried by a plan"
        in markdown
    )
    assert "exit 3" in markdown


def test_unusual_ids_are_carried_encoded_and_patched_through_plan_and_apply(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cluster and snapshot ids with spaces, ':', '@', '%', '+' and unicode are planned,
    accepted by apply from the saved plan, and reach the simulator each as its own path
    segment: every PATCH names exactly the ids the fleet has."""
    now = NOW
    fleet = [
        cluster("a b", "spaced", ["keep me", "ü", "50%"], now),
        cluster("x:y@z", "punctuated", ["new", "%41b", "a+b=c"], now),
    ]
    with serving(fleet, now) as sim:
        configure(folder, sim.base_url)

        planned = cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now)
        plan = json.loads((folder / "plan.json").read_text())
        applied = cli.main(["apply", "plan.json"], clock=sim.clock.now)
        capsys.readouterr()
        sent = patched(sim)

    assert (planned, applied) == (0, 0)
    jsonschema.validate(plan, plan_json_schema())
    changes = open_plan(folder / "plan.json").read_list("changes")
    assert sorted((c["clusterId"], c["snapshotId"]) for c in changes) == sorted(sent)
    assert sent == {("a b", "ü"), ("a b", "50%"), ("x:y@z", "%41b"), ("x:y@z", "a+b=c")}
    assert [c["holds"] for c in plan["clusters"]] == [[], []]
    assert plan["warnings"] == []
