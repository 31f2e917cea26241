"""The forecast agrees with what happens: the simulator runs forward with its clock, taking
the snapshots its schedule gives, a daily `retention run` applies the policies, and every
day's count equals what `retention forecast` said on day 0. Three fleets: a 6-hourly
cadence, a daily one from the service's schedule, and a cluster whose backups stop on day
20 (day 0's forecast holds until then; the one made once the stop shows holds after it).

The count compared is the snapshots not past their expiry, as the forecast counts them: the
simulator's reaper deletes an expired snapshot some hours later, as the service does, so the
listing holds each day's freshly expired ones for a while (each run's plan counts them as
awaiting deletion)."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.simulator.fleetfile import build_fleet
from retention.simulator.schedule import SimSchedule
from retention.simulator.server import Simulator
from tests.support.simfleet import NOW, running

PROJECT = "5e2211c17a3e5a48f5497de3"
DAY = 86400
DAYS = 60
HEAD = f"""projects:
  - id: "{PROJECT}"
    name: agree
    clusters:
"""
SIX_HOURLY_SCHEDULE = """snapshotIntervalHours: 6, snapshotRetentionDays: 2,
                   dailySnapshotRetentionDays: 7, weeklySnapshotRetentionWeeks: 4,
                   monthlySnapshotRetentionMonths: 13"""
SIX_HOURLY = f"""{HEAD}      - name: six-hourly
        generate: {{six_hourly_days: 20}}
        schedule: {{{SIX_HOURLY_SCHEDULE}}}
"""
STOPPING = f"""{HEAD}      - name: stopping
        generate: {{six_hourly_days: 20}}
        schedule: {{{SIX_HOURLY_SCHEDULE}, stopsInDays: 20}}
"""
DAILY_SCHEDULE = SimSchedule(
    interval_hours=24, retention_days=3, daily_days=7, weekly_weeks=4, monthly_months=13,
    reference_hour=3,
)  # fmt: skip
POLICY = "name: p\nkeep: {last: 8, daily: 7, weekly: 4}\nsafety: {max_expire_fraction: 1.0}\n"


def daily_fleet() -> str:
    """A cluster with a daily schedule at 03:00 UTC and the 40 days of history it leaves:
    the snapshots whose schedule-set expiry has not passed."""
    rows = []
    for days_ago in range(40):
        created = NOW.replace(hour=3, minute=0) - timedelta(days=days_ago)
        expires = DAILY_SCHEDULE.expires(created)
        if expires > NOW:
            rows.append(
                f'          - {{created: "{created:%Y-%m-%dT%H:%M:%SZ}", '
                f'expires: "{expires:%Y-%m-%dT%H:%M:%SZ}"}}\n'
            )
    return (
        f"{HEAD}      - name: daily\n"
        "        schedule: {snapshotIntervalHours: 24, referenceHourOfDay: 3,\n"
        "                   snapshotRetentionDays: 3, dailySnapshotRetentionDays: 7,\n"
        "                   weeklySnapshotRetentionWeeks: 4, monthlySnapshotRetentionMonths: 13}\n"
        "        snapshots:\n" + "".join(rows)
    )


def simulator(folder: Path, text: str) -> contextlib.AbstractContextManager[Simulator]:
    """The simulator serving the fleet file ``text``, its clock frozen at NOW."""
    fleet = folder / "fleet.yaml"
    fleet.write_text(text)
    return running(lambda now: build_fleet(fleet, seed=1, now=now))


def configure(sim: Simulator, folder: Path) -> Path:
    """retention.yaml and the policy; reports under the folder."""
    (folder / "policies").mkdir()
    (folder / "policies" / "p.yaml").write_text(POLICY)
    config = folder / "retention.yaml"
    config.write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{PROJECT}"\n'
        f'policies: policies/\nschedule: "0 12 * * *"\nreports:\n  dir: reports/\n'
    )
    return config


def quietly(sim: Simulator, config: Path, *argv: str) -> tuple[int, str]:
    """A command against the simulator's clock, its stdout returned, its stderr dropped."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["--config", str(config), *argv], clock=sim.clock.now)
    return code, out.getvalue()


def forecast(sim: Simulator, config: Path, days: int) -> tuple[str, list[int]]:
    """``retention forecast --days DAYS`` now: its one cluster's cadence source and counts."""
    code, out = quietly(sim, config, "forecast", "--days", str(days), "--format", "json")
    assert code == 0
    [cluster] = json.loads(out)["clusters"]
    return cluster["cadence"]["source"], [row["count"] for row in cluster["series"]]


def daily_runs(
    sim: Simulator, config: Path, forecast_on: set[int]
) -> tuple[list[int], dict[int, tuple[str, list[int]]]]:
    """DAYS + 1 days of a daily ``retention run``, the clock moved a day before each but
    the first; a forecast to day DAYS made before the run of each day in ``forecast_on``.
    The real counts of the days (the snapshots not past their expiry, as each plan counts
    them) and the forecasts by day."""
    made: dict[int, tuple[str, list[int]]] = {}
    for day in range(DAYS + 1):
        if day:
            sim.admin("clock", {"advance": DAY})
        if day in forecast_on:
            made[day] = forecast(sim, config, DAYS - day)
        code, _ = quietly(sim, config, "run", "--quiet")
        assert code == 0, day
    real = []
    for plan in sorted((config.parent / "reports").glob("*/plan.json")):
        summary = json.loads(plan.read_text())["summary"]
        real.append(summary["snapshots"] - summary["byState"].get("awaiting-deletion", 0))
    assert len(real) == DAYS + 1
    return real, made


def shortened(patch: dict[str, Any]) -> bool:
    """Whether a PATCH the simulator logged brought a snapshot's expiry forward."""
    before, after = patch["before"].get("expires"), patch["after"].get("expires")
    return bool(before and after and after < before)


@pytest.mark.parametrize(
    ("fleet", "source"),
    [(SIX_HOURLY, "schedule"), (daily_fleet(), "schedule")],
    ids=["six-hourly", "daily-schedule"],
)
def test_sixty_daily_runs_hold_what_the_forecast_said_on_day_zero(
    folder: Path, fleet: str, source: str
) -> None:
    """A regular cadence from the service's schedule (6-hourly with a generated history,
    daily at 03:00 UTC): 60 days of daily runs end each day with exactly the count the
    forecast made on day 0 predicted for it."""
    with simulator(folder, fleet) as sim:
        real, made = daily_runs(sim, configure(sim, folder), {0})
        patches = sim.admin("patches")["patches"]
    used, predicted = made[0]
    assert used == source
    assert real == predicted
    # Not the service's own retention replayed: the runs let go of snapshots it would keep.
    assert any(shortened(p) for p in patches)


def test_a_cluster_whose_backups_stop_on_day_twenty_follows_each_forecast_in_turn(
    folder: Path,
) -> None:
    """A cluster whose agent stops taking snapshots on day 20 (its schedule still served):
    day 0's forecast, which cannot know, holds to day 20; the forecast made on day 21 sees
    a stopped cadence and holds every day to day 60, as the kept snapshots stay."""
    with simulator(folder, STOPPING) as sim:
        real, made = daily_runs(sim, configure(sim, folder), {0, 21})
    (before, at_zero), (after, at_stop) = made[0], made[21]
    assert (before, after) == ("schedule", "stopped")
    assert real[:21] == at_zero[:21]
    assert real[21:] == at_stop
    assert at_zero[40] > real[40]  # day 0's forecast goes on taking: the stop is real
