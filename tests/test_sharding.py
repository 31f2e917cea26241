"""Sharding: a stable split by cluster id; four shard processes against one simulator plan
exactly what one unsharded process plans, with no cluster in two shards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retention.errors import UsageError
from retention.ops.sharding import Shard, choose_shard
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY
from tests.support.simfleet import NOW

KEY = "shard-secret"


def test_every_cluster_id_has_exactly_one_shard() -> None:
    """Each id belongs to one and only one of the shards, the same one every time."""
    ids = [f"{i:024x}" for i in range(500)]
    shards = [Shard(i, 4) for i in range(4)]

    owners = [[s.index for s in shards if s.owns(cid)] for cid in ids]

    assert all(len(o) == 1 for o in owners)
    assert owners == [[s.index for s in shards if s.owns(cid)] for cid in ids]
    counts = [sum(o == [i] for o in owners) for i in range(4)]
    assert min(counts) > 90  # roughly even: 125 each expected


def test_the_hash_is_stable_across_processes() -> None:
    """The split does not depend on Python's salted hash(): another process agrees."""
    code = (
        "from retention.ops.sharding import Shard; "
        "print([Shard(0, 3).owns(f'id{i}') for i in range(20)])"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert other.stdout.strip() == str([Shard(0, 3).owns(f"id{i}") for i in range(20)])


@pytest.mark.parametrize(
    ("shard", "count", "env", "expected"),
    [("1/4", None, None, Shard(1, 4)), (None, 4, "3", Shard(3, 4)), (None, None, "2", None)],
)
def test_choose_shard(
    shard: str | None, count: int | None, env: str | None, expected: Shard | None
) -> None:
    """--shard wins; --shard-count takes JOB_COMPLETION_INDEX; neither means the whole fleet."""
    assert choose_shard(shard, count, env) == expected


@pytest.mark.parametrize(
    ("shard", "count", "env", "message"),
    [
        ("4/4", None, None, "index must be 0 to count-1"),
        ("two/4", None, None, "use INDEX/COUNT"),
        (None, 4, None, "needs JOB_COMPLETION_INDEX"),
        ("0/2", 2, "0", "not both"),
    ],
)
def test_bad_shard_options_are_usage_errors(
    shard: str | None, count: int | None, env: str | None, message: str
) -> None:
    """Impossible shard settings are exit-2 usage errors with a hint."""
    with pytest.raises(UsageError, match=message):
        choose_shard(shard, count, env)


def plan_process(config: Path, out: Path, *args: str) -> subprocess.Popen[str]:
    """`retention plan` at a fixed time as its own process."""
    env = {**os.environ, "RETENTION_PUBLIC_KEY": PUBLIC_KEY, "RETENTION_PRIVATE_KEY": KEY}
    return subprocess.Popen(
        [sys.executable, "-m", "retention", "--config", str(config), "plan", "--out", str(out),
         "--at", "2026-11-21T12:00:00Z", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_four_shards_plan_what_one_process_plans(tmp_path: Path) -> None:
    """The union of four shards' plans equals the unsharded plan; no cluster is in two."""
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text(
        "name: p\nkeep: {last: 2, daily: 3}\nsafety: {max_expire_fraction: 1.0}\n"
    )
    config = SimulatorConfig(
        fleet="bench:40", now=NOW, frozen=True, public_key=PUBLIC_KEY, private_key=KEY
    )
    with Simulator(config) as sim:
        projects = [p["id"] for p in sim.admin("fleet")["projects"]]
        targets = "".join(f'  - project: "{p}"\n' for p in projects)
        path = tmp_path / "retention.yaml"
        path.write_text(
            f"api:\n  base_url: {sim.base_url}\ntargets:\n{targets}policies: policies/\n"
        )
        runs = [
            plan_process(path, tmp_path / f"shard{i}.json", "--shard", f"{i}/4") for i in range(4)
        ]
        runs.append(plan_process(path, tmp_path / "all.json"))
        for proc in runs:
            _out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err

    def load(name: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((tmp_path / name).read_text())
        return document

    def changes(name: str) -> list[str]:
        listed = open_plan(tmp_path / name).read_list("changes")
        return sorted(json.dumps(c, sort_keys=True, default=str) for c in listed)

    shards = [load(f"shard{i}.json") for i in range(4)]
    whole = load("all.json")
    shard_clusters = [{c["clusterId"] for c in s["clusters"]} for s in shards]
    assert sum(len(c) for c in shard_clusters) == len(set().union(*shard_clusters)) == 40
    assert set().union(*shard_clusters) == {c["clusterId"] for c in whole["clusters"]}
    shard_changes = [c for i in range(4) for c in changes(f"shard{i}.json")]
    assert sorted(shard_changes) == changes("all.json")
    assert len(changes("all.json")) > 1000
