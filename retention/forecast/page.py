"""A forecast as an HTML page (`retention forecast --html PATH`): the fleet's count and storage
against time, the same for each of the clusters with the largest change (both policy sets
with --base), and a table of every cluster. Rendered with the run report's HTML environment
(retention.report.render): everything escaped, the same filters.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from retention.config.baseline import Baseline
from retention.core.wording import counted, size
from retention.forecast.charts import BASE, HEIGHT, MARGINS, TOP, WIDTH, Chart, chart
from retention.forecast.forecaster import ASSUMPTIONS, ClusterOutlook, Forecast, Outlook
from retention.forecast.render import (
    at_the_end,
    awaiting_words,
    cadence_words,
    every,
    instead,
    settles,
)
from retention.report.render import html_environment, render_whole

# Clusters charted, the largest change first; every cluster is in the table below them.
MAX_CHARTED = 6


@dataclass(frozen=True)
class Charted:
    """A fleet or a cluster on the page: its charts and its steady state in words."""

    title: str
    subtitle: str
    count: Chart
    storage: Chart
    steady: str


def forecast_html(forecast: Forecast, base: Baseline | None, *, what_if: bool) -> str:
    """The page for ``forecast`` (``base``: the --base policies it ran beside the current)."""
    template = html_environment().get_template("forecast.html.j2")
    return template.render(page_context(forecast, base, what_if=what_if))


def write_forecast_html(
    path: Path, forecast: Forecast, base: Baseline | None, *, what_if: bool
) -> None:
    """Write the page to ``path`` whole (report.render.render_whole); OSError when it cannot."""
    template = html_environment().get_template("forecast.html.j2")
    render_whole(template, page_context(forecast, base, what_if=what_if), path)


def page_context(forecast: Forecast, base: Baseline | None, *, what_if: bool) -> dict[str, Any]:
    """What forecast.html.j2 draws."""
    fleet_base = _Side(forecast.base_counts, forecast.base_storage) if base is not None else None
    fleet = _charted(
        forecast,
        "The fleet",
        counted(len(forecast.clusters), "cluster"),
        _Side(forecast.counts, forecast.storage, forecast.awaiting_deletion),
        fleet_base,
    )
    clusters = [
        _charted(
            forecast,
            c.target.name,
            f"{c.target.kind} {c.target.cluster_id}, project {c.target.project_id}; "
            f"cadence: {cadence_words(c.cadence)}",
            _Side(c.current.counts, c.current.storage, c.current.awaiting_deletion),
            None if c.base is None else _Side(c.base.counts, c.base.storage),
        )
        for c in forecast.clusters[:MAX_CHARTED]
    ]
    return {
        "forecast": forecast,
        "base": base,
        "what_if": what_if,
        "every": every(forecast.step),
        "fleet": fleet,
        "charted": clusters,
        "rows": [_row(forecast, c) for c in forecast.clusters],
        "assumptions": ASSUMPTIONS,
        "MARGINS": MARGINS,
        "WIDTH": WIDTH,
        "HEIGHT": HEIGHT,
        "TOP": TOP,
        "BASE": BASE,
    }


class _Side(NamedTuple):
    """One side's series (the fleet's or a cluster's), and the snapshots past their expiry
    today that its counts leave out."""

    counts: array[int]
    storage: array[int]
    awaiting: int = 0


def _charted(
    forecast: Forecast, title: str, subtitle: str, mine: _Side, theirs: _Side | None
) -> Charted:
    counts, storage, _ = mine
    count_series = [("current", "current policies", counts)]
    storage_series = [("current", "current policies", storage)]
    if theirs is not None:
        count_series.append(("base", "base policies", theirs[0]))
        storage_series.append(("base", "base policies", theirs[1]))
    start, step = forecast.evaluated_at, forecast.step
    return Charted(
        title,
        subtitle,
        chart(
            "Snapshots",
            count_series,
            start=start,
            step=step,
            counts=counts,
            label=lambda v: f"{round(v):,}",
        ),
        chart(
            "Storage",
            storage_series,
            start=start,
            step=step,
            counts=counts,
            label=lambda v: size(round(v)),
            in_bytes=True,
        ),
        _steady_words(forecast, mine, theirs),
    )


def _steady_words(forecast: Forecast, mine: _Side, theirs: _Side | None) -> str:
    """ "at the end the current policies keep 41 instead of 312 snapshots, ..."."""
    counts, storage, awaiting = mine
    if not counts:
        return "Nothing forecast"
    if theirs is None:
        aside = awaiting_words(counts[0], awaiting)
        return (
            f"{counts[0]:,} snapshots ({size(storage[0])}) today"
            f"{f' ({aside})' if aside else ''}, "
            f"{counts[-1]:,} ({size(storage[-1])}) {at_the_end(forecast, counts)}"
        )
    return "At the end the current policies keep " + instead(
        (counts[-1], storage[-1]), (theirs[0][-1], theirs[1][-1])
    )


def _row(forecast: Forecast, cluster: ClusterOutlook) -> dict[str, Any]:
    """A cluster's line in the table."""
    mine, theirs = cluster.current, cluster.base
    return {
        "target": cluster.target,
        "cadence": cadence_words(cluster.cadence),
        "today": mine.counts[0] if mine.counts else 0,
        "awaiting": mine.awaiting_deletion,
        "steady": _steady(mine),
        "settles": settles(forecast, mine.counts),
        "base": None if theirs is None else _steady(theirs),
        "ladder": mine.ladder.words() if mine.ladder else "no restore point",
    }


def _steady(outlook: Outlook) -> dict[str, int]:
    return {"count": outlook.counts[-1], "bytes": outlook.storage[-1]}
