"""Sixty simulated days against the simulator over HTTP: its clock moved a day at a time,
a daily `retention run`, backups of one cluster stopped for five days, an expiry changed
outside retention on day 20, held changes approved by alice; then `retention evidence`
of the period, and again after `retention prune` removed every run folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.evidence.model import DOCUMENT
from retention.simulator.schedule import SimSchedule
from retention.simulator.server import Simulator
from retention.simulator.store import Fleet, SimCluster, SimProject, SimSnapshot
from tests.support.client import PUBLIC_KEY
from tests.support.planfiles import decision_lines
from tests.support.simfleet import KEY, NOW, P, outside_change, running

A, B, C = "5e4e593f70dfbf1e2f6e1e0a", "5e4e593f70dfbf1e2f6e1e0b", "5e4e593f70dfbf1e2f6e1e0c"
NAMES = {A: "prod-a", B: "prod-b", C: "prod-c"}
DAYS = 60
STOP, RESUME = 10, 15  # prod-b takes no snapshot from day 10's 01:00 to day 15's
OUTSIDE_DAY, APPROVAL_DAY = 20, 30
POLICY = """\
name: gfs
match: {clusters: ['prod-*']}
keep: {daily: 7, monthly: 3}
grace: 1h
expect: {newest_within: 36h}
safety: {min_keep: 1, max_expire_fraction: 1.0}
"""


def fleet(now: datetime) -> Fleet:
    """Three clusters, each with a snapshot a day at 01:00 for the last 14 days and a
    schedule that goes on taking one a day as the clock moves."""
    project = SimProject(P, "evidence")
    for cid, name in NAMES.items():
        cluster = SimCluster(cid, P, name, replica_set_name=f"rs-{name}")
        schedule = SimSchedule(interval_hours=24, reference_hour=1, taking=True)
        schedule.taken_until = now
        for i in range(14):
            created = (now - timedelta(days=i)).replace(hour=1, minute=0, second=0)
            if created < now:
                cluster.add(SimSnapshot(f"{name}-{created:%Y%m%d}", created,
                                        expires=schedule.expires(created)))  # fmt: skip
        cluster.schedule = schedule
        project.clusters[cid] = cluster
    return Fleet({P: project})


@pytest.fixture(scope="module")
def sixty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The sixty days, once for the module: the folder, what the test saw on the way."""
    folder = tmp_path_factory.mktemp("sixty")
    with pytest.MonkeyPatch.context() as env, running(fleet) as sim:
        for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
            env.delenv(name, raising=False)
        env.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
        env.setenv("RETENTION_PRIVATE_KEY", KEY)
        yield _sixty_days(sim, folder)


def _sixty_days(sim: Simulator, folder: Path) -> dict[str, Any]:
    (folder / "policies").mkdir()
    (folder / "policies" / "gfs.yaml").write_text(POLICY)
    config = folder / "retention.yaml"
    config.write_text(
        f"api:\n  base_url: {sim.base_url}\n  concurrency: 2\n"
        f'targets:\n  - project: "{P}"\npolicies: {folder / "policies"}\n'
        f"reports:\n  dir: {folder / 'reports'}\n  keep: 400d\n"
    )
    assert sim.app is not None
    project = sim.app.fleet.projects[P]
    seen: dict[str, Any] = {"ladders": {}, "codes": []}
    for day in range(DAYS):
        if day:
            sim.clock.advance(86400)
        schedule = project.clusters[B].schedule
        assert schedule is not None
        if day == STOP:
            schedule.stops_at = sim.clock.now() - timedelta(hours=12)
        if day == RESUME:
            schedule.stops_at = None
        if day == OUTSIDE_DAY:
            snap = sorted(project.clusters[C].snapshots, key=lambda s: s.created)[-3]
            seen["outside"] = outside_change(
                sim, "expires", cluster_id=C, snapshot_id=snap.id,
                expires=sim.clock.now() + timedelta(days=90),
            )  # fmt: skip
        if day == APPROVAL_DAY:
            seen["approved"] = _approved_by_alice(sim, folder, config)
        else:
            seen["codes"].append(_main(sim, "--config", str(config), "run"))
        now = sim.clock.now()
        if (now + timedelta(days=1)).day == 1 or day == DAYS - 1:
            seen["ladders"][now.date().isoformat()] = _by_hand(project.clusters[A], now)
    seen["folder"], seen["config"], seen["last"] = folder, config, sim.clock.now()
    seen["first"] = NOW
    return seen


def _main(sim: Simulator, *args: str) -> int:
    return cli.main(list(args), clock=sim.clock.now)


def _approved_by_alice(sim: Simulator, folder: Path, config: Path) -> dict[str, Any]:
    """For one day the policy lets a run expire at most 5% of a cluster: every cluster's
    expiries are held; alice applies the plan with --approve prod-a."""
    policy = folder / "policies" / "gfs.yaml"
    policy.write_text(POLICY.replace("max_expire_fraction: 1.0", "max_expire_fraction: 0.05"))
    plan = folder / "approval-plan.json"
    planned = _main(sim, "--config", str(config), "plan", "--out", str(plan))
    decisions = [json.loads(line) for line in decision_lines(plan)]
    held = [
        d["snapshotId"]
        for d in decisions
        if d["held"] and d["body"] is not None and d["clusterName"] == "prod-a"
    ]
    applied = _main(sim, "--config", str(config), "--actor", "alice", "apply", str(plan),
                    "--approve", "prod-a")  # fmt: skip
    policy.write_text(POLICY)
    return {"planned": planned, "applied": applied, "held": held}


def _by_hand(cluster: SimCluster, now: datetime) -> dict[str, int]:
    """prod-a's ladder as the simulator lists it now: the days of its 7 newest days with
    a snapshot, the months of its 3 newest months with one (complete ones, UTC)."""
    complete = [s for s in cluster.snapshots if s.complete and s.created < now]
    days = sorted({s.created.date() for s in complete}, reverse=True)
    months = sorted({(s.created.year, s.created.month) for s in complete}, reverse=True)
    return {"daily": min(7, len(days)), "monthly": min(3, len(months))}


def evidence(sixty: dict[str, Any], *args: str) -> int:
    """`retention evidence` of the sixty days as JSON on stdout, an hour after the last
    run (the same time each call, so two documents of one ledger are equal)."""
    first, last = sixty["first"].date().isoformat(), sixty["last"].date().isoformat()
    return cli.main(
        ["--config", str(sixty["config"]), "evidence", "--from", first, "--to", last,
         "--format", "json", "--out", "-", *args],
        clock=lambda: sixty["last"] + timedelta(hours=1),
    )  # fmt: skip


def test_sixty_days_of_runs_give_their_evidence(
    sixty: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Healthy clusters cover 60 of 60 days; prod-b shows its gap with its dates; the
    outside change of day 20 is listed with its values; alice's approval is listed with
    the changes it sent; the ladder at each month's end is the one counted by hand."""
    capsys.readouterr()
    code = evidence(sixty)
    doc = json.loads(capsys.readouterr().out)
    DOCUMENT.validate_python(doc)

    assert set(sixty["codes"]) == {0}
    cov = {c["name"]: c for c in doc["coverage"]}
    assert (cov["prod-a"]["daysMet"], cov["prod-a"]["daysInScope"]) == (60, 60)
    assert (cov["prod-c"]["daysMet"], cov["prod-c"]["daysInScope"]) == (60, 60)
    first = sixty["first"].date()
    # The last snapshot before the stop is day 9's 01:00; day 11's run (12:00) finds it
    # 59 h old, past 36 h, and so on until day 15's snapshot at 01:00.
    gap_from, gap_to = first + timedelta(days=11), first + timedelta(days=14)
    assert cov["prod-b"]["longestGap"] == {
        "from": gap_from.isoformat(), "to": gap_to.isoformat(), "days": 4,
    }  # fmt: skip
    assert code == 3
    assert [(n["section"], n["cluster"]) for n in doc["notMet"]] == [("coverage", "prod-b")]

    [outside] = doc["changes"]["outside"]
    made = sixty["outside"]
    assert (outside["kind"], outside["snapshotId"]) == ("changed", made["snapshotId"])
    assert outside["after"]["expires"] == made["after"]["expires"]
    assert outside["before"]["expires"] == made["before"]["expires"]
    assert outside["alertId"] == made["alertId"]

    approved = sixty["approved"]
    assert approved["planned"] == 3
    assert approved["applied"] == 3  # prod-b's and prod-c's expiries stay held
    assert approved["held"]
    by_alice = [ch for ch in doc["changes"]["log"] if ch["approval"] == "alice"]
    assert sorted(ch["snapshotId"] for ch in by_alice) == sorted(approved["held"])
    assert {ch["actor"] for ch in by_alice} == {"alice"}
    assert "approved" in {a["actor"]: a["roles"] for a in doc["scope"]["actors"]}["alice"]

    checks = {r["name"]: r["checks"] for r in doc["retention"]}["prod-a"]
    found = {(c["at"], c["rule"]): c["had"] for c in checks}
    for at, ladder in sixty["ladders"].items():
        assert found[at, "keep.daily"] == ladder["daily"], at
        assert found[at, "keep.monthly"] == ladder["monthly"], at


def test_evidence_is_the_same_after_prune_removed_every_run_folder(
    sixty: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A run the day after the period, then `retention prune` a year on removes every run
    folder of the period (that run's, the newest, stays); the period's evidence does not
    change: it is the ledger's."""
    capsys.readouterr()
    evidence(sixty)
    before = json.loads(capsys.readouterr().out)
    config, reports = str(sixty["config"]), sixty["folder"] / "reports"
    after_period = sixty["last"] + timedelta(days=1)
    ran = cli.main(["--config", config, "run"], clock=lambda: after_period)
    pruned = cli.main(["--config", config, "prune", "--keep", "1d"],
                      clock=lambda: after_period + timedelta(days=400))  # fmt: skip
    capsys.readouterr()
    evidence(sixty)
    after = json.loads(capsys.readouterr().out)

    assert (ran, pruned) == (0, 0)
    left = sorted(d.name for d in reports.iterdir() if d.is_dir())
    assert [name[:8] for name in left] == [f"{after_period:%Y%m%d}"]
    assert after == before
