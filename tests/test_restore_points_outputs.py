"""A cluster's restore points in every output: report.html (a line under its row, holes
marked), report.md (a column), plan --format json (each cluster) and explain (a line, and
its --format json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retention import cli
from retention.report import render_reports
from retention.report.render import markdown_text
from retention.simulator.server import Simulator
from tests.support.reportpage import ReportPage, section
from tests.test_cli_explain import explain, make_plan
from tests.test_cli_json import document
from tests.test_cli_plan import write_config
from tests.test_report import info, scenario_run

# prod-orders of the steady-state scenario: points 11-21, 11-20, 11-19, 11-16 and 2026-01-01.
ORDERS = "daily for 6 days (2 days missing: 2026-11-17 to 2026-11-18), yearly for 1 year"


def test_report_html_shows_each_clusters_restore_points_under_its_row(tmp_path: Path) -> None:
    """The row after prod-orders' is its ladder, the missing days marked apart."""
    folder = scenario_run(tmp_path)
    render_reports(folder, info())
    html = (folder / "report.html").read_text(encoding="utf-8")
    rows = ReportPage(html).rows["clusters"]

    at = next(n for n, r in enumerate(rows) if r and r[0].startswith("prod-orders"))

    assert rows[at + 1] == [f"restore points: {ORDERS}; oldest 2026-01-01 gaps"]
    assert '<span class="gap">(2 days missing: 2026-11-17 to 2026-11-18)</span>' in html
    assert [r for r in rows if r and r[0].startswith("restore points: 1 restore point")] == [
        ["restore points: 1 restore point, 2026-08-13"]
    ]


def test_report_md_has_a_restore_points_column_with_holes_in_bold(tmp_path: Path) -> None:
    """report.md's table of changed clusters ends each row with the cluster's ladder."""
    folder = scenario_run(tmp_path)
    render_reports(folder, info())
    text = section((folder / "report.md").read_text(encoding="utf-8"), "Changes per cluster")

    [row] = [line for line in text.splitlines() if line.startswith("| prod-orders |")]

    holes = markdown_text("(2 days missing: 2026-11-17 to 2026-11-18)")
    rung = markdown_text("daily for 6 days")
    assert row.endswith(f"| {rung} **{holes}**, yearly for 1 year; oldest 2026-01-01 |")
    assert "| Restore points |" in text


def test_plan_json_output_carries_each_clusters_restore_points(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan --format json: every cluster walked has its ladder, with words and tiers."""
    config = write_config(folder, sim.base_url)

    _, doc = document(capsys, "--config", str(config), "plan", clock=sim.clock.now)

    clusters = doc["plan"]["clusters"]
    assert clusters
    assert all("restorePoints" in c for c in clusters)
    for c in clusters:
        points = c["restorePoints"]
        assert points["text"]
        assert points["count"] >= len(points["tiers"])


def test_explain_prints_the_restore_points_of_the_snapshots_cluster(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain: a line after the decision with the cluster's ladder, as plan.json has it;
    in --format json, the cluster's restorePoints."""
    plan = make_plan(folder, sim)
    head = json.loads(plan.read_text())
    [big] = [c for c in head["clusters"] if c["name"] == "prod-big"]

    lines = explain("big0000", plan, capsys)

    [line] = [x for x in lines if x.startswith("  restore points of ")]
    assert line == f"  restore points of prod-big: {big['restorePoints']['text']}"
    assert lines.index("  decision:  protected; action: protect") < lines.index(line)
    assert big["restorePoints"]["text"].startswith("every 6 h for ")
    capsys.readouterr()
    assert cli.main(["explain", "big0000", "--plan", str(plan), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["restorePoints"]["text"] == big["restorePoints"]["text"]
    assert doc["restorePoints"]["count"] == big["restorePoints"]["count"]
