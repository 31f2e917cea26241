"""Kill a real `retention run` once the service has seen a random number of its PATCHes, and
run again: the end state converges to a clean run's, and no destructive PATCH is ever sent
twice for the same snapshot (the simulator's PATCH log is the witness)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from retention.api.client import OpsManagerClient
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY, make_client
from tests.support.waiting import wait_for

KEY = "kill-test-secret"
FLEET = """\
projects:
  - id: "5e2211c17a3e5a48f5497de3"
    name: kill-test
    clusters:
      - {name: prod-one, generate: {six_hourly_days: 60}}
      - {name: prod-two, generate: {six_hourly_days: 60}}
"""
POLICY = """\
name: gfs
keep: {last: 3, daily: 5, weekly: 2}
protect: {yearly: 1}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""


def retention(config: Path, *args: str, capture: bool = True) -> subprocess.Popen[str]:
    """Start `retention --config CONFIG ARGS` as its own process."""
    env = {**os.environ, "RETENTION_PUBLIC_KEY": PUBLIC_KEY, "RETENTION_PRIVATE_KEY": KEY}
    pipe = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-m", "retention", "--config", str(config), *args],
        env=env,
        stdout=pipe,
        stderr=pipe,
        text=True,
    )


def kill_after(sim: Simulator, proc: subprocess.Popen[str], patches: int) -> None:
    """Kill ``proc`` once the service's PATCH log holds ``patches`` entries: by that event,
    not after a sleep, so the kill lands while the run applies (or the run ended first)."""
    try:
        wait_for(
            lambda: len(sim.admin("patches")["patches"]) >= patches or proc.poll() is not None,
            "the run's PATCHes",
            timeout=120,
        )
    finally:
        proc.kill()
        proc.wait()


def end_state(api: OpsManagerClient, sim: Simulator, now: datetime) -> dict[str, str]:
    """Each snapshot as protected, kept (long expiry), expiring (within a day) or awaiting."""
    out: dict[str, str] = {}
    for project in sim.admin("fleet")["projects"]:
        for cluster in project["clusters"]:
            for s in api.list_snapshots(project["id"], cluster["id"]):
                if s.do_not_delete:
                    out[s.id] = "protected"
                elif s.expires is None:
                    out[s.id] = "no-expiry"
                elif s.expires <= now:
                    out[s.id] = "awaiting-deletion"
                else:
                    within_grace = s.expires <= now + timedelta(hours=25)
                    out[s.id] = "expiring" if within_grace else "kept"
    return out


def destructive_patches(log: list[dict[str, Any]]) -> Counter[str]:
    """How many accepted PATCHes brought each snapshot's expiry within a day."""
    counts: Counter[str] = Counter()
    for entry in log:
        # A run killed mid-request leaves a PATCH without a body, which the API refuses.
        if entry["status"] != 200:
            continue
        expires = entry["body"].get("expires")
        if not expires:
            continue
        at = datetime.fromisoformat(entry["at"].replace("Z", "+00:00"))
        if datetime.fromisoformat(expires.replace("Z", "+00:00")) <= at + timedelta(hours=25):
            counts[entry["snapshotId"]] += 1
    return counts


def test_killed_runs_converge_and_never_repeat_a_destructive_patch(tmp_path: Path) -> None:
    """Four runs killed mid-apply after a random number of PATCHes, then one to the end:
    converged, no repeats."""
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "gfs.yaml").write_text(POLICY)
    now = datetime.now(UTC).replace(microsecond=0)
    config = SimulatorConfig(
        fleet=str(tmp_path / "fleet.yaml"), now=now, frozen=True, latency_ms=4,
        public_key=PUBLIC_KEY, private_key=KEY,
    )  # fmt: skip
    rng = random.Random(20261121)
    with Simulator(config) as sim, make_client(sim.base_url, private_key=KEY) as api:
        project = sim.admin("fleet")["projects"][0]["id"]
        config_file = tmp_path / "retention.yaml"
        config_file.write_text(
            f"api:\n  base_url: {sim.base_url}\n  concurrency: 2\n"
            f'targets:\n  - project: "{project}"\npolicies: policies/\n'
        )
        killed_after_patches = []
        for _ in range(4):
            before = len(sim.admin("patches")["patches"])
            proc = retention(config_file, "run", "--quiet", capture=False)
            kill_after(sim, proc, before + rng.randint(1, 25))
            killed_after_patches.append(len(sim.admin("patches")["patches"]) - before)
        final = retention(config_file, "run", "--quiet")
        _out, err = final.communicate(timeout=300)
        assert final.returncode == 0, err
        converged = end_state(api, sim, now)
        log = sim.admin("patches")["patches"]
        replan = retention(config_file, "plan", "--out", str(tmp_path / "check.json"))
        replan.communicate(timeout=300)
        leftover = list(open_plan(tmp_path / "check.json").read_list("changes"))

        sim.admin("reset", {})
        clean = retention(config_file, "run", "--quiet")
        clean.communicate(timeout=300)
        reference = end_state(api, sim, now)

    assert any(n > 0 for n in killed_after_patches), "no kill landed mid-apply"
    assert leftover == []
    assert converged == reference
    repeated = {s: n for s, n in destructive_patches(log).items() if n > 1}
    assert repeated == {}
    assert sum(destructive_patches(log).values()) > 100
