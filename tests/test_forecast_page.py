"""The forecast's HTML page (`retention forecast --html`): the charts draw the series they
are given (points, axes, the day the count settles), both policy sets with a base, the
clusters with the largest change charted first and every cluster in the table, names
escaped; and in Chromium the page fits 1280 and 800 px with its labels readable."""

from __future__ import annotations

import re
from array import array
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retention.config.baseline import Baseline
from retention.core.cadence import Cadence
from retention.core.forecast import trend
from retention.core.model import Target
from retention.core.policy.loader import PolicySet
from retention.forecast.charts import BASE, TOP, nice_bytes, nice_ceiling
from retention.forecast.forecaster import ClusterOutlook, Forecast, Outlook
from retention.forecast.page import MAX_CHARTED, forecast_html
from tests.support.browser import Browser
from tests.support.report_layout import measure

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
GIB = 1024**3


def outlook(counts: list[int], gib: int = 1) -> Outlook:
    """A side of a cluster with these counts, each snapshot ``gib`` GiB, no restore point."""
    return Outlook(
        ["p"],
        array("q", counts),
        array("q", [c * gib * GIB for c in counts]),
        array("q", [-1] * len(counts)),
        None,
    )


def fleet(names: list[str], *, base: bool) -> Forecast:
    """A 10-day forecast of clusters named ``names``: the k-th falls from 100 to 10 * (k + 1)
    on day 1 (the base keeps 100); added in order, so the first has the largest change."""
    forecast = Forecast(NOW, 10, DAY)
    for k, name in enumerate(names):
        mine = outlook([100] + [10 * (k + 1)] * 10)
        theirs = outlook([100] * 11) if base else None
        target = Target("p1", f"{k:024x}", name)
        forecast.add(ClusterOutlook(target, Cadence("observed", timedelta(hours=6)), mine, theirs))
    return forecast


def polylines(html: str) -> list[tuple[str, list[tuple[float, float]]]]:
    """Each polyline of the page: its class and its points."""
    found = re.findall(r'<polyline class="(\w+)" points="([^"]*)"', html)
    return [
        (side, [(float(x), float(y)) for x, y in (p.split(",") for p in points.split())])
        for side, points in found
    ]


def test_trend_says_steady_only_once_the_count_has_stayed() -> None:
    """A count flat for the last tenth of a year is steady; one that climbs to the end is
    growing, one that drops is falling; three flat steps after a first thinning settle a
    short forecast."""
    assert trend([300] + [30] * 365) == "steady"
    assert trend(list(range(366))) == "growing"
    assert trend(list(range(366, 0, -1))) == "falling"
    assert trend([40, 16, 16, 16]) == "steady"


def test_axes_end_on_round_values() -> None:
    """The top of an axis is the next 1, 2, 2.5 or 5 times a power of ten; in bytes, of
    the binary unit, with 1 TiB rather than 1000 GiB."""
    assert [nice_ceiling(v) for v in (0, 7, 10, 11, 230, 2600)] == [1, 10, 10, 20, 250, 5000]
    assert nice_bytes(1.7 * 1024**4) == 2 * 1024**4
    assert nice_bytes(588 * GIB) == 1024 * GIB


def test_the_fleet_chart_draws_its_series_point_by_point() -> None:
    """The fleet's count line has one point per step across the whole width, the highest
    value (the axis's top) at the top of the plot, and the base's line beside it."""
    forecast = fleet(["a", "b"], base=True)
    html = forecast_html(forecast, Baseline("base/", "path", "base/", PolicySet([])), what_if=False)

    lines = polylines(html)
    (side, points), (base_side, base_points) = lines[0], lines[1]
    assert (side, base_side) == ("current", "base")
    assert len(points) == len(forecast.counts) == 11
    assert points[0] == (0.0, TOP)  # 200 snapshots today: the axis tops at 200
    assert points[-1][0] == 1000.0
    # 30 at the end of 200 on the axis: 15% of the plot's height up from its base.
    assert points[-1][1] == pytest.approx(BASE - (BASE - TOP) * 30 / 200, abs=0.05)
    assert {y for _, y in base_points} == {TOP}
    assert ">200<" in html  # the axis's labels
    assert ">100<" in html
    assert "steady from 2026-11-22" in html
    assert "keep 30 instead of 200 snapshots" in html


def test_the_largest_changes_are_charted_and_every_cluster_is_listed() -> None:
    """Of 8 clusters the first MAX_CHARTED in the forecast's order get charts (two each),
    all 8 are in the table, and a name with markup is shown as text."""
    names = [f"cluster-{k}" for k in range(7)] + ["<b>bold</b>"]
    html = forecast_html(fleet(names, base=False), None, what_if=False)

    headings = re.findall(r'<section class="subject" id="cluster-\d+">\s*<h3>(.*?)</h3>', html)
    charted = [re.sub(r"<[^>]+>", "", heading) for heading in headings]
    assert charted == [n.replace("<", "&lt;").replace(">", "&gt;") for n in names[:MAX_CHARTED]]
    assert len(polylines(html)) == 2 + 2 * MAX_CHARTED
    assert "&lt;b&gt;bold&lt;/b&gt;" in html.replace("<wbr>", "")  # ident's break points
    assert "<b>bold</b>" not in html
    table = html[html.index('id="all"') :]
    assert table.count('<tr class="ladder">') == 8


def test_the_page_fits_the_screen_at_1280_and_800_px(tmp_path: Path, browser: Browser) -> None:
    """With a base and 8 clusters, long names among them: no sideways scroll of the page,
    no table past the viewport, no identifier wrapped inside a word, every chart label at
    least 11 px on screen."""
    names = [f"analytics-{k}-clickstream-events-archive" for k in range(8)]
    html = tmp_path / "forecast.html"
    base = Baseline("git:origin/main", "git", "/repo", PolicySet([]), "origin/main", "0" * 40)
    html.write_text(forecast_html(fleet(names, base=True), base, what_if=False))
    page = browser.page(1280)
    for width in (1280, 800):
        page.resize(width, 1000)
        layout = measure(page, html)
        assert layout.viewport <= width
        assert layout.labels >= 40, f"only {layout.labels} chart labels at {width} px"
        assert layout.problems == [], f"at {width} px"


def test_the_first_days_drop_does_not_flatten_the_rest_of_the_chart() -> None:
    """When today's 100 snapshots fall to 10 on the first run, the count axis is scaled to
    the 10 that follow (they reach the plot's top, not a tenth of it), today's point is drawn
    above the plot and its value is written beside it; with a base that keeps 100 there is
    no drop to leave out and today is on the scale."""
    html = forecast_html(fleet(["a"], base=False), None, what_if=False)

    side, points = polylines(html)[0]
    assert side == "current"
    assert points[0][1] < TOP  # today: above the plot
    assert {y for _, y in points[1:]} == {TOP}  # the 10 after it: the axis's top
    assert ">10<" in html  # the axis's top label
    assert "today 100, above the scale" in html
    assert "today 1.0 GiB" not in html  # storage: 100 GiB today, 10 GiB after
    assert "today 100.0 GiB, above the scale" in html

    with_base = forecast_html(
        fleet(["a"], base=True), Baseline("b/", "path", "b/", PolicySet([])), what_if=False
    )
    assert "above the scale" not in with_base
    assert polylines(with_base)[0][1][0] == (0.0, TOP)
