"""Thirty days of a daily `retention run` with ``reports.keep: 7d`` against the simulator,
its clock moved a day at a time: the reports folder keeps the last seven days of run
folders and those still inside their undo window, nothing else, and `retention undo` of the
newest still restores what it shortened."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import orjson

from retention import cli
from retention.runfolder.folder import RunFolder, made_at
from retention.runfolder.journal import read_apply_journal
from retention.simulator.schedule import SimSchedule
from retention.simulator.server import Simulator
from retention.simulator.store import Fleet, SimCluster, SimProject, SimSnapshot
from tests.support.simfleet import NOW, running

START = NOW
P = "5e2211c17a3e5a48f5497de3"
C = "5e4e593f70dfbf1e2f6e1d30"
DAYS = 30
# Unkept snapshots expire 9 days after the run that shortens them: longer than keep (7d),
# so the folders of the two days before the keep duration are still undoable and stay.
POLICY = """\
name: daily
match: {clusters: [prod]}
keep: {last: 3}
grace: 9d
safety: {max_expire_fraction: 1.0, hold_on_alerts: []}
"""


def fleet(now: datetime) -> Fleet:
    """One replica set with a daily schedule (03:00 UTC, each snapshot kept 60 days by the
    service) and a week of snapshots."""
    project = SimProject(P, "prune-project")
    cluster = SimCluster(C, P, "prod", replica_set_name="rs-prod")
    cluster.schedule = SimSchedule(
        interval_hours=24, retention_days=60, daily_days=60, reference_hour=3, taking=True
    )
    for day in range(7):
        created = now - timedelta(days=day, hours=1)
        cluster.add(SimSnapshot(f"old{day}", created, expires=created + timedelta(days=60)))
    project.clusters[C] = cluster
    return Fleet({P: project})


def write_config(folder: Path, sim: Simulator) -> Path:
    """retention.yaml with reports.keep: 7d and the daily policy."""
    (folder / "policies").mkdir()
    (folder / "policies" / "daily.yaml").write_text(POLICY)
    config = folder / "retention.yaml"
    config.write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\n'
        'policies: policies/\nschedule: "0 3 * * *"\n'
        "reports:\n  dir: reports/\n  formats: [markdown]\n  keep: 7d\n"
    )
    return config


def undo_until(folder: Path) -> datetime | None:
    """The latest expiry the folder's journal wrote for a destructive change."""
    lines, bad = read_apply_journal(RunFolder(folder).results)
    assert bad == 0
    written = [
        line["body"]["expires"]
        for line in lines
        if "intent" not in line and line["destructive"] and line["outcome"] == "applied"
        and line["body"] is not None and "expires" in line["body"]
    ]  # fmt: skip
    return max(written, default=None)


def test_thirty_daily_runs_keep_seven_days_and_the_undoable_folders(folder: Path) -> None:
    """After 30 daily runs with reports.keep: 7d, exactly the folders younger than 7 days
    or with an expiry still ahead in their journal are left, and undo of the newest runs."""
    with running(fleet) as sim:
        config = write_config(folder, sim)
        made: list[str] = []
        for _day in range(DAYS):
            sim.admin("clock", {"advance": 86400})
            before = {p.name for p in (folder / "reports").glob("2*")}
            code = cli.main(["--config", str(config), "run"], clock=sim.clock.now)
            assert code == 0
            [new] = {p.name for p in (folder / "reports").glob("2*")} - before
            made.append(new)
        now = sim.clock.now()
        left = sorted(p.name for p in (folder / "reports").glob("2*"))

        young = {n for n in made if made_at(n) > now - timedelta(days=7)}  # type: ignore[operator]
        undoable = {
            n for n in left if (until := undo_until(folder / "reports" / n)) and until > now
        }
        assert set(left) == young | undoable
        assert len(young) == 7
        # Two folders older than 7 days stay only for their undo window (grace 9d); the
        # oldest 21 are gone.
        assert sorted(undoable - young) == made[-9:-7]
        assert set(made[:-9]).isdisjoint(left)

        undone = cli.main(
            ["--config", str(config), "undo", f"reports/{made[-1]}"], clock=sim.clock.now
        )
        assert undone == 0
        [undo_dir] = [p for p in (folder / "reports").glob("2*") if (p / "undo.json").is_file()]
        document = orjson.loads((undo_dir / "undo.json").read_bytes())
        assert [item["outcome"] for item in document["items"]] == ["restored"]
