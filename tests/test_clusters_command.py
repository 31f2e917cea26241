"""`retention clusters` against the simulator, as a user writing their first `match:` runs
it: every cluster and config server discovery finds, its kind, typeName, snapshots, newest
snapshot and the policies that match it (or unmanaged), as a table, as JSON, and from the
library; and the simulator's start banner names its clusters."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from retention import ClustersRequest, Retention, cli
from retention.simulator.server import Simulator
from tests.support.simfleet import BIG, CFG, SHARDED, SMALL, P

PROD = "name: prod\nmatch: {clusters: ['prod-big', 'prod-sharded'], kinds: [cluster]}\n"
PROD += "keep: {last: 3}\n"


def write_config(folder: Path, base_url: str, policy: str = PROD) -> Path:
    """retention.yaml for the small fleet's project, and one policy file."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text(policy)
    path = folder / "retention.yaml"
    path.write_text(f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\n')
    return path


def test_the_table_lists_each_target_with_its_snapshots_and_policies(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line per cluster and config server: name, kind, typeName (and shards), id, its
    snapshot count, its newest complete snapshot, and the matching policy or unmanaged."""
    write_config(folder, sim.base_url)

    code = cli.main(["clusters"], clock=sim.clock.now)
    out = capsys.readouterr().out

    rows = {line.split()[0]: re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[2:6]}
    assert code == 0
    assert out.startswith(f"project {P} (test-project): 3 clusters, 1 legacy config server\n")
    assert out.splitlines()[1].split() == [
        "NAME", "KIND", "TYPE", "ID", "SNAPSHOTS", "NEWEST", "(UTC)", "POLICIES"
    ]  # fmt: skip
    assert rows["prod-big"] == [
        "prod-big", "cluster", "REPLICA_SET", BIG, "1234", "2026-11-21T06:00:00Z", "prod"
    ]  # fmt: skip
    # "running" is not complete: the newest complete snapshot is 6 hours old.
    assert rows["prod-small"] == [
        "prod-small", "cluster", "REPLICA_SET", SMALL, "5", "2026-11-21T06:00:00Z", "unmanaged"
    ]  # fmt: skip
    assert rows["prod-sharded"][:5] == [
        "prod-sharded", "cluster", "SHARDED_REPLICA_SET, 1 shard", SHARDED, "2"
    ]  # fmt: skip
    assert rows["prod-sharded"][-1] == "prod"
    assert rows["cfg0.legacy.example.net"][:4] == [
        "cfg0.legacy.example.net", "config server", "-", CFG
    ]  # fmt: skip
    assert rows["cfg0.legacy.example.net"][-1] == "unmanaged"
    assert (
        "3 clusters and 1 legacy config server in 1 project, 1244 snapshots; "
        "2 managed by a policy, 2 unmanaged."
    ) in out


def test_the_json_names_every_target_and_an_empty_policies_list_is_unmanaged(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json: the projects with their counts, and each target with projectId,
    clusterId, name, kind, typeName, snapshots, newest and policies ([] when unmanaged)."""
    write_config(folder, sim.base_url)

    code = cli.main(["clusters", "--format", "json"], clock=sim.clock.now)
    doc = json.loads(capsys.readouterr().out)

    by_name = {c["name"]: c for c in doc["clusters"]}
    assert code == doc["exitCode"] == 0
    assert doc["command"] == "clusters"
    assert doc["projects"] == [
        {"projectId": P, "name": "test-project", "clusters": 3, "configServers": 1}
    ]
    assert set(by_name) == {"prod-big", "prod-small", "prod-sharded", "cfg0.legacy.example.net"}
    big = by_name["prod-big"]
    assert (big["projectId"], big["clusterId"], big["kind"], big["typeName"]) == (
        P, BIG, "cluster", "REPLICA_SET"
    )  # fmt: skip
    assert (big["snapshots"], big["newest"], big["policies"]) == (
        1234, "2026-11-21T06:00:00Z", ["prod"]
    )  # fmt: skip
    assert by_name["prod-small"]["policies"] == []
    assert by_name["cfg0.legacy.example.net"]["kind"] == "config-server"
    # The clusters list has one shard row of prod-sharded: discovery's members are the rows.
    assert [m["shardName"] for m in by_name["prod-sharded"]["members"]] == ["sh0"]
    assert doc["unusedPolicies"] == []
    assert doc["warnings"] == []
    assert doc["errors"] == []


def test_a_glob_that_misses_is_a_warning_naming_the_closest_clusters(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy whose glob is misspelt matches nothing: the listing says so, and names the
    glob mended to the real names it was meant for."""
    policy = "name: prod\nmatch: {clusters: ['prdo-*']}\nkeep: {last: 3}\n"
    write_config(folder, sim.base_url, policy)

    code = cli.main(["clusters", "--format", "json"], clock=sim.clock.now)
    doc = json.loads(capsys.readouterr().out)

    assert code == 0
    assert all(c["policies"] == [] for c in doc["clusters"])
    assert doc["unusedPolicies"] == ["prod"]
    [warning] = doc["warnings"]
    assert warning.endswith(
        "p.yaml:2: match.clusters[0]: 'prdo-*' matches none of the 4 clusters and config "
        "servers discovery found; did you mean 'prod-*' (prod-big, prod-sharded, prod-small)?"
    )


def test_policies_that_do_not_load_still_list_the_clusters(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The listing is what a person needs to write their first policy: broken policies do
    not stop it; the clusters are listed without policies, and it says why."""
    write_config(folder, sim.base_url, "name: p\nkeep: {dayly: 3}\n")

    code = cli.main(["clusters", "--format", "json"], clock=sim.clock.now)
    doc = json.loads(capsys.readouterr().out)

    assert code == 0
    assert len(doc["clusters"]) == 4
    assert all(c["policies"] is None for c in doc["clusters"])
    assert doc["policiesNotMatched"] == (
        "the policies do not load (1 problem; retention validate lists them)"
    )


def test_the_library_lists_the_clusters_with_its_request(sim: Simulator, folder: Path) -> None:
    """Retention.clusters takes a ClustersRequest and returns the listing, whose document
    and lines are those the command prints; it sends no change."""
    config = write_config(folder, sim.base_url)
    retention = Retention(config, clock=sim.clock.now)

    ended = retention.clusters(ClustersRequest())

    listed = ended.result
    assert ended.code == 0
    assert [(e.target.name, e.snapshots) for e in listed.listed] == [
        ("prod-big", 1234), ("prod-sharded", 2), ("prod-small", 5), ("cfg0.legacy.example.net", 3)
    ]  # fmt: skip
    assert listed.document()["clusters"][0]["name"] == "prod-big"
    assert any(line.startswith("  prod-big ") for line in listed.lines())
    assert sim.admin("patches") == {"patches": []}


def test_the_simulator_banner_names_its_clusters() -> None:
    """The start banner names each project's clusters and legacy config servers, so a user
    can write `match: clusters` without asking the API."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "retention", "simulator", "serve", "--fleet", "demo", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        text = "".join(iter(proc.stdout.readline, "Ctrl-C stops it.\n"))
    finally:
        proc.terminate()
        proc.communicate(timeout=30)

    assert "(production): 4 clusters (prod-billing, prod-catalog, prod-orders, prod-users)" in text
    assert (
        "(analytics): 3 clusters (analytics-clickstream, analytics-events, analytics-warehouse), "
        "3 legacy config servers (cfg0.legacy.example.net, cfg1.legacy.example.net, "
        "cfg2.legacy.example.net)"
    ) in text
