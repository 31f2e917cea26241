"""Forecasting commands: forecast (what the policies keep in the months ahead)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from retention.cli.common import library, parse_at
from retention.cli.group import cli
from retention.cli.output import format_option, show
from retention.cli.progress import TerminalProgress, quiet_option


def _step(_ctx: click.Context, _param: click.Parameter, value: str) -> timedelta:
    from retention.forecast.forecaster import step_of

    try:
        return step_of(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--step") from None


@cli.command("forecast")
@click.option(
    "--days",
    type=click.IntRange(min=1, max=3660),
    default=365,
    show_default=True,
    help="How far ahead to forecast, in days.",
)
@click.option(
    "--step",
    "step",
    metavar="DURATION",
    default="1d",
    show_default=True,
    callback=_step,
    help="The time between two steps (one run of the job each), in days and hours: 1d, 6h.",
)
@click.option(
    "--base",
    "base",
    metavar="git:REF|PATH",
    default=None,
    help="Forecast these policies too, side by side (read as retention diff reads --base): "
    "git:REF, or a policy folder or file.",
)
@click.option(
    "--at",
    "at",
    metavar="TIMESTAMP",
    help="Start the forecast at this time instead of now, e.g. 2027-01-01T00:00:00Z.",
)
@click.option(
    "--html",
    "html",
    metavar="PATH",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Also write the forecast as an HTML page with its charts to PATH, e.g. forecast.html.",
)
@quiet_option
@format_option
@click.pass_context
def forecast(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    days: int,
    step: timedelta,
    base: str | None,
    at: str | None,
    html: Path | None,
    quiet: bool,
    output: str,
) -> int:
    """Forecast what the policies keep: run each cluster forward, one run of the job a
    step, on its snapshots and those its cadence will take, and say how many snapshots
    and how much storage each keeps, the steady state and the day it is reached, and the
    restore points at the end. With --base, the base policies side by side.

    One read-only walk of the fleet: nothing is sent or written and no lock is taken; a
    read-only API key is enough. It assumes no alert holds a change, safety holds are
    approved and each cluster's cadence goes on as it is (docs/forecasting.md). Exit 0:
    done; 1: a cluster could not be walked; 2: invalid policies on either side, a bad
    --base or option; 5: API unreachable.

    \b
    Examples:
      retention forecast
      retention forecast --days 730 --step 1d
      retention forecast --base git:origin/main
      retention forecast --base git:origin/main --html forecast.html
      retention forecast --format json | jq .fleet.steady
    """
    from retention.library.requests import ForecastRequest

    request = ForecastRequest(days, step, base, parse_at(at), html)
    forecasted = library(ctx, TerminalProgress.of(ctx, quiet=quiet)).forecast(request).result
    show(output, forecasted.document, forecasted.lines)
    return forecasted.code
