"""The forecast agrees with what happens: the simulator runs forward with its clock, taking
the snapshots its schedule gives, a daily `retention run` applies the policies, and every
day's count equals what `retention forecast` said on day 0.

The count compared is the snapshots not past their expiry, as the forecast counts them: the
simulator's reaper deletes an expired snapshot some hours later, as the service does, so the
listing holds each day's freshly expired ones for a while (each run's plan counts them as
awaiting deletion)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from retention import cli
from retention.simulator.fleet import build_fleet
from retention.simulator.server import Simulator
from tests.support.simfleet import running

PROJECT = "5e2211c17a3e5a48f5497de3"
DAY = 86400
SIX_HOURLY = """projects:
  - id: "5e2211c17a3e5a48f5497de3"
    name: agree
    clusters:
      - name: six-hourly
        generate: {six_hourly_days: 20}
        schedule: {snapshotIntervalHours: 6, snapshotRetentionDays: 2,
                   dailySnapshotRetentionDays: 7, weeklySnapshotRetentionWeeks: 4,
                   monthlySnapshotRetentionMonths: 13}
"""
POLICY = "name: p\nkeep: {last: 8, daily: 7, weekly: 4}\nsafety: {max_expire_fraction: 1.0}\n"


@pytest.fixture
def six_hourly(folder: Path) -> Iterator[Simulator]:
    """A cluster with 20 days of 6-hourly history and a schedule that goes on taking."""
    fleet = folder / "fleet.yaml"
    fleet.write_text(SIX_HOURLY)
    with running(lambda now: build_fleet(fleet, seed=1, now=now)) as simulator:
        yield simulator


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


def test_sixty_daily_runs_hold_what_the_forecast_said_on_day_zero(
    six_hourly: Simulator, folder: Path
) -> None:
    """A 6-hourly cadence from the service's schedule: 60 days of daily runs end each day
    with exactly the count the forecast made on day 0 predicted for it."""
    config = configure(six_hourly, folder)
    code, out = quietly(six_hourly, config, "forecast", "--days", "60", "--format", "json")
    assert code == 0
    [cluster] = json.loads(out)["clusters"]
    assert cluster["cadence"]["source"] == "schedule"
    predicted = [row["count"] for row in cluster["series"]]

    for day in range(61):
        if day:
            six_hourly.admin("clock", {"advance": DAY})
        code, _ = quietly(six_hourly, config, "run", "--quiet")
        assert code == 0, day

    real = []
    for plan in sorted((folder / "reports").glob("*/plan.json")):
        summary = json.loads(plan.read_text())["summary"]
        real.append(summary["snapshots"] - summary["byState"].get("awaiting-deletion", 0))
    assert len(real) == 61
    assert real == predicted
    assert min(predicted[1:]) < predicted[0]  # the history was thinned, not left alone
