"""The run reports (retention.report): report.html and report.md rendered from a run folder.

Run folders are built here by hand with the real plan writer (PlanBuilder), so plan.json and
decisions.jsonl.zst have exactly the production format; the HTML is read back with the standard
library's html.parser, never with string matching alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from markupsafe import Markup

from retention.core.model import (
    ClusterDecisions,
    ClusterPlan,
    Decision,
    Hold,
    Reason,
    SnapshotView,
    Target,
    note,
)
from retention.core.snapshot import SnapshotPatch
from retention.report import RunInfo, render_reports, render_run
from retention.report.lines import summary_lines
from retention.report.read import change_rows
from retention.report.render import html_text, summary_markdown
from retention.runfolder.folder import RunFolder, decisions_path
from retention.runfolder.planread import open_plan
from retention.runfolder.planwrite import PlanBuilder, PolicyDigest
from tests.support.planfiles import write_plan_files
from tests.support.reportpage import ReportPage

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
PROJECT = "5e2211c17a3e5a48f5497de3"
BASE_URL = "https://opsmanager.example.com:8443/api/public/v1.0"
SCENARIO = Path(__file__).parent / "scenarios" / "steady_state_mixed_fleet"
SECTIONS = [
    "summary",
    "holds",
    "counts",
    "run",
    "stale-backups",
    "changes",
    "unmanaged",
    "warnings",
    "policies",
    "clusters",
    "calendar",
    "timelines",
    "errors",
    "advisory",
    "glossary",
]
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
HOSTILE_REASON = "</td><script>alert(2)</script>"


# ---- building run folders -------------------------------------------------------------


def snap(sid: str, age_hours: float, expires_in: float | None) -> SnapshotView:
    """A complete snapshot created ``age_hours`` before NOW, expiring ``expires_in`` after it."""
    expires = None if expires_in is None else NOW + timedelta(hours=expires_in)
    return SnapshotView(sid, NOW - timedelta(hours=age_hours), True, False, expires)


def kept(sid: str, age_hours: float, expires_in: float | None) -> Decision:
    """A kept snapshot left as it is."""
    s = snap(sid, age_hours, expires_in)
    return Decision(
        s,
        "kept",
        reasons=[note("daily", "daily snapshot", "prod")],
        policies=["prod"],
        expires_after=s.expires,
    )


def extended(sid: str, age_hours: float, expires_in: float, to_hours: float) -> Decision:
    """A kept snapshot whose expiry the plan extends."""
    to = NOW + timedelta(hours=to_hours)
    s = snap(sid, age_hours, expires_in)
    patch = SnapshotPatch.expire_at(to)
    return Decision(
        s, "kept", "extend", [note("monthly", "monthly snapshot", "prod")], ["prod"], to, patch
    )


def shortened(
    sid: str, age_hours: float, expires_in: float | None, to_hours: float, held: str | None = None
) -> Decision:
    """An unkept snapshot the plan shortens to NOW + ``to_hours`` (held when ``held``)."""
    to = NOW + timedelta(hours=to_hours)
    s = snap(sid, age_hours, expires_in)
    patch = SnapshotPatch.expire_at(to)
    return Decision(
        s, "unkept", "shorten", [note("no-rule", "no keep rule matches")], [], to, patch, held
    )


def protected(sid: str, age_hours: float, expires_in: float) -> Decision:
    """A snapshot the plan protects (doNotDelete: true)."""
    s = snap(sid, age_hours, expires_in)
    return Decision(
        s,
        "protected",
        "protect",
        [note("yearly", "protect: yearly snapshot", "prod")],
        ["prod"],
        None,
        SnapshotPatch.protect(),
    )


def cluster(
    name: str,
    decisions: Sequence[Decision],
    *,
    holds: Sequence[Hold] = (),
    errors: Sequence[str] = (),
    policies: Sequence[str] = ("prod",),
) -> ClusterDecisions:
    """One cluster's decisions; its id is derived from its name, so names may be anything."""
    cid = hashlib.sha256(name.encode()).hexdigest()[:24]
    return ClusterDecisions(
        Target(PROJECT, cid, name), tuple(decisions), tuple(holds), tuple(errors), tuple(policies)
    )


def write_run(
    folder: Path,
    plans: Sequence[ClusterDecisions],
    *,
    results: Sequence[dict[str, Any]] | None = None,
    errors: Sequence[str] = (),
) -> Path:
    """A run folder: plan.json and decisions.jsonl.zst as the planner writes them,
    results.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    run = RunFolder(folder)
    with (
        decisions_path(run.plan).open("wb") as out,
        run.plan.open("wb") as plan,
    ):
        builder = PlanBuilder(
            evaluated_at=NOW,
            created_at=NOW,
            base_url=BASE_URL,
            policies=[PolicyDigest("prod", "ab" * 32)],
            decisions_out=out,
            lease_seconds=140400.0,
            service_version="versionString=8.0.1",
        )
        for each in sorted(
            plans, key=lambda p: (p.target.project_id, p.target.kind, p.target.cluster_id)
        ):
            builder.add(ClusterPlan(each))  # no restore points: none is described
        builder.write(plan, list(errors))
    if results is not None:
        lines = [json.dumps(r) + "\n" for r in results]
        (folder / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def result(
    plan: ClusterDecisions,
    d: Decision,
    outcome: str,
    status: int | None = 200,
    error: str | None = None,
) -> dict[str, Any]:
    """One results.jsonl line, as the executor journals it."""
    assert d.patch is not None
    return {
        "at": "2026-11-21T12:05:00Z",
        "projectId": plan.target.project_id,
        "clusterId": plan.target.cluster_id,
        "clusterName": plan.target.name,
        "snapshotId": d.snapshot.id,
        "action": d.action,
        "destructive": d.destructive,
        "observed": d.snapshot.observed(),
        "planned": d.patch.to_api(),
        "body": d.patch.to_api(),
        "outcome": outcome,
        "approved": False,
        "status": status,
        "error": error,
    }


def info(mode: str = "dry-run", exit_code: int | None = 0) -> RunInfo:
    """The run a test report belongs to."""
    return RunInfo("1a2b3c4d", mode, NOW, NOW + timedelta(seconds=125), exit_code, "0.1.0")


# ---- reading reports back ----------------------------------------------------------------


class Page(ReportPage):
    """The parts of report.html the tests look at: elements, text, ids, marks and rows; every
    text as it is (the stylesheet's and the charts' included), stripped only."""

    unread = frozenset()

    def __init__(self, html: str) -> None:
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        # timeline figure id -> snapshots counted in its columns, by lane (taken, expiry)
        self.marks: dict[str, dict[str, int]] = {}
        self._figure = ""
        self._lane = ""
        super().__init__(html)

    @property
    def text(self) -> str:
        """All text content."""
        return "".join(self.parts)

    def clean(self, text: str) -> str:
        """The text stripped, inner white space as it is."""
        return text.strip()

    def _record(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.elements.append((tag, a))
        classes = (a.get("class") or "").split()
        if tag == "figure":
            self._figure = a.get("id") or ""
        if tag == "g" and "lane" in classes:
            self._lane = classes[-1]
        if tag == "g" and "col" in classes:
            lanes = self.marks.setdefault(self._figure, {})
            lanes[self._lane] = lanes.get(self._lane, 0) + int(a.get("data-count") or 0)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._record(tag, attrs)
        super().handle_starttag(tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._record(tag, attrs)


def render(folder: Path, run: RunInfo | None = None) -> tuple[Page, str]:
    """Render both reports; the parsed HTML and the Markdown."""
    render_reports(folder, run or info())
    html = (folder / "report.html").read_text(encoding="utf-8")
    return Page(html), (folder / "report.md").read_text(encoding="utf-8")


def scenario_run(tmp_path: Path) -> Path:
    """The steady-state scenario's golden plan and decisions as a dry-run folder (a valid
    plan: the golden head with the digest of the records written beside it)."""
    folder = tmp_path / "run"
    folder.mkdir()
    head = json.loads((SCENARIO / "expected.plan.json").read_text())
    lines = (SCENARIO / "expected.decisions.jsonl").read_text().splitlines()
    write_plan_files(RunFolder(folder).plan, head, map(json.loads, lines))
    return folder


def three_tomorrow() -> ClusterDecisions:
    """Three snapshots shortened to tomorrow 10:00, one kept expiring in 10 days, one
    protected and one extended (both expiring tomorrow before), one without expiry, one
    held with 60 days left."""
    return cluster(
        "orders",
        [
            kept("k1", 6, 240),
            protected("p1", 12, 20),
            extended("e1", 300, 20, 400 * 24),
            shortened("s1", 30, 500, 22),
            shortened("s2", 54, 600, 22),
            shortened("s3", 78, None, 22),
            kept("n1", 100, None),
            shortened("h1", 200, 60 * 24, 22, held="held for the test"),
        ],
    )


# ---- report.html -----------------------------------------------------------------------------


def test_every_section_is_present_in_order(tmp_path: Path) -> None:
    """report.html has its fifteen sections with their ids, in reading order (SECTIONS):
    what to decide first, then the counts and the run."""
    page, _ = render(scenario_run(tmp_path), info("plan", 4))

    sections = [a["id"] for tag, a in page.elements if tag == "section"]
    assert sections == SECTIONS
    assert [tag for tag, a in page.elements if tag == "meta" and a.get("charset") == "utf-8"]
    assert "exit 4: locked: another run holds the lock" in page.text
    assert "4: locked: another run holds the lock" in page.text_of("run")
    assert page.text_of("run").count("http://simulator/api/public/v1.0") == 1


def test_html_has_no_script_no_handlers_and_no_external_url(tmp_path: Path) -> None:
    """report.html holds no script element, no on* attribute and no URL outside the page."""
    folder = tmp_path / "run"
    write_run(folder, [three_tomorrow()], errors=["see https://example.com/help"])
    page, _ = render(folder)
    raw = (folder / "report.html").read_text(encoding="utf-8")

    assert [tag for tag, _ in page.elements if tag in ("script", "iframe", "object", "embed")] == []
    assert [k for _, a in page.elements for k in a if k.lower().startswith("on")] == []
    links = [v or "" for _, a in page.elements for k, v in a.items() if k in ("src", "href")]
    assert links
    assert all(v.startswith("#") for v in links)
    assert "url(" not in raw
    assert "<title>" in raw
    assert BASE_URL in page.text  # shown as text, never as a link


def test_hostile_names_and_reasons_are_escaped(tmp_path: Path) -> None:
    """A cluster name and a hold reason made of markup appear as text, never as elements."""
    plan = cluster(
        HOSTILE_NAME,
        [shortened("s1", 30, 500, 22, held=HOSTILE_REASON), kept("k1", 6, 100)],
        holds=[Hold("alert", HOSTILE_REASON, "a<b>")],
        errors=[HOSTILE_REASON],
    )
    folder = write_run(tmp_path / "run", [plan])
    page, markdown = render(folder)

    assert {tag for tag, _ in page.elements}.isdisjoint({"img", "script"})
    assert HOSTILE_NAME in page.text_of("holds")
    assert HOSTILE_REASON in page.text_of("holds")
    assert HOSTILE_REASON in page.text_of("errors")
    assert HOSTILE_NAME in page.text_of("timelines")
    raw = (folder / "report.html").read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=alert(1)&gt;" in raw
    assert "<img" not in raw
    assert r"\<img src=x onerror=alert(1)\>" in markdown
    assert "<script>" not in markdown


def test_control_characters_of_a_held_id_are_escaped_in_both_reports(tmp_path: Path) -> None:
    """A cluster held for an id with an escape sequence shows in report.html and report.md
    with the character written as \\x1b: no raw control character reaches either file."""
    odd = "5e4e\x1b[2J/.."
    plan = ClusterDecisions(
        Target(PROJECT, odd, odd),
        holds=(Hold("id", f"cluster id {odd!r} cannot be carried by a plan"),),
        policies=("prod",),
    )
    folder = write_run(tmp_path / "run", [plan, three_tomorrow()])
    page, markdown = render(folder)
    raw = (folder / "report.html").read_text(encoding="utf-8")

    assert "5e4e\\x1b[2J/.." in page.text_of("holds")
    assert "5e4e\\x1b[2J/.." in page.text_of("clusters")
    assert "\x1b" not in raw
    assert "\x1b" not in markdown
    assert (
        "**5e4e\\\\x1b\\[2J/..**, 0 held changes: id: cluster id '5e4e\\\\x1b\\[2J/..' cannot"
        in markdown
    )


def test_html_keeps_white_space_and_markup_while_escaping_control_characters() -> None:
    """report.html's finalize escapes ESC and NUL but leaves line breaks and tabs (an SVG
    tooltip's lines) and markup a filter made as they are."""
    assert html_text("s1 label\ns2 label\t\x1b\x00") == "s1 label\ns2 label\t\\x1b\\x00"
    made = Markup("<b>\x07</b>")
    assert html_text(made) is made
    assert html_text(3) == 3


def test_timelines_count_every_snapshot_and_every_new_expiry_once(tmp_path: Path) -> None:
    """Each changed cluster of the steady-state scenario gets a timeline whose columns count
    each snapshot once (taken) and each sent change's new expiry once (on the axis, or at
    the right edge when later or never); the unchanged cluster gets none."""
    page, _ = render(scenario_run(tmp_path))

    # Most changes first, ties by name: prod-orders 5, dev-sandbox 2, prod-sharded 2, cfg0 1.
    assert page.marks == {
        "timeline-1": {"taken": 11, "expiry": 4},  # and its protect: never
        "timeline-2": {"taken": 4, "expiry": 2},  # two deletes
        "timeline-3": {"taken": 4},  # protect and an extend past the axis
        "timeline-4": {"taken": 3},  # advisory: nothing sent
    }
    assert "1 later or never" in page.text_of("timeline-1")
    assert "2 later or never" in page.text_of("timeline-3")
    captions = [page.text_of(f"timeline-{i}").split()[0] for i in range(1, 5)]
    assert captions == ["prod-orders", "dev-sandbox", "prod-sharded", "cfg0.legacy.example.net"]
    assert "legacy-untouched" in page.text_of("unchanged")
    assert "legacy-untouched" not in page.text_of("timelines")


def test_calendar_counts_what_expires_per_day(tmp_path: Path) -> None:
    """Three snapshots shortened to tomorrow count on tomorrow; the protected, the extended,
    the held and the one without expiry do not; a kept one ten days out counts in 30 days."""
    page, _ = render(write_run(tmp_path / "run", [three_tomorrow()]))

    assert page.text_of("calendar-7") == "3"
    assert page.text_of("calendar-30") == "4"
    # This plan's expiries (the three shortened) apart from the one already set (k1).
    assert page.text_of("calendar-7-planned") == "3"
    assert page.text_of("calendar-30-planned") == "3"
    [row] = [r for r in page.rows["calendar"] if r and r[0] == "orders"]
    assert row[2:] == ["3", "3", "0", "1", "2026-11-22 10:00"]
    text = page.text_of("calendar")
    assert "2026-11-22: 3 expiring, 3 set by this plan, 0 already set" in text
    assert "2026-12-01: 1 expiring, 0 set by this plan, 1 already set" in text
    assert "if this plan is applied" in text


def test_calendar_keeps_the_old_expiry_of_changes_that_did_not_apply(tmp_path: Path) -> None:
    """After a run, a shorten that failed leaves its snapshot's old expiry in the calendar."""
    plan = three_tomorrow()
    by_id = {d.snapshot.id: d for d in plan.decisions}
    results = [
        result(plan, by_id["s1"], "applied"),
        result(plan, by_id["s2"], "applied"),
        result(plan, by_id["s3"], "failed", 500, "HTTP 500"),
        result(plan, by_id["p1"], "applied"),
    ]
    page, _ = render(write_run(tmp_path / "run", [plan], results=results), info("run", 1))

    assert page.text_of("calendar-7") == "2"  # s3 had no expiry and keeps none
    [row] = [r for r in page.rows["calendar"] if r and r[0] == "orders"]
    assert row[2:] == ["2", "2", "0", "1", "2026-11-22 10:00"]
    assert "failed, stale and held changes keep their old expiry" in page.text_of("calendar")


def test_outcomes_from_results_are_counted(tmp_path: Path) -> None:
    """Outcomes of results.jsonl are counted, failed and refused PATCHes listed, no dry-run
    line shown."""
    plan = cluster("orders", [shortened(f"s{i}", 30 + i, 500, 22) for i in range(8)])
    d = plan.decisions
    results = [
        result(plan, d[0], "applied"),
        result(plan, d[1], "applied"),
        result(plan, d[2], "applied"),
        result(plan, d[3], "stale", None, "state changed since the plan"),
        result(plan, d[4], "failed", 500, "HTTP 500 <b>boom</b>"),
        result(plan, d[5], "failed", None, "no answer"),
        result(plan, d[6], "held", None, "the plan holds this cluster"),
        result(plan, d[7], "refused", None, "would shorten a kept snapshot"),
    ]
    page, markdown = render(write_run(tmp_path / "run", [plan], results=results), info("run", 1))

    outcomes = ("applied", "stale", "refused", "failed", "held")
    counts = {o: page.text_of(f"outcome-{o}") for o in outcomes}
    assert counts == {"applied": "3", "stale": "1", "refused": "1", "failed": "2", "held": "1"}
    failed = [r for r in page.rows["errors"] if r and r[-1] == "2026-11-21T12:05:00Z"]
    assert [(r[1], r[3], r[4], r[5]) for r in failed] == [
        ("s4", "failed", "500", "HTTP 500 <b>boom</b>"),
        ("s5", "failed", "-", "no answer"),
        ("s7", "refused", "-", "would shorten a kept snapshot"),
    ]
    assert "dry-run" not in page.by_id
    assert "dry run" not in markdown
    assert "Applied 3, stale 1, refused 1, failed 2, held 1." in markdown


def test_dry_run_line_appears_without_results(tmp_path: Path) -> None:
    """Without results.jsonl the summary says nothing was changed and shows no outcomes."""
    page, markdown = render(write_run(tmp_path / "run", [three_tomorrow()]))

    assert page.text_of("dry-run") == "dry run: nothing was changed"
    assert "outcomes" not in page.by_id
    assert "**dry run: nothing was changed.**" in markdown.splitlines()[0]


def test_timelines_are_capped_at_fifty(tmp_path: Path) -> None:
    """With 60 changed clusters, the 50 with the most changes (ties by name) get a timeline,
    the other 10 are pointed to the clusters table, which lists all 60."""
    plans = [
        cluster(f"c{i:02d}", [shortened(f"s{i}-{j}", 30 + j, 500, 22) for j in range(1 + i % 3)])
        for i in range(60)
    ]
    page, _ = render(write_run(tmp_path / "run", plans))

    drawn = [page.text_of(f"timeline-{n}").split()[0] for n in range(1, 51)]
    threes = [f"c{i:02d}" for i in range(60) if i % 3 == 2]
    twos = [f"c{i:02d}" for i in range(60) if i % 3 == 1]
    ones = [f"c{i:02d}" for i in range(60) if i % 3 == 0]
    assert drawn == threes + twos + ones[:10]
    assert len(page.marks) == 50
    assert all(lanes["taken"] == lanes["expiry"] for lanes in page.marks.values())
    assert "timeline-51" not in page.by_id
    assert page.text_of("more-changed").startswith("10 more changed clusters: see the table")
    cluster_rows = [r for r in page.rows["clusters"] if r and r[-1] == PROJECT]
    assert len(cluster_rows) == 60


def test_policy_table_attributes_changes(tmp_path: Path) -> None:
    """The policy table counts the steady-state scenario's changes per policy, unkept ones
    under their cluster's policy, and the clusters each policy matched."""
    page, _ = render(scenario_run(tmp_path))

    rows = {r[0]: r for r in page.rows["policies"] if r and r[0] in ("dev", "production")}
    # Policy, clusters, protect, extend, shorten, delete, release, held, advisory, matched, sha256
    assert rows["dev"][1:-1] == ["1", "0", "0", "0", "2", "0", "0", "0", "dev-sandbox"]
    assert rows["production"][1] == "3"
    assert rows["production"][2:9] == ["2", "2", "3", "0", "0", "0", "1"]


def test_errors_section_lists_plan_and_cluster_errors(tmp_path: Path) -> None:
    """Plan errors, cluster errors and unreadable result lines are all in the errors section."""
    plans = [cluster("broken", [kept("k1", 6, 100)], errors=["walk failed: HTTP 503"])]
    folder = write_run(tmp_path / "run", plans, results=[], errors=["cannot read alerts"])
    with (folder / "results.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"at": "2026-11-21T12:05:00Z", "outc')  # a line cut short by a kill
    page, markdown = render(folder, info("run", 1))

    errors = page.text_of("errors")
    assert "cannot read alerts" in errors
    assert "walk failed: HTTP 503" in errors
    assert "results.jsonl: 1 unreadable line skipped" in errors
    assert "- broken: walk failed: HTTP 503" in markdown


# ---- report.md -------------------------------------------------------------------------------


def test_markdown_headline_holds_and_escaped_cells(tmp_path: Path) -> None:
    """report.md starts with a one-line headline, lists holds, and escapes pipes and links."""
    held = cluster(
        "prod|orders",
        [shortened("s1", 30, 500, 22, held="4 of 5 would expire"), kept("k1", 6, 100)],
        holds=[Hold("max_expire_fraction", "4 of 5 would expire (80%)", None)],
    )
    other = cluster("[x](https://evil.example)", [shortened("s2", 30, 500, 22)])
    _, markdown = render(write_run(tmp_path / "run", [held, other]), info("dry-run", 3))
    lines = markdown.splitlines()

    assert lines[0].startswith(
        "**retention dry-run 1a2b3c4d: exit 3, held by a safety gate: destructive changes need "
        "a human.** 0 protect, 0 extend, 1 shorten, 0 delete, 0 release, 1 held, 0 advisory;"
    )
    assert "### Holds (need a human)" in lines
    assert (
        "- Deletion: 1 snapshot may be deleted by the service from 2026-11-22T10:00:00Z on, "
        "giving back 0 B."  # the test snapshots have no parts, so no size
    ) in lines
    assert (
        r"**prod\|orders**, 1 held change: max\_expire\_fraction: 4 of 5 would expire (80%)"
        in lines
    )
    # Only in a code span, where nothing means anything, is the name as it is (and quoted
    # for a shell); the plan's path is the real one.
    command = f"`retention apply {tmp_path / 'run' / 'plan.json'} --approve 'prod|orders'`"
    assert command in markdown
    assert "prod|orders" not in markdown.replace(command, "")
    assert r"| \[x\](https://evil.example) | cluster | 1 |" in markdown
    assert lines.index("### Holds (need a human)") < lines.index("### Changes per cluster")
    assert "Full report: report.html" in lines


def test_a_cluster_with_three_holds_counts_its_held_changes_once(tmp_path: Path) -> None:
    """Held changes are a cluster's, not a hold's: a cluster held by two alerts and the
    fraction gate is one row with its three holds, and the total is the true count."""
    holds = [
        Hold("alert", "OPEN alert RESYNC_REQUIRED (a1)", "a1"),
        Hold("alert", "OPEN alert BAD_CLUSTERSHOTS (a2)", "a2"),
        Hold("max_expire_fraction", "2 of 3 would expire (67%)", None, "policies/p.yaml:9"),
    ]
    billing = cluster(
        "prod-billing",
        [shortened(f"s{i}", 30 + i, 500, 22, held="held") for i in range(2)] + [kept("k1", 6, 100)],
        holds=holds,
    )
    page, markdown = render(write_run(tmp_path / "run", [billing]), info("dry-run", 3))

    # One card, with its held count, its three holds and what to do.
    assert "held-1" in page.by_id
    assert "held-2" not in page.by_id
    card = page.text_of("held-1")
    assert card.startswith("prod-billing 2 held ")
    assert "What to do: resolve the alert in the service, then plan again" in card
    assert "BAD_CLUSTERSHOTS" in card
    assert "RESYNC_REQUIRED" in card
    assert "2 of 3 would expire (67%) (set at policies/p.yaml:9)" in card
    assert "1 cluster held, 2 changes in all." in page.text_of("holds")
    assert (
        page.text_of("deletion")
        == "This plan lets the service delete no snapshot sooner than before."
    )
    assert "1 cluster held, 2 changes in all." in markdown.splitlines()


def test_unmanaged_clusters_and_unused_policies_have_their_section(tmp_path: Path) -> None:
    """A cluster no policy matches is listed under Unmanaged, with its id."""
    bare = cluster("legacy-app", [kept("k1", 6, 100)], policies=())
    page, _ = render(write_run(tmp_path / "run", [bare]), info("dry-run", 0))

    assert "No policy manages 1 cluster" in page.text_of("unmanaged")
    [row] = [r for r in page.rows["unmanaged"] if r and r[0] == "legacy-app"]
    assert row[-1] == bare.target.cluster_id


def test_every_change_is_a_row_with_its_expiry_and_the_date_deletion_may_start(
    tmp_path: Path,
) -> None:
    """The Changes section lists each change by cluster: snapshot, action, the date from
    which the service may delete it, its size, why, then created and the expiry before and
    after; a held change says so and has no deletion date."""
    orders = cluster("orders", [shortened("s1", 30, 500, 22), protected("p1", 6, 100)])
    billing = cluster(
        "billing",
        [shortened("s2", 40, None, 22, held="too many would expire")],
        holds=[Hold("max_expire_fraction", "too many would expire", None)],
    )
    page, _ = render(write_run(tmp_path / "run", [orders, billing]), info("dry-run", 3))

    table = page.rows["changes"]
    rows = {r[0]: r for r in table if r and r[0] in ("s1", "p1", "s2")}
    # Snapshot, action, may be deleted from, size, why, created, expiry before, after
    assert rows["s1"][:3] == ["s1", "shorten", "2026-11-22 10:00"]
    assert rows["s1"][4] == "no keep rule matches"
    assert rows["s1"][5:] == ["2026-11-20 06:00", "2026-12-12 08:00", "2026-11-22 10:00"]
    assert rows["p1"][1:3] == ["protect", "-"]
    assert rows["p1"][6:] == ["2026-11-25 16:00", "doNotDelete"]
    # Each cluster's rows are under a disclosure that names it and counts its changes by
    # action, shown open while short.
    raw = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    found = re.findall(r'<details class="cluster-changes"( open)?>\s*<summary>(.*?)</summary>', raw)
    summaries = [(bool(o), " ".join(re.sub(r"<[^>]+>", "", s).split())) for o, s in found]
    assert [(o, s.split()[0], s.split(": ", 1)[1]) for o, s in summaries] == [
        (True, "orders", "2 changes (1 protect, 1 shorten)"),
        (True, "billing", "1 change (1 shorten)"),
    ]
    assert rows["s2"][1:3] == ["shorten", "2026-11-22 10:00"]
    assert rows["s2"][6:] == ["no expiry", "2026-11-22 10:00"]
    assert "held-changes" in page.by_id
    assert page.text_of("held-changes").startswith("Held by a safety gate: not sent")
    # The summary says what may be deleted and from when; the hold says what to do.
    assert page.text_of("deletion").startswith(
        "1 snapshot may be deleted by the service from 2026-11-22 10:00 UTC on, giving back"
    )
    plan = tmp_path / "run" / "plan.json"
    assert (
        f"What to do: review what approving costs below, then retention apply {plan} "
        "--approve billing"
    ) in page.text_of("held-1")


def test_why_shows_the_reason_that_decided_and_folds_the_others_away(tmp_path: Path) -> None:
    """A change kept by three rules shows, under Why, the rule that set its new expiry, then
    "+2 more" that opens the other two; a change with one reason has nothing to open."""
    s = snap("e1", 300, 20)
    to = NOW + timedelta(days=400)
    reasons = [
        Reason(policy="prod", rule="daily", counter=1, of=7, horizon=NOW, text="daily snapshot"),
        Reason(policy="prod", rule="monthly", counter=2, of=12, horizon=to, text="monthly"),
        Reason(policy="prod", rule="last", counter=1, of=4, horizon=None, text="last snapshot"),
    ]
    change = Decision(s, "kept", "extend", reasons, ["prod"], to, SnapshotPatch.expire_at(to))
    folder = write_run(tmp_path / "run", [cluster("orders", [change, shortened("s1", 30, 9, 22)])])
    render(folder)
    raw = (folder / "report.html").read_text(encoding="utf-8")

    why = raw[raw.index('<td class="why" data-label="Why">prod: monthly') :]
    why = why[: why.index("</td>")]
    assert why == (
        '<td class="why" data-label="Why">'
        "prod: monthly #2 of 12 (monthly), until 2027-12-26T12:00:00Z "
        '<details class="more"><summary>+2 more</summary><ul>'
        "<li>prod: daily #1 of 7 (daily snapshot), until 2026-11-21T12:00:00Z</li>"
        "<li>prod: last #1 of 4 (last snapshot)</li></ul></details>"
    )
    assert '<td class="why" data-label="Why">no keep rule matches</td>' in raw


def test_the_changes_table_stops_at_its_limit_and_says_where_the_rest_are(
    tmp_path: Path,
) -> None:
    """Past the row limit the section says how many there are and where to find them all."""
    many = cluster("orders", [shortened(f"s{i:05d}", 30 + i, 500, 22) for i in range(12)])
    folder = write_run(tmp_path / "run", [many])

    rows = list(change_rows(open_plan(folder / "plan.json"), limit=5))
    page, _ = render(folder)

    assert [r.snapshot_id for r in rows] == [f"s{i:05d}" for i in range(5)]
    assert len([r for r in page.rows["changes"] if r and r[0].startswith("s0")]) == 12


def test_markdown_stays_short_for_a_large_fleet(tmp_path: Path) -> None:
    """For 300 held, erroring clusters report.md stays under 200 lines and points to the HTML."""
    plans = [
        cluster(
            f"rs-{i:04d}",
            [shortened(f"s{i}", 30, 500, 22, held="too many")],
            holds=[Hold("max_expire_fraction", "too many would expire", None)],
            errors=[f"error {i}"],
        )
        for i in range(300)
    ]
    _, markdown = render(write_run(tmp_path / "run", plans))
    lines = markdown.splitlines()

    assert len(lines) < 200
    assert "... and 270 more clusters with changes. Full report: report.html" in lines
    assert "... and 270 more held clusters: see report.html." in lines
    assert "- ... and 280 more: see report.html" in lines


def test_markdown_numbers_are_plain_digits_for_grep(tmp_path: Path) -> None:
    """report.md writes 1100, not 1 100 with a thin space: a grep for the count finds it;
    report.html keeps the thin space for the eye."""
    many = cluster("orders", [shortened(f"s{i:05d}", 30 + i, 500, 22) for i in range(1100)])
    page, markdown = render(write_run(tmp_path / "run", [many]))

    assert "1100 shorten" in markdown
    assert "\u2009" not in markdown
    assert "1\u2009100" in page.text_of("by-action")


# ---- the API -----------------------------------------------------------------------------------


def test_render_reports_writes_only_the_formats_asked(tmp_path: Path) -> None:
    """render_reports returns the paths it wrote, only those asked for, and refuses others."""
    folder = scenario_run(tmp_path)

    assert render_reports(folder, info(), formats=["markdown"]) == [folder / "report.md"]
    assert not (folder / "report.html").exists()
    with pytest.raises(ValueError, match="unknown report format 'pdf'"):
        render_reports(folder, info(), formats=["html", "pdf"])
    assert not (folder / "report.html").exists()
    assert sorted(p.name for p in folder.iterdir()) == [
        "decisions.jsonl.zst",
        "plan.json",
        "report.md",
    ]


def test_each_cluster_says_how_much_storage_its_changes_give_back(tmp_path: Path) -> None:
    """The clusters table has a Given back column: the sizes of the snapshots the cluster's
    sent destructive changes expire (held ones are not given back)."""
    sized = SnapshotView("s1", NOW - timedelta(hours=30), True, False, NOW + timedelta(days=20))
    sized = msgspec.structs.replace(sized, storage_bytes=3 << 30)
    patch = SnapshotPatch.expire_at(NOW + timedelta(hours=22))
    change = Decision(
        sized, "unkept", "shorten", [note("no-rule", "no keep rule matches")], [],
        NOW + timedelta(hours=22), patch,
    )  # fmt: skip
    page, _ = render(write_run(tmp_path / "run", [cluster("orders", [change])]))

    [row] = [r for r in page.rows["clusters"] if r and r[0].split()[0] == "orders"]
    # Cluster, snapshots, protect, extend, shorten, delete, release, held, advisory, given back
    assert row[9] == "3.0 GiB"


def test_the_notice_says_what_report_md_begins_with(tmp_path: Path) -> None:
    """The run's summary, read once as data, gives the notice the very text report.md begins
    with (up to its first ### heading), byte for byte, for a stopped run with a failure."""
    plan = cluster("orders|*", [shortened(f"s{i}", 30 + i, 500, 22) for i in range(3)])
    d = plan.decisions
    results = [result(plan, d[0], "applied"), result(plan, d[1], "failed", 500, "boom")]
    folder = write_run(tmp_path / "run", [plan], results=results)

    rendered = render_run(folder, info("run", 130))

    markdown = (folder / "report.md").read_text(encoding="utf-8")
    head = markdown[: markdown.index("\n###")].strip()
    outcomes = rendered.summary.outcomes
    assert summary_markdown(rendered.summary) == head
    assert head.startswith("**retention run 1a2b3c4d: exit 130, stopped by SIGINT")
    assert outcomes is not None
    assert (outcomes.count("applied"), outcomes.count("failed")) == (1, 1)
    assert rendered.summary.clusters_with_problems == 1


def test_a_run_summary_needs_no_report_written(tmp_path: Path) -> None:
    """With no format asked, render_run writes no file and still returns the run's summary
    (what a notice needs)."""
    folder = scenario_run(tmp_path)

    rendered = render_run(folder, info(), formats=[])

    assert rendered.paths == []
    assert not (folder / "report.md").exists()
    assert rendered.summary.plan.clusters > 0
    assert rendered.summary.nothing_changed


def test_a_long_cut_is_flagged_in_its_row_and_counted_in_every_summary(tmp_path: Path) -> None:
    """A shorten that takes 306 days off an expiry the snapshot already has says "cut by 306
    days" in its Changes row, and report.html, report.md and the terminal count it; a cut
    of 19 days is not flagged and not counted."""
    far = cluster(
        "prod-billing",
        [shortened("long", 2000, 306 * 24 + 22, 22), shortened("short", 30, 20 * 24 + 22, 22)],
    )
    folder = write_run(tmp_path / "run", [far])
    page, markdown = render(folder)
    plan = open_plan(folder / "plan.json")

    rows = {r[0]: r for r in page.rows["changes"] if r and r[0] in ("long", "short")}
    assert rows["long"][-1] == "2026-11-22 10:00 cut by 306 days"
    assert rows["short"][-1] == "2026-11-22 10:00"
    [change] = [c for _, c in plan.read_candidates() if c["snapshotId"] == "long"]
    assert change.get("cutSeconds") == 306 * 86400
    said = "1 change (sent or held) cuts an expiry the snapshot already has by 30 days or more"
    assert page.text_of("long-cuts").startswith(f"Long cuts: {said}")
    assert f"- Long cuts: {said}" in markdown
    lines = summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path)
    assert f"Long cuts: {said} (explain SNAPSHOT_ID says by how much)." in lines


def test_a_config_servers_advisory_changes_have_their_column(tmp_path: Path) -> None:
    """A config server whose two changes are advisory shows 2 in the ADVISORY column of the
    terminal's table and the Advisory column of report.md, not a row of zeros."""
    to = NOW + timedelta(hours=22)
    advised = [
        Decision(
            snap(f"a{i}", 30 + i, 500),
            "unkept",
            "shorten",
            [],
            [],
            to,
            SnapshotPatch.expire_at(to),
            advisory=True,
        )
        for i in range(2)
    ]
    cfg = ClusterDecisions(
        Target(PROJECT, "c" * 24, "cfg0.legacy.example.net", "config-server"),
        tuple(advised),
        policies=("prod",),
    )
    folder = write_run(tmp_path / "run", [cfg])
    _, markdown = render(folder)
    plan = open_plan(folder / "plan.json")

    lines = summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path)
    header = next(line for line in lines if line.lstrip().startswith("CLUSTER"))
    row = next(line for line in lines if line.lstrip().startswith("cfg0"))
    assert header.split()[-3:] == ["HELD", "ADVISORY", "NOTE"]
    assert row.split()[1:] == ["config-server", "2", "0", "0", "0", "0", "0", "0", "2"]
    assert "| Held | Advisory | Errors |" in markdown
    assert "| cfg0.legacy.example.net | config-server | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 2 | 0 |" in (
        markdown
    )


def test_the_clusters_approve_can_let_through_come_first_under_holds(tmp_path: Path) -> None:
    """A cluster only max_expire_fraction holds is the first card under Holds, before one an
    OPEN alert holds that comes first in the plan: the decision the page is read for."""
    alerted = cluster(
        "a-alerted",
        [shortened("s1", 30, 500, 22, held="held")],
        holds=[Hold("alert", "OPEN alert BAD_CLUSTERSHOTS (a1)", "a1")],
    )
    fraction = cluster(
        "b-fraction",
        [shortened("s2", 30, 500, 22, held="held")],
        holds=[Hold("max_expire_fraction", "1 of 1 would expire (100%)", None)],
    )
    page, markdown = render(write_run(tmp_path / "run", [alerted, fraction]), info("plan", 3))

    assert page.text_of("held-1").startswith("b-fraction ")
    assert page.text_of("held-2").startswith("a-alerted ")
    assert markdown.index("**b-fraction**") < markdown.index("**a-alerted**")


def test_the_terminal_names_the_first_ten_held_clusters_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    """Twelve held clusters: the terminal's summary gives the holds of the first ten and
    one line counting the other two, not a block for each."""
    plans = [
        cluster(
            f"rs-{i:02d}",
            [shortened(f"s{i}", 30, 500, 22, held="too many")],
            holds=[Hold("max_expire_fraction", "too many would expire", None)],
        )
        for i in range(12)
    ]
    plan = open_plan(write_run(tmp_path / "run", plans) / "plan.json")

    lines = summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path)

    held = [line for line in lines if line.startswith("  hold rs-")]
    assert len({line.split(":")[0] for line in held}) == len(held) == 10  # in plan order
    assert "  hold ... and 2 more held clusters: see report.html (Holds) or plan.json" in lines
