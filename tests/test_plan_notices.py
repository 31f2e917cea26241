"""The config-server deprecation is said once, where it means something: as a notice of the
plan (plan.json ``notices``, the summary's note, the report's config-server section), not as
a warning in the log of every plan."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import orjson
import pytest

from retention import __version__
from retention.plan.planner import CONFIG_SERVER_NOTICE
from retention.report import RunInfo, render_reports
from retention.report.lines import summary_lines
from retention.report.render import markdown_text
from retention.runfolder.planread import open_plan
from retention.runfolder.planwrite import CLUSTERS_CLOSE, CLUSTERS_OPEN, write_plan
from tests.test_plan_golden import NOW, plan_scenario

WITH_CONFIG_SERVER = "steady_state_mixed_fleet"
WITHOUT_CONFIG_SERVER = "min_keep_and_release_protection"


def advisory_section(html: str) -> str:
    """The report's config-server section."""
    start = html.index('<section id="advisory">')
    return html[start : html.index("</section>", start)]


def test_a_plan_with_a_config_server_notes_the_deprecation_once_and_logs_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A config server in the plan: plan.json's notices hold the deprecation, the summary
    prints it as a note (not a warning), and nothing is logged at WARNING about it."""
    caplog.set_level(logging.WARNING)

    result, _ = plan_scenario(WITH_CONFIG_SERVER, tmp_path)

    document = json.loads(result.plan.path.read_text())
    lines = summary_lines(result.plan.head, result.plan.read_clusters(), plan_path=result.plan.path)
    assert [c["kind"] for c in document["clusters"]].count("config-server") >= 1
    assert document["notices"] == [CONFIG_SERVER_NOTICE]
    assert lines.count(f"  note {CONFIG_SERVER_NOTICE}") == 1
    assert not [line for line in lines if line.startswith("  warning") and "deprecat" in line]
    assert not [r for r in caplog.records if "deprecat" in r.getMessage()]


def test_a_plan_without_config_servers_has_no_notice(tmp_path: Path) -> None:
    """No config server, no notice: the list is there and empty, and no note is printed."""
    result, _ = plan_scenario(WITHOUT_CONFIG_SERVER, tmp_path)

    document = json.loads(result.plan.path.read_text())
    lines = summary_lines(result.plan.head, result.plan.read_clusters(), plan_path=result.plan.path)
    assert "config-server" not in [c["kind"] for c in document["clusters"]]
    assert document["notices"] == []
    assert not [line for line in lines if line.startswith("  note")]


def test_the_reports_show_the_notice_in_the_config_server_section(tmp_path: Path) -> None:
    """report.html shows the notice in its config-server (advisory) section, report.md as a
    line of its summary; a plan without config servers shows it nowhere."""
    info = RunInfo("r1", "dry-run", NOW, NOW, 0, __version__)
    plan_scenario(WITH_CONFIG_SERVER, tmp_path / "with")
    plan_scenario(WITHOUT_CONFIG_SERVER, tmp_path / "without")

    render_reports(tmp_path / "with", info)
    render_reports(tmp_path / "without", info)

    html = (tmp_path / "with" / "report.html").read_text()
    markdown = (tmp_path / "with" / "report.md").read_text().splitlines()
    assert CONFIG_SERVER_NOTICE in advisory_section(html)
    assert html.count(CONFIG_SERVER_NOTICE) == 1
    assert markdown.count(f"- {markdown_text(CONFIG_SERVER_NOTICE)}") == 1
    assert "deprecated endpoints" not in (tmp_path / "without" / "report.html").read_text()
    assert "deprecated endpoints" not in (tmp_path / "without" / "report.md").read_text()


def test_a_plan_written_before_notices_still_reads_and_rewrites(tmp_path: Path) -> None:
    """An older v2 plan.json without ``notices`` reads (the head has none), summarises and
    renders, and is written back with an empty list."""
    plan_scenario(WITH_CONFIG_SERVER, tmp_path)
    path = tmp_path / "plan.json"
    first, rest = path.read_bytes().split(b"\n", 1)  # the head's line, then the clusters
    head_line = orjson.loads(first + CLUSTERS_CLOSE)
    del head_line["notices"], head_line["clusters"]
    path.write_bytes(orjson.dumps(head_line)[:-1] + b"," + CLUSTERS_OPEN + b"\n" + rest)

    plan = open_plan(path)
    head = plan.head
    out = io.BytesIO()
    write_plan(out, head, plan.read_clusters())
    render_reports(tmp_path, RunInfo("r1", "plan", NOW, NOW, 0, __version__))

    assert "notices" not in head
    assert not [
        line
        for line in summary_lines(head, plan.read_clusters(), plan_path=plan.path)
        if line.startswith("  note")
    ]
    assert json.loads(out.getvalue())["notices"] == []
    assert CONFIG_SERVER_NOTICE not in (tmp_path / "report.html").read_text()
