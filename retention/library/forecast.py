"""A forecast of what the policies keep (`retention forecast`): the lifecycle's first
steps, read-only.

load the configuration → load the current policies (and, with --base, the base policies
exactly as `retention diff` reads them, a problem on either side named with its side) →
open the client → one walk, each cluster run forward under each side's policies
(retention.forecast.forecaster), SIGINT and SIGTERM stopping it.

No lock, no run folder, no reports, no metrics, no notice: what a forecast finds goes to
its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from retention.config.baseline import Baseline, current_policies
from retention.core.policy.loader import PolicySet
from retention.forecast.forecaster import Forecast, forecast_fleet
from retention.library.job import Setup
from retention.library.lifecycle import load
from retention.library.review import both_sides, read_only_client
from retention.plan.workers import planning_workers
from retention.walk.inventory import project_targets


@dataclass(frozen=True)
class Forecasted:
    """A finished forecast, the policies it ran (and the base's), and whether --at."""

    forecast: Forecast
    current: PolicySet
    base: Baseline | None
    what_if: bool


def forecast_policies(
    setup: Setup,
    *,
    days: int,
    step: timedelta,
    base: str | None = None,
    at: datetime | None = None,
) -> Forecasted:
    """Forecast the configuration's policies (and those ``base`` names: "git:REF", a folder
    or a file) ``days`` days ahead in steps of ``step``, from ``at`` or the clock's now."""
    loaded = load(setup.config_path, clock=setup.clock)
    config = loaded.config
    if base is None:
        current, baseline = current_policies(config.policies), None
    else:
        current, baseline = both_sides(config.policies, base)
    projects = project_targets(config)
    now = at or setup.clock()
    with read_only_client(setup, loaded, "forecasting", "the forecast was whole") as (client, stop):
        found = forecast_fleet(
            client,
            current,
            None if baseline is None else baseline.policies,
            projects,
            now=now,
            days=days,
            step=step,
            schedule=config.schedule,
            lease_minimum=config.lease_floor,
            concurrency=config.api.concurrency,
            workers=planning_workers(config.api),
            stop=stop,
        )
    return Forecasted(found, current, baseline, what_if=at is not None)
