"""The decision at 800 px, measured in a real browser: headless Chromium lays out the
steady-state report, a report of 200 long-named clusters and a forecast page with --base,
and every cell of the tables that carry the decision (changes, per-cluster counts, policies,
hold records, advisory; the forecast's every-cluster table) must be on screen without
scrolling sideways, at 800 px (where they reflow, a row a block of label: value) as at
1280 px (where they stay tables). A cluster's long list of changes is folded under a line
that counts them, so the page stays short. Skipped where Chromium is missing (under CI it
fails instead, as tests/test_report_layout.py says)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retention.config.baseline import Baseline
from retention.core.policy.loader import PolicySet
from retention.forecast.page import forecast_html
from tests.support.browser import Browser
from tests.support.report_layout import (
    decision_cells,
    long_names_run,
    many_changes_run,
    steady_state_run,
)
from tests.test_forecast_page import fleet

WIDTHS = (1280, 800)


def test_every_decision_cell_is_on_screen_at_1280_and_800_px(
    tmp_path: Path, browser: Browser
) -> None:
    """In both reports at both widths, no cell of a decision table reaches past the viewport,
    no labelled cell with a value is hidden and the page does not scroll sideways; at
    1280 px the tables are laid out as tables."""
    reports = {
        "steady-state report": steady_state_run(tmp_path / "steady"),
        "report of 200 long-named clusters": long_names_run(tmp_path / "long"),
    }
    page = browser.page(WIDTHS[0])
    problems: list[str] = []
    for name, html in reports.items():
        for width in WIDTHS:
            page.resize(width, 1000)
            cells = decision_cells(page, html)
            where = f"{name} at {width} px"
            assert cells.tables >= 5, f"{where}: only {cells.tables} decision tables laid out"
            assert cells.measured >= 100, f"{where}: only {cells.measured} cells measured"
            if width == WIDTHS[0] and cells.as_tables != cells.tables:
                problems.append(f"{where}: {cells.tables - cells.as_tables} tables reflowed")
            if cells.outside:
                problems.append(
                    f"{where}: {cells.outside} of {cells.measured} cells past the "
                    f"{cells.viewport} px viewport: " + "; ".join(cells.columns)
                )
            if cells.hidden:
                problems.append(f"{where}: hidden cells: " + "; ".join(cells.hidden[:5]))
            if cells.scroll_width > cells.inner_width:
                problems.append(
                    f"{where}: the page is {cells.scroll_width} px wide in {cells.inner_width} px"
                )
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_the_forecast_base_columns_are_on_screen_at_800_px(
    tmp_path: Path, browser: Browser
) -> None:
    """A forecast page with --base and long cluster names: every cell of the every-cluster
    table, the base's columns among them, is inside the viewport at 1280 and 800 px."""
    names = [f"analytics-{k}-clickstream-events-archive" for k in range(8)]
    html = tmp_path / "forecast.html"
    base = Baseline("git:origin/main", "git", "/repo", PolicySet([]), "origin/main", "0" * 40)
    html.write_text(forecast_html(fleet(names, base=True), base, what_if=False))
    page = browser.page(WIDTHS[0])
    for width in WIDTHS:
        page.resize(width, 1000)
        cells = decision_cells(page, html)
        assert cells.tables == 1
        assert cells.measured >= 8 * 8, f"at {width} px: {cells.measured} cells"
        assert cells.outside == 0, f"at {width} px: " + "; ".join(cells.columns)
        assert cells.hidden == []
        assert cells.scroll_width <= cells.inner_width
        if width == WIDTHS[0]:
            assert cells.as_tables == 1


def test_a_cluster_with_119_changes_is_folded_under_its_count(
    tmp_path: Path, browser: Browser
) -> None:
    """prod-orders' 121 changes (119 of them shortens) start folded under one line that
    counts them by action, so they add less than two lines to the page at 800 px, while a
    cluster with a few changes shows them open."""
    short = steady_state_run(tmp_path / "short")
    long = many_changes_run(tmp_path / "long", shortens=119)
    page = browser.page(800)
    heights = {}
    for html in (short, long):
        page.load(html)
        heights[html] = page.evaluate("document.scrollingElement.scrollHeight")
    folded = page.evaluate(
        "[...document.querySelectorAll('#changes details')].map(d => "
        "[d.querySelector('summary').textContent.trim(), d.open])"
    )
    summaries = {re.sub(r"\s+", " ", text): is_open for text, is_open in folded}
    orders = [text for text in summaries if text.startswith("prod-orders")]
    assert orders, f"no disclosure names prod-orders: {list(summaries)}"
    assert "121 changes" in orders[0], orders[0]
    assert "119 shorten" in orders[0], orders[0]
    assert summaries[orders[0]] is False, "prod-orders' 121 changes are shown open"
    assert any(is_open for text, is_open in summaries.items() if text != orders[0]), summaries
    grew = heights[long] - heights[short]
    assert grew < 60, f"119 more changes make the page {grew} px longer ({heights})"
