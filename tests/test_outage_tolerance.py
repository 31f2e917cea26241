"""A correlated outage against the simulator: a daily `retention run`, then five days with
no run and no new snapshot (the service's backup down with the job), then the service's
reaper catches up. With the default lease_minimum (7 days) every snapshot a policy kept
before the outage is still there, whatever kept it (`last`, `within`, a protected id); with
`lease_minimum: 1d` the schedule's lease alone (about two days) lets the reaper take the
restore points `last` and `within` kept."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from retention import cli
from retention.core.snapshot import SnapshotPatch
from retention.runfolder.folder import RunFolder, decisions_path
from retention.runfolder.planread import read_decisions
from retention.simulator.schedule import SimSchedule
from retention.simulator.server import Simulator
from retention.simulator.store import Fleet, SimCluster, SimProject, SimSnapshot
from tests.support.simfleet import client_for, running

P = "5e2211c17a3e5a48f5497de3"
CLUSTERS = {"last": "c0000000000000000000e001", "within": "c0000000000000000000e002"}
CLUSTERS["ids"] = "c0000000000000000000e003"
PROTECTED = "ids-day1"  # the snapshot the ids policy protects by id (no hold record)
POLICIES = {
    "last": "keep: {last: 2}",
    "within": "keep: {within: 3d}",
    "ids": f"keep: {{last: 1}}\nprotect: {{ids: [{PROTECTED}]}}",
}
OUTAGE = timedelta(days=5)


def fleet_of(clusters: dict[str, SimCluster]) -> Callable[[datetime], Fleet]:
    """A fleet factory: three replica sets, each snapshotted daily at 03:00 UTC by the
    service, which gives each snapshot two days (its schedule's retention), and a week of
    history; ``clusters`` is filled with them so the test can stop their schedules."""

    def fleet(now: datetime) -> Fleet:
        project = SimProject(P, "outage-project")
        for name, cid in CLUSTERS.items():
            cluster = SimCluster(cid, P, name, replica_set_name=f"rs-{name}")
            cluster.schedule = SimSchedule(
                interval_hours=24, retention_days=2, daily_days=2, weekly_weeks=0,
                monthly_months=0, reference_hour=3, taking=True,
            )  # fmt: skip
            last_tick = now.replace(hour=3, minute=0, second=0, microsecond=0)
            for day in range(7):
                created = last_tick - timedelta(days=day)
                # The service has groomed what its schedule let expire; the rest stays.
                if created + timedelta(days=2) > now:
                    snapshot_id = f"{name}-day{day}"
                    cluster.add(
                        SimSnapshot(snapshot_id, created, expires=created + timedelta(days=2))
                    )
            clusters[name] = cluster
            project.clusters[cid] = cluster
        return Fleet({P: project})

    return fleet


def configure(
    folder: Path, sim: Simulator, lease_minimum: str | None, formats: str = "[markdown]"
) -> Path:
    """retention.yaml (daily schedule, the given lease_minimum) and one policy a cluster."""
    (folder / "policies").mkdir()
    for name, rules in POLICIES.items():
        (folder / "policies" / f"{name}.yaml").write_text(
            f"name: {name}\nmatch: {{clusters: [{name}]}}\n{rules}\n"
            "safety: {max_expire_fraction: 1.0, hold_on_alerts: []}\n"
        )
    minimum = f"lease_minimum: {lease_minimum}\n" if lease_minimum else ""
    config = folder / "retention.yaml"
    config.write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\n'
        f'policies: policies/\nschedule: "0 3 * * *"\n{minimum}'
        f"reports:\n  dir: reports/\n  formats: {formats}\n"
    )
    return config


def plan_output(
    sim: Simulator, config: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """`retention plan --out plan.json` now: its exit code and what it printed."""
    capsys.readouterr()
    code = cli.main(["--config", str(config), "plan", "--out", "plan.json"], clock=sim.clock.now)
    return code, capsys.readouterr().out


def kept_by_last_run(folder: Path) -> dict[str, set[str]]:
    """The snapshots the newest run folder's plan kept or protected, by policy name."""
    newest = max((folder / "reports").glob("2*"))
    kept: dict[str, set[str]] = {name: set() for name in CLUSTERS}
    for record in read_decisions(RunFolder(newest).decisions):
        assert record is not None
        if record["state"] in ("kept", "protected"):
            kept[record["clusterName"]].add(record["snapshotId"])
    return kept


def outage(
    folder: Path, lease_minimum: str | None
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Three daily runs (now, a day and two days on), then five days without a run or a
    new snapshot, then the reaper: what the last run kept, and what is left of it."""
    clusters: dict[str, SimCluster] = {}
    with running(fleet_of(clusters)) as sim:
        config = configure(folder, sim, lease_minimum)
        for day in range(3):
            if day:
                sim.admin("clock", {"advance": 86400})
            assert cli.main(["--config", str(config), "run"], clock=sim.clock.now) == 0
        kept = kept_by_last_run(folder)
        for cluster in clusters.values():  # the backup daemon stops with the job
            assert cluster.schedule is not None
            cluster.schedule = replace(cluster.schedule, taking=False)
        sim.admin("clock", {"advance": OUTAGE.total_seconds()})
        with client_for(sim) as client:  # the service is back: its reaper runs on access
            left = {
                name: {s.id for s in client.list_snapshots(P, cid)}
                for name, cid in CLUSTERS.items()
            }
    return kept, {name: kept[name] & left[name] for name in CLUSTERS}


def test_a_five_day_outage_loses_no_kept_snapshot_with_the_default_minimum(
    folder: Path,
) -> None:
    """With lease_minimum at its default (7 days), every snapshot the last run before a
    five-day outage kept, by last, within or a protected id, survives the reaper."""
    kept, survived = outage(folder, None)

    assert all(kept.values())  # each policy kept something: the test can lose it
    assert PROTECTED in kept["ids"]
    assert survived == kept


def test_with_a_one_day_minimum_the_outage_costs_the_restore_points_last_and_within_kept(
    folder: Path,
) -> None:
    """With lease_minimum: 1d a daily job's lease is its own (about two days): after five
    days the reaper has taken every snapshot `last` and `within` kept, and only what
    doNotDelete protects is left."""
    kept, survived = outage(folder, "1d")

    assert kept["last"]
    assert kept["within"]
    assert survived["last"] == set()
    assert survived["within"] == set()
    assert survived["ids"] == {s for s in kept["ids"] if s == PROTECTED}


@pytest.mark.parametrize(
    ("minimum", "said"), [(None, "7 days"), ("10d", "10 days"), ("1d", "39 hours")]
)
def test_the_plan_states_the_outage_it_survives(
    folder: Path, capsys: pytest.CaptureFixture[str], minimum: str | None, said: str
) -> None:
    """The plan's summary says how long a stopped job and service lose no kept snapshot:
    the lease, at least lease_minimum (a daily job's own lease at noon: 39 hours)."""
    clusters: dict[str, SimCluster] = {}
    with running(fleet_of(clusters)) as sim:
        code, out = plan_output(sim, configure(folder, sim, minimum), capsys)

    assert code == 0
    assert (
        f"Outage tolerance: a stopped job and service lose no kept snapshot for {said} once "
        "the plan is applied (at least lease_minimum)." in out
    )


def test_a_kept_snapshot_shortened_by_hand_is_a_warning_and_extended_again(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A person shortens the newest kept snapshot a daily run extended; the next day's plan
    warns that an outage would cost it, names it, and extends it again."""
    clusters: dict[str, SimCluster] = {}
    with running(fleet_of(clusters)) as sim:
        config = configure(folder, sim, None)
        assert cli.main(["--config", str(config), "run"], clock=sim.clock.now) == 0
        newest = "last-day0"  # taken this morning, before the run: kept by last 2
        assert newest in kept_by_last_run(folder)["last"]
        with client_for(sim) as client:
            soon = sim.clock.now() + timedelta(days=1, hours=2)
            client.patch_snapshot(P, CLUSTERS["last"], newest, SnapshotPatch.expire_at(soon))
        sim.admin("clock", {"advance": 86400})
        code, out = plan_output(sim, config, capsys)

    assert code == 0
    assert (
        f"warning last: its newest kept snapshot from before the last scheduled run, {newest}, "
        "expires at " in out
    )
    assert "an outage of 7 days would cost it" in out
    decisions = {
        r["snapshotId"]: r for r in read_decisions(decisions_path(folder / "plan.json")) if r
    }
    assert decisions[newest]["action"] == "extend"


def test_the_run_its_reports_metrics_and_doctor_state_the_tolerance(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With lease_minimum 10d a dry run's report.md and report.html say 10 days, its
    metrics file has retention_outage_tolerance_seconds 864000, and doctor says where the
    figure comes from (the minimum, the schedule alone giving 39 hours)."""
    clusters: dict[str, SimCluster] = {}
    metrics = folder / "retention.prom"
    with running(fleet_of(clusters)) as sim:
        config = configure(folder, sim, "10d", "[html, markdown]")
        ran = cli.main(
            ["--config", str(config), "run", "--dry-run", "--metrics-file", str(metrics)],
            clock=sim.clock.now,
        )
        capsys.readouterr()
        doctor = cli.main(
            ["--config", str(config), "doctor", "--format", "json"], clock=sim.clock.now
        )
    [run] = (folder / "reports").glob("2*")
    checks = orjson.loads(capsys.readouterr().out)["checks"]

    assert (ran, doctor) == (0, 0)
    said = "a stopped job and service lose no kept snapshot for 10 days once the plan is applied"
    assert (
        f"- Outage tolerance: {said} (at least lease\\_minimum)." in (run / "report.md").read_text()
    )
    assert f'<dd id="outage-tolerance">{said} (the lease' in (run / "report.html").read_text()
    assert "retention_outage_tolerance_seconds 864000.0\n" in metrics.read_text()
    [outage_check] = [c for c in checks if c["name"] == "outage tolerance"]
    assert outage_check["detail"] == (
        "a stopped job and service lose no kept snapshot for 10 days "
        "(lease_minimum 10d; the schedule alone gives 39 hours)"
    )
