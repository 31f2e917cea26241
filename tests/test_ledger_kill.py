"""The ledger under real stops and real concurrency: a `retention run` killed with SIGKILL
mid-apply, a process killed inside one of the ledger's write transactions, and four shards
planning at once into one database. The chain verifies after each; a killed run is recorded
as unfinished, never half a batch; what a killed apply sent is never taken for a change
made outside retention."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from retention.config.ledgerplace import ENV_LEDGER_PASSWORD, ENV_LEDGER_URL, LedgerPlace
from retention.ledger.chain import verify
from retention.ledger.database import open_ledger
from retention.ledger.tables import events, runs, snapshots
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY
from tests.support.ledgers import ledger_place_for, one_run, snap
from tests.support.waiting import wait_for

KEY = "ledger-kill-secret"
FLEET = """\
projects:
  - id: "5e2211c17a3e5a48f5497de3"
    name: ledger-kill
    clusters:
      - {name: prod-one, generate: {six_hourly_days: 60}}
      - {name: prod-two, generate: {six_hourly_days: 60}}
      - {name: prod-three, generate: {six_hourly_days: 10}}
      - {name: prod-four, generate: {six_hourly_days: 10}}
"""
POLICY = """\
name: gfs
keep: {last: 3, daily: 5, weekly: 2}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> LedgerPlace:
    """The ledger the processes share: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return LedgerPlace(f"sqlite:///{tmp_path / 'reports' / 'ledger.db'}")
    return ledger_place_for(request, "postgresql")


def setup(folder: Path, sim: Simulator) -> Path:
    """retention.yaml and the policy in ``folder``; the configuration's path."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "gfs.yaml").write_text(POLICY)
    project = sim.admin("fleet")["projects"][0]["id"]
    config = folder / "retention.yaml"
    config.write_text(
        f"api:\n  base_url: {sim.base_url}\n  concurrency: 2\n"
        f'targets:\n  - project: "{project}"\npolicies: policies/\nreports:\n  dir: reports/\n'
    )
    return config


def start(
    config: Path, place: LedgerPlace, *args: str, capture: bool = True
) -> subprocess.Popen[str]:
    """`retention --config CONFIG ARGS` as its own process, its ledger from the environment
    (its output captured, or, for a process the test kills, dropped)."""
    env = {
        **os.environ,
        "RETENTION_PUBLIC_KEY": PUBLIC_KEY,
        "RETENTION_PRIVATE_KEY": KEY,
        ENV_LEDGER_URL: place.url,
        ENV_LEDGER_PASSWORD: place.password or "",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "retention", "--config", str(config), *args],
        env=env,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
        text=True,
    )


def finished(proc: subprocess.Popen[str]) -> tuple[int, Any]:
    """The exit code and the --format json document of a process that ends."""
    out, err = proc.communicate(timeout=300)
    try:
        return proc.returncode, json.loads(out)
    except json.JSONDecodeError:
        raise AssertionError(f"exit {proc.returncode}, not JSON: {out!r} {err!r}") from None


def simulator(folder: Path, latency_ms: int = 0) -> Simulator:
    """The four-cluster fleet, its clock frozen at the wall clock's now: the retention
    processes these tests start tell the time by the wall clock, and so must the service
    they plan against."""
    (folder / "fleet.yaml").write_text(FLEET)
    return Simulator(
        SimulatorConfig(
            fleet=str(folder / "fleet.yaml"),
            now=datetime.now(UTC).replace(microsecond=0),
            frozen=True,
            latency_ms=latency_ms,
            public_key=PUBLIC_KEY,
            private_key=KEY,
        )
    )


def test_a_run_killed_mid_apply_is_unfinished_and_what_it_sent_is_ours(
    place: LedgerPlace, tmp_path: Path
) -> None:
    """SIGKILL while a run's PATCHes go out: the chain verifies, the run is listed as
    unfinished, and the next plan takes every change the killed run sent for its own."""
    with simulator(tmp_path, latency_ms=20) as sim:
        config = setup(tmp_path, sim)
        assert finished(start(config, place, "plan", "--format", "json"))[0] == 0
        proc = start(config, place, "run", "--quiet", capture=False)
        try:
            wait_for(
                lambda: len(sim.admin("patches")["patches"]) >= 5 or proc.poll() is not None,
                "the run's PATCHes",
                timeout=120,
            )
        finally:
            proc.kill()
            proc.wait()
        sent = len(sim.admin("patches")["patches"])
        code, verified = finished(start(config, place, "ledger", "verify", "--format", "json"))
        _, planned = finished(start(config, place, "plan", "--format", "json"))

    assert sent >= 5
    assert code == 0
    assert verified["verified"] is True
    assert len(verified["unfinished"]) == 1
    assert verified["records"] == 1  # the plan before the kill; the run never finished
    assert planned["plan"]["outsideChanges"] == []


KILLER = """\
import os, signal, sys
from datetime import UTC, datetime, timedelta
import retention.ledger.rows as rows
from retention.config.ledgerplace import LedgerPlace
from retention.core.model import SnapshotView, Target
from retention.core.outside import cluster_drift
from retention.ledger.database import open_ledger
from retention.ledger.recorder import RunRecord, RunStart

now = datetime(2026, 11, 20, 3, tzinfo=UTC)
ledger = open_ledger(LedgerPlace(sys.argv[1], os.environ.get("LEDGER_PASSWORD") or None))
record = RunRecord.begin(ledger, RunStart("killed", "plan", "", now, "tester"))

def batch(n):
    target = Target("p1", f"c{n}", f"cluster-{n}")
    walked = [SnapshotView(f"c{n}-s{i}", now - timedelta(hours=i), True, False,
                           now + timedelta(days=9)) for i in range(50)]
    record.observe(target, cluster_drift(target, {}, walked, now), {"counts": {}}, now)
    record.flush()

batch(1)
written = rows.execute_many

def die(conn, name, statement, params):
    written(conn, name, statement, params)
    if name == "events":
        os.kill(os.getpid(), signal.SIGKILL)  # inside the transaction, its rows sent

rows.execute_many = die
batch(2)
"""


def test_a_process_killed_inside_a_ledger_write_leaves_no_half_batch(
    place: LedgerPlace, tmp_path: Path
) -> None:
    """SIGKILL inside a batch's transaction, after its snapshot rows were sent and while
    its events go in: the batch is not in the ledger at all, the one before it is whole,
    the run is unfinished and the chain of the finished runs verifies."""
    with open_ledger(place) as ledger:
        one_run(ledger, 1, [snap(1)])  # a finished run before it
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    env = {**os.environ, "LEDGER_PASSWORD": place.password or ""}
    killed = subprocess.run(
        [sys.executable, str(script), place.url],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )

    assert killed.returncode == -9, killed.stderr
    with open_ledger(place) as ledger, ledger.reading("test") as conn:
        report = verify(conn)
        seq = conn.execute(select(runs.c.seq).where(runs.c.run_id == "killed")).scalar_one()
        written = (
            conn.execute(select(events.c.snapshot_id).where(events.c.run_seq == seq))
            .scalars()
            .all()
        )
        known = conn.execute(
            select(func.count()).select_from(snapshots).where(snapshots.c.cluster_id == "c2")
        ).scalar_one()
    assert report.unfinished == ["killed (the whole fleet)"]
    assert report.shards[""][0] == 1
    assert sorted(written) == sorted(f"c1-s{i}" for i in range(50))
    assert known == 0


def test_four_shards_plan_at_once_into_one_ledger(place: LedgerPlace, tmp_path: Path) -> None:
    """Four shard processes plan side by side into one ledger (on PostgreSQL twice, the
    second time each appending to its chain under the head's row lock; SQLite's writers
    take turns whatever the round): each shard's chain verifies, and every snapshot of the
    fleet is known once."""
    rounds = 1 if place.url.startswith("sqlite") else 2
    with simulator(tmp_path, latency_ms=5) as sim:
        config = setup(tmp_path, sim)
        fleet = sum(c["snapshots"] for p in sim.admin("fleet")["projects"] for c in p["clusters"])
        for _ in range(rounds):
            procs = [
                start(config, place, "plan", "--shard", f"{i}/4", "--format", "json")
                for i in range(4)
            ]
            codes = [finished(p)[0] for p in procs]
            assert codes == [0, 0, 0, 0]
        code, verified = finished(start(config, place, "ledger", "verify", "--format", "json"))

    assert code == 0
    assert {s["shard"]: s["records"] for s in verified["shards"]} == {
        f"{i}/4": rounds for i in range(4)
    }
    assert verified["unfinished"] == []
    with open_ledger(place) as ledger, ledger.reading("test") as conn:
        known = conn.execute(select(func.count()).select_from(snapshots)).scalar_one()
    assert known == fleet
