"""The reports the browser test lays out, and the measurements it takes of them.

``steady_state_run`` is the steady-state scenario's golden plan as a run folder (the demo's
kinds of clusters, a few of each); ``many_changes_run`` is the same with one cluster's
shortens made 119, as a first run of a real cluster has them; ``long_names_run`` plans a
generated fleet of 200 clusters with long names on the simulator (every separator an
identifier may wrap at, and names with none), so every table is long and wide. ``measure``
runs report_layout.js in a page and returns what it found; ``decision_cells`` runs
decision_cells.js, which measures every cell of the tables that carry the decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.plan.planner import make_plan
from retention.report import RunInfo, render_reports
from retention.simulator.fleet import FleetShape, generate
from retention.simulator.server import Simulator, SimulatorConfig
from retention.simulator.store import Fleet
from tests.support.browser import Page
from tests.support.client import PUBLIC_KEY, make_client
from tests.support.planfiles import write_plan_files

SCENARIOS = Path(__file__).parent.parent / "scenarios"
POLICIES = Path(__file__).parent.parent.parent / "policies"  # the shipped examples
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
KEY = "layout-secret"
LAYOUT_JS = (Path(__file__).parent / "report_layout.js").read_text(encoding="utf-8")
CELLS_JS = (Path(__file__).parent / "decision_cells.js").read_text(encoding="utf-8")

# The example policies match prod-*, analytics-* and dev-*: every name starts with one, so
# every cluster has changes, and the first run's max_expire_fraction holds most of them.
_STEMS = (
    "prod-customer-orders-eu-west-1-primary",
    "analytics-events_clickstream.warehouse-v2",
    "dev-sandbox/feature-branch-preview",
    "prod-billingledgerreconciliationarchive",  # one long segment: no separator inside
    "analytics-search.index:rebuild@nightly",
)
LONG_NAMES = FleetShape(
    projects=4,
    clusters=200,
    sharded=4,
    six_hourly_days=(2, 3),
    config_servers=2,
    gate_alert=True,
    project_names=(
        "customer-data-platform-europe-production",
        "analytics_and_reporting.shared-services",
        "development-sandboxes-for-every-team",
        "payments",
    ),
    cluster_names=tuple(f"{_STEMS[i % len(_STEMS)]}-{i:03d}" for i in range(200)),
)


def steady_state_run(folder: Path) -> Path:
    """report.html of the steady-state scenario's golden plan, rendered into ``folder``
    (written as a valid plan: the golden head, its records and their digest)."""
    scenario = SCENARIOS / "steady_state_mixed_fleet"
    folder.mkdir(parents=True)
    head = json.loads((scenario / "expected.plan.json").read_text())
    lines = (scenario / "expected.decisions.jsonl").read_text().splitlines()
    write_plan_files(folder / "plan.json", head, map(json.loads, lines))
    return _render(folder)


def many_changes_run(folder: Path, shortens: int = 119) -> Path:
    """report.html of the steady-state golden plan with prod-orders' shortens made
    ``shortens`` (copies of its first, each another snapshot an hour older), its counts in
    the head made to agree."""
    scenario = SCENARIOS / "steady_state_mixed_fleet"
    folder.mkdir(parents=True)
    head = json.loads((scenario / "expected.plan.json").read_text())
    lines = (scenario / "expected.decisions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    first = next(i for i, r in enumerate(records) if r["action"] == "shorten")
    cluster = records[first]["clusterId"]
    had = sum(r["action"] == "shorten" and r["clusterId"] == cluster for r in records)
    created = datetime.fromisoformat(records[first]["created"])
    copies = [
        {
            **records[first],
            "snapshotId": f"{0x6A000000 + k:08x}{'0' * 16}",
            "created": (created - timedelta(hours=k + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for k in range(shortens - had)
    ]
    records[first + 1 : first + 1] = copies
    added = len(copies)
    head["summary"]["byAction"]["shorten"] += added
    head["summary"]["byState"]["unkept"] += added
    head["summary"]["snapshots"] += added
    (entry,) = (c for c in head["clusters"] if c["clusterId"] == cluster)
    for key in ("action:shorten", "snapshots", "state:unkept"):
        entry["counts"][key] += added
    write_plan_files(folder / "plan.json", head, records)
    return _render(folder)


def long_names_fleet(now: datetime) -> Fleet:
    """The 200 clusters of ``LONG_NAMES``, their snapshots relative to ``now``."""
    return generate(LONG_NAMES, seed=7, now=now)


def long_names_run(folder: Path) -> Path:
    """report.html of a plan of ``long_names_fleet`` with the example policies."""
    config = SimulatorConfig(now=NOW, frozen=True, public_key=PUBLIC_KEY, private_key=KEY)
    with (
        Simulator(config, fleet_factory=long_names_fleet) as sim,
        make_client(sim.base_url, private_key=KEY) as client,
    ):
        projects = [ProjectTargets(p["id"]) for p in sim.admin("fleet")["projects"]]
        scope = Scope(
            load_policies(POLICIES),
            projects,
            schedule="0 3 * * *",
            # The scenarios predate lease_minimum: the schedule's lease alone keeps their
            # decisions what they were written to show (test_outage_tolerance.py covers it).
            lease_minimum=timedelta(0),
            concurrency=4,
        )
        make_plan(client, scope, plan_path=folder / "plan.json", now=NOW)
    return _render(folder)


def _render(folder: Path) -> Path:
    run = RunInfo("1a2b3c4d", "dry-run", NOW, NOW + timedelta(seconds=42), 0, "0.1.0")
    (html,) = render_reports(folder, run, formats=["html"])
    return html


@dataclass(frozen=True)
class Layout:
    """What report_layout.js measured in one page."""

    viewport: int  # the visible width, CSS px
    scroll_width: int  # the page's
    tables: int
    scrolling: int  # tables wider than their box, scrolling in it
    identifiers: int  # elements of class ident
    charts: int
    labels: int  # text elements of the charts
    problems: list[str]


def measure(page: Page, html: Path) -> Layout:
    """Load ``html`` into the page and measure its layout."""
    page.load(html)
    found: dict[str, Any] = page.evaluate(LAYOUT_JS)
    return Layout(
        viewport=found["viewport"],
        scroll_width=found["scrollWidth"],
        tables=found["tables"],
        scrolling=found["scrolling"],
        identifiers=found["identifiers"],
        charts=found["charts"],
        labels=found["labels"],
        problems=list(found["problems"]),
    )


@dataclass(frozen=True)
class Cells:
    """What decision_cells.js measured of the decision tables in one page."""

    viewport: int  # the visible width, CSS px, without a vertical scrollbar
    inner_width: int  # window.innerWidth
    scroll_width: int  # document.scrollingElement.scrollWidth
    tables: int  # decision tables laid out
    as_tables: int  # of them, laid out as tables (not reflowed)
    measured: int  # cells measured
    outside: int  # cells reaching past the viewport
    columns: list[str]  # a line per column cut, with its first cell
    hidden: list[str]  # labelled cells with a value that are not shown


def decision_cells(page: Page, html: Path) -> Cells:
    """Load ``html`` into the page (every <details> opened) and measure its decision cells."""
    page.load(html)
    found: dict[str, Any] = page.evaluate(CELLS_JS)
    return Cells(
        viewport=found["viewport"],
        inner_width=found["innerWidth"],
        scroll_width=found["scrollWidth"],
        tables=found["tables"],
        as_tables=found["asTables"],
        measured=found["measured"],
        outside=found["outside"],
        columns=list(found["columns"]),
        hidden=list(found["hidden"]),
    )
