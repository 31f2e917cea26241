"""retention evidence: from a ledger of 60 daily runs written through the recorder, the
coverage with its gap, retention as promised at each month's end, every change with who
and why, the chain, the same numbers in all four formats, and exit 0/3/1/2."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import multiprocessing
import os
import re
import shutil
import signal
import sqlite3
from collections.abc import Generator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text as sql

from retention import cli
from retention.config.ledgerplace import ENV_LEDGER_PASSWORD, ENV_LEDGER_URL, LedgerPlace
from retention.core.model import Target
from retention.core.outside import Retained
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.engine import evaluate
from retention.core.policy.model import Policy
from retention.core.policy.spec import Item
from retention.errors import LedgerError, StopRequestedError
from retention.evidence.beside import NAME, verifying
from retention.evidence.coverage import Check, coverage
from retention.evidence.model import DOCUMENT, evidence_json_schema, generated_schema
from retention.evidence.promise import History, Point, checks
from retention.evidence.render import csv_cell
from retention.ledger.database import open_ledger
from retention.ledger.keeping import prune_ledger
from retention.ledger.recorder import RunEnd, RunRecord, RunStart, Sent
from retention.library import evidence as evidence_job
from retention.library.evidence import EvidenceRequest
from retention.library.retention import Retention
from retention.library.stages import Quiet
from retention.ops.stopping import Stop
from tests.support.evidenced import (
    FIRST,
    POLICY,
    Fleet,
    day_at,
    generate,
    generate_gone,
    plan_day,
    protect,
)
from tests.support.ledgers import ledger_place_for
from tests.support.simfleet import P

A = Target(P, "c-aaa", "prod-a")
B = Target(P, "c-bbb", "prod-b")
C = Target(P, "c-ccc", "prod-c")
DAYS = 60
LAST = FIRST + timedelta(days=DAYS - 1)  # 2026-09-29
STOPPED = (date(2026, 8, 10), date(2026, 8, 14))
TODAY = datetime(2026, 10, 5, 12, tzinfo=UTC)


def config(folder: Path) -> None:
    """retention.yaml naming the ledger file (the API is never asked)."""
    (folder / "retention.yaml").write_text(
        "api:\n  base_url: http://127.0.0.1:9/api/public/v1.0\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nreports:\n  dir: reports/\n'
    )
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "gfs.yaml").write_text(POLICY)


@pytest.fixture(scope="module")
def sixty_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 daily runs of three clusters: prod-a healthy; prod-b's backups stopped from
    2026-08-10 to 2026-08-14; prod-c's snapshot of 2026-08-20 deleted by someone else
    before day 20's run and its snapshot of 2026-08-27 before day 28's, and on day 40 a
    protect of prod-a approved by alice. Written once; each test gets a copy."""
    file = tmp_path_factory.mktemp("evidence") / "ledger.db"
    write_sixty_days(LedgerPlace(f"sqlite:///{file}"))
    return file


def write_sixty_days(place: LedgerPlace) -> None:
    """The sixty days (``sixty_days``) into the ledger at ``place``."""
    fleet = Fleet([A, B, C], stopped={"prod-b": STOPPED})
    with open_ledger(place) as ledger:
        generate(
            ledger,
            fleet,
            DAYS,
            outside_on={20: ("prod-c", "c-ccc-20260820"), 28: ("prod-c", "c-ccc-20260827")},
            approved_on={40: ("prod-a", "c-aaa-20260801", "alice")},
        )


@pytest.fixture
def ledgered(folder: Path, sixty_days: Path) -> Path:
    """The working folder, its configuration and a copy of the sixty days' ledger."""
    config(folder)
    (folder / "reports").mkdir()
    shutil.copyfile(sixty_days, folder / "reports" / "ledger.db")
    return folder


def evidence(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The command at TODAY: its exit code and what it printed."""
    code = cli.main(["evidence", *args], clock=lambda: TODAY)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def written(folder: Path, fmt: str) -> str:
    """The evidence file of the whole period in ``fmt``."""
    return (folder / "out" / f"evidence-{FIRST}-{LAST}.{fmt}").read_text()


def test_coverage_retention_changes_and_chain_of_sixty_days(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A healthy cluster covers 60 of 60 days; one whose backups stopped five days shows
    the gap with its dates; the outside deletions are listed with their values and the
    one that took a promised daily point is why its month's end missed; alice's approval
    is listed with the change it sent; the chain holds; exit 3, what missed listed first."""
    code, out = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--format", "json",
                         "--out", "out")  # fmt: skip
    doc = json.loads(written(ledgered, "json"))
    DOCUMENT.validate_python(doc)  # what is written is what the shipped schema says

    assert code == 3
    cov = {c["name"]: c for c in doc["coverage"]}
    assert (cov["prod-a"]["daysMet"], cov["prod-a"]["daysInScope"]) == (60, 60)
    assert cov["prod-a"]["strip"] == "#" * 60
    # No snapshot from 08-10 to 08-14: the 03:00 runs of 08-11 .. 08-14 find the newest
    # (08-09 01:00) older than the 36 h expected; the run of 08-10 finds it 26 h old, and
    # the one of 08-15 finds that day's, 2 h old.
    assert cov["prod-b"]["longestGap"] == {"from": "2026-08-11", "to": "2026-08-14", "days": 4}
    assert cov["prod-b"]["stale"] == [{"from": "2026-08-11", "to": "2026-08-14", "days": 4}]
    assert cov["prod-b"]["daysMet"] == 56

    outside = doc["changes"]["outside"]
    assert [(o["cluster"], o["snapshotId"], o["kind"], o["at"]) for o in outside] == [
        ("prod-c", "c-ccc-20260820", "deleted-early", "2026-08-21T03:00:00Z"),
        ("prod-c", "c-ccc-20260827", "deleted-early", "2026-08-29T03:00:00Z"),
    ]
    assert outside[0]["before"] == {"complete": True, "doNotDelete": False, "expires": None}

    [sent] = doc["changes"]["log"]
    assert sent["snapshotId"] == "c-aaa-20260801"
    assert (sent["action"], sent["outcome"], sent["approval"]) == ("protect", "sent", "alice")
    assert (sent["policy"], sent["why"]) == ("gfs", "protect: monthly snapshot")
    assert sent["before"] == {"expires": None, "doNotDelete": False}
    assert sent["after"] == {"expires": None, "doNotDelete": True}
    assert {a["actor"]: a["roles"] for a in doc["scope"]["actors"]}["alice"] == ["approved"]

    ret = {r["name"]: r for r in doc["retention"]}
    daily_c = [c for c in ret["prod-c"]["checks"] if c["rule"] == "keep.daily"]
    assert [(c["at"], c["status"], c["had"]) for c in daily_c] == [
        ("2026-08-31", "missed", 6),
        ("2026-09-29", "met", 7),
    ]
    assert daily_c[0]["missing"][0]["snapshotId"] == "c-ccc-20260827"
    assert daily_c[0]["missing"][0]["why"].startswith("a change outside retention (deleted-early")
    monthly_a = [c for c in ret["prod-a"]["checks"] if c["rule"] == "keep.monthly"]
    # Aug 31: one month made (short), Sep 29: two of three: history too short, not missed.
    assert [(c["at"], c["promised"], c["had"], c["status"]) for c in monthly_a] == [
        ("2026-08-31", 1, 1, "short"),
        ("2026-09-29", 2, 2, "short"),
    ]

    assert [(n["section"], n["cluster"]) for n in doc["notMet"]] == [
        ("coverage", "prod-b"),
        ("retention", "prod-c"),
    ]
    assert doc["chain"]["verified"] is True
    assert doc["chain"]["shards"][0]["records"] == 60
    assert out.index("Not met (2)") < out.index("Chain: holds")


def test_the_four_formats_carry_the_same_numbers(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HTML, Markdown, JSON and CSV from one document: the coverage, the counts of changes
    and the chain's head are the same in each; the CSV has every change."""
    formats = [a for fmt in ("html", "md", "json", "csv") for a in ("--format", fmt)]
    evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--out", "out", *formats)
    doc = json.loads(written(ledgered, "json"))
    html, md = written(ledgered, "html"), written(ledgered, "md")
    rows = list(csv.DictReader(io.StringIO(written(ledgered, "csv"))))

    assert [(r["by"], r["snapshotId"]) for r in rows] == [
        ("retention", "c-aaa-20260801"),
        ("outside", "c-ccc-20260820"),
        ("outside", "c-ccc-20260827"),
    ]
    assert doc["changes"]["count"] == len(doc["changes"]["log"]) == 1
    head = doc["chain"]["shards"][0]["headAtEnd"]
    for text in (html, md):
        assert head in text
        assert "56 / 60" in text  # prod-b's coverage
        assert "2026-08-11 to 2026-08-14" in text
        assert "1 change sent by retention (1 protect)" in text
        assert "keep.daily 7: met on 1 of 2 ends; 2026-08-31 had 6 of 7" in text
    assert "<script" not in html
    assert re.search(r"Not met \(2\)", html)
    assert "Not met (2)" in md


def test_a_ledger_edited_by_hand_breaks_the_chain_and_exits_1(
    ledgered: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event whose values were changed in the database: the chain section says the
    chain does not hold, naming the run, and the command exits 1; verified in the process
    beside the reading, as a large ledger's chain is."""
    monkeypatch.setattr(evidence_job, "BESIDE", 0)
    with sqlite3.connect(ledgered / "reports" / "ledger.db") as db:
        db.execute(
            "UPDATE ledger_events SET after = '{\"doNotDelete\":true}' WHERE kind = 'deleted-early'"
        )
    code, out = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--format", "json",
                         "--out", "out")  # fmt: skip
    doc = json.loads(written(ledgered, "json"))

    DOCUMENT.validate_python(doc)
    assert code == 1
    assert doc["chain"]["verified"] is False
    assert "run-020" in doc["chain"]["brokenAt"]
    assert doc["notMet"][0]["section"] == "chain"
    assert "does NOT hold" in out
    assert {c["control"]: c["status"] for c in doc["controls"]}["SEC 17a-4(f) audit trail"] == (
        "not evidenced"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--from", "2026-10-01", "--to", "2026-10-09"], "--to 2026-10-09 is in the future"),
        (["--from", "2026-09-01", "--to", "2026-08-01"], "is before --from"),
        (["--from", "2026-08-01", "--to", "2026-08-31", "--clusters", "stage-*"], "'stage-*'"),
        (["--from", "2026-05-01", "--to", "2026-05-31"], "no run in 2026-05-01 .. 2026-05-31"),
    ],
)
def test_bad_input_is_exit_2_and_named(
    ledgered: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """A period in the future or backwards, a glob that matches nothing, a period with no
    run: exit 2, and the message names what is wrong; nothing is written."""
    code, out = evidence(capsys, *args, "--out", "out")

    assert code == 2
    assert said in out
    assert not (ledgered / "out").exists()


def test_no_ledger_is_exit_2_and_makes_none(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Evidence with no ledger where the configuration says: exit 2, and no file made."""
    config(folder)
    code, out = evidence(capsys, "--from", "2026-08-01", "--to", "2026-08-31")

    assert code == 2
    assert "no ledger there" in out
    assert not (folder / "reports" / "ledger.db").exists()


def test_coverage_counts_days_and_finds_the_longest_gap() -> None:
    """Days before the cluster was first seen are out of scope; a day with no run and
    stale days are gaps; a day with a fresh check is met."""
    days = [date(2026, 1, d) for d in range(1, 11)]
    found = [Check(date(2026, 1, d), stale=d in (5, 6)) for d in (2, 3, 5, 6, 8, 9, 10)]
    cov = coverage(days, found, first=date(2026, 1, 2), gone=None)

    assert cov.strip == " ##.SS.###"
    assert (cov.met, cov.in_scope) == (5, 9)
    gap = cov.longest_gap
    assert gap is not None
    assert (gap.first, gap.last, gap.days) == (date(2026, 1, 4), date(2026, 1, 7), 4)


def test_a_bucket_is_had_while_any_of_its_points_is_there() -> None:
    """monthly: a month whose newest point went still counts while an older point of it
    is there; a month with none left is missed and names its newest point."""
    policy = Policy.model_validate({"name": "m", "keep": {"monthly": 3}})

    def t(month: int, day: int) -> datetime:
        return datetime(2026, month, day, tzinfo=UTC)

    points = [
        Point("jan-a", t(1, 10), None),
        Point("jan-b", t(1, 20), t(2, 1)),  # went: jan-a still holds January
        Point("feb", t(2, 10), t(3, 15)),  # went mid-March: February empty at March's end
        Point("mar", t(3, 10), None),
    ]
    [check] = checks(policy, History(points), t(4, 1))

    assert (check.promised, check.had, check.status) == (3, 2, "missed")
    assert [(m.bucket, m.snapshot_id) for m in check.missing] == [("month 2026-02", "feb")]


def test_within_promises_what_the_engine_keeps_to_the_edge() -> None:
    """keep.within 60d promises the points the engine keeps with that rule, no more: a
    point made exactly 60 days before the newest is not kept, so its expiry at that
    moment is not a miss (the year benchmark flagged every cluster for it)."""
    policy = Policy.model_validate({"name": "w", "keep": {"within": "60d"}})
    start = datetime(2025, 1, 1, tzinfo=UTC)
    made = [start + timedelta(hours=6 * n) for n in range(4 * 90)]
    moment = made[-1] + timedelta(hours=3)
    edge = made[-1] - timedelta(days=60)
    # Each point lives 60 days, so the one at the edge went as the newest was made.
    points = [Point(f"s{n}", at, at + timedelta(days=60)) for n, at in enumerate(made)]
    [check] = checks(policy, History(points), moment)
    items = [Item(p.snapshot_id, p.created) for p in points if p.there_at(moment)]
    kept = evaluate(items, policy.keep_spec(), moment).keep

    assert edge in made
    assert (check.promised, check.had, check.status) == (240, 240, "met")
    assert check.promised == len(kept)


def test_the_shipped_schema_is_the_one_generated_from_the_model() -> None:
    """evidence.schema.json is generated from the typed model: regenerate it with
    `python -m retention.evidence.model` when the model changes."""
    assert evidence_json_schema() == json.loads(json.dumps(generated_schema()))


def test_an_edited_policy_text_breaks_the_evidence_and_exits_1(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy text changed in the database no longer hashes to the sha256 the runs
    recorded: it is not read as the policy, the chain section names it, exit 1."""
    with sqlite3.connect(ledgered / "reports" / "ledger.db") as db:
        db.execute("UPDATE ledger_policies SET text = replace(text, 'daily: 7', 'daily: 1')")
    code, _ = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--format", "json",
                       "--out", "out")  # fmt: skip
    doc = json.loads(written(ledgered, "json"))

    assert code == 1
    assert doc["chain"]["verified"] is False
    assert [a["path"] for a in doc["chain"]["policyTexts"]["altered"]] == ["policies/gfs.yaml"]
    assert doc["notMet"][0]["section"] == "chain"
    assert all(r["policiesWithoutText"] == ["gfs"] for r in doc["retention"])


def test_after_ledger_keep_the_heads_start_at_the_anchor_and_pruned_days_are_out(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ledger.keep removed the runs up to 2026-08-21: the chain's head at the period's
    start is the anchor the pruning run recorded, and the days before the oldest run left
    are out of scope, not gaps (prod-b's stop went with them)."""
    place = LedgerPlace(f"sqlite:///{ledgered / 'reports' / 'ledger.db'}")
    now = datetime(2026, 9, 30, 5, tzinfo=UTC)
    with open_ledger(place) as ledger:
        record = RunRecord.begin(ledger, RunStart("pruning", "prune", "", now, "tester"))
        prune_ledger(ledger, RetentionDuration.parse("40d"), now, record)
        record.finish(RunEnd(now, 0))
        with ledger.reading("test") as conn:
            [(anchor,)] = conn.execute(sql("SELECT hash FROM ledger_anchors")).all()
    code, _ = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--format", "json",
                       "--out", "out")  # fmt: skip
    doc = json.loads(written(ledgered, "json"))

    assert doc["chain"]["verified"] is True
    assert doc["chain"]["shards"][0]["headAtStart"] == anchor
    cov = {c["name"]: c for c in doc["coverage"]}
    assert cov["prod-b"]["strip"] == " " * 21 + "#" * 39
    assert (cov["prod-b"]["daysMet"], cov["prod-b"]["daysInScope"]) == (39, 39)
    assert code == 3  # prod-c's deletion of 08-29 is still in the period


def test_a_sqlite_ledger_is_read_without_a_byte_changed(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of a backup in rollback-journal mode: evidence reads it and leaves it byte
    for byte as it was (no WAL switch, no journal, nothing written)."""
    file = ledgered / "reports" / "ledger.db"
    with sqlite3.connect(file) as db:
        db.execute("PRAGMA journal_mode=DELETE")
    before = hashlib.sha256(file.read_bytes()).hexdigest()
    code, _ = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--out", "out")

    assert code == 3
    assert hashlib.sha256(file.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in file.parent.iterdir()) == ["ledger.db"]


def test_a_cluster_that_lost_every_snapshot_is_stale_not_unchecked(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With nothing expected a plan checks no freshness of a cluster with no snapshot:
    once its last snapshot went (deleted by someone on day 5 and backups stopped), its
    days are stale, not "nothing expected", and the evidence exits 3."""
    config(folder)
    fleet = Fleet([A], stopped={"prod-a": (date(2026, 8, 5), date(2026, 8, 31))}, expected=False)
    with open_ledger(LedgerPlace(f"sqlite:///{folder / 'reports' / 'ledger.db'}")) as ledger:
        generate_gone(ledger, fleet, 10, {5: "prod-a"})
    code, _ = evidence(capsys, "--from", str(FIRST), "--to", "2026-08-10", "--format",
                         "json", "--out", "out")  # fmt: skip
    doc = json.loads((folder / "out" / f"evidence-{FIRST}-2026-08-10.json").read_text())

    assert code == 3
    assert doc["coverage"][0]["strip"] == "#####SSSSS"


def test_a_password_in_the_urls_query_is_never_shown() -> None:
    """libpq takes ?password=: the URL every output shows has neither it nor the one
    after the user."""
    place = LedgerPlace("postgresql://u:pw@db:5432/r?password=TopSecret&sslmode=require")

    assert place.shown == "postgresql://u:***@db:5432/r?sslmode=require"


def test_a_change_whose_run_was_killed_after_its_intent_is_listed_pending(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An apply killed between writing what it was about to send and how it ended: its
    change is in the log as pending (counted, in the JSON and the CSV), and the run is
    listed as never finished."""
    place = LedgerPlace(f"sqlite:///{ledgered / 'reports' / 'ledger.db'}")
    at = datetime(2026, 9, 29, 5, tzinfo=UTC)
    with open_ledger(place) as ledger:
        record = RunRecord.begin(ledger, RunStart("killed-apply", "apply", "", at, "bob"))
        change = Sent(P, C.cluster_id, "c-ccc-20260928", "shorten", Retained(True, at, False))
        record.intend([change], at)  # and then kill -9: no outcome, no end
    evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--out", "out",
             "--format", "json", "--format", "csv")  # fmt: skip
    doc = json.loads(written(ledgered, "json"))
    rows = list(csv.DictReader(io.StringIO(written(ledgered, "csv"))))

    pending = [ch for ch in doc["changes"]["log"] if ch["outcome"] == "pending"]
    assert [(ch["snapshotId"], ch["actor"], ch["action"]) for ch in pending] == [
        ("c-ccc-20260928", "bob", "shorten")
    ]
    assert doc["changes"]["count"] == 2
    assert [r["outcome"] for r in rows if r["by"] == "retention"] == ["sent", "pending"]
    assert any("killed-apply" in u for u in doc["chain"]["unfinished"])


def test_clusters_of_one_name_in_two_projects_are_counted_apart(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two projects may each have a prod-a: the changes sent to each are counted apart,
    each named by its project and cluster id, in the JSON and the HTML."""
    twin = Target("5e2211c17a3e5a48f5497de4", "c-twin", "prod-a")
    fleet = Fleet([twin])
    fleet.take(LAST)
    with open_ledger(LedgerPlace(f"sqlite:///{ledgered / 'reports' / 'ledger.db'}")) as ledger:
        record = plan_day(ledger, fleet, LAST, 999)
        protect(record, fleet, "prod-a", f"c-twin-{LAST:%Y%m%d}", "bob", day_at(LAST, 5))
        record.finish(RunEnd(day_at(LAST, 5), 0))
    evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--out", "out",
             "--format", "json", "--format", "html")  # fmt: skip
    doc = json.loads(written(ledgered, "json"))

    assert [(c["name"], c["projectId"], c["clusterId"], c["byAction"])
            for c in doc["changes"]["byCluster"]] == [
        ("prod-a", P, "c-aaa", {"protect": 1}),
        ("prod-a", twin.project_id, "c-twin", {"protect": 1}),
    ]  # fmt: skip
    assert doc["changes"]["sent"] == 2
    assert f"{twin.project_id} / c-twin" in written(ledgered, "html")


class Steps(Quiet):
    """A progress that keeps what the evidence said of its steps."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, object]] = []

    def sections(self, total: int) -> None:
        """The evidence starts."""
        self.heard.append(("sections", total))

    def section(self, under_way: str) -> None:
        """One more step done."""
        self.heard.append(("section", under_way))


def test_the_evidence_says_its_steps_to_whoever_shows_progress(ledgered: Path) -> None:
    """A year takes half a minute: the job says its steps as each starts (what a
    terminal draws as a bar), the last ending with nothing under way; with a JSON or a
    CSV the change log is written first, while the chain is verified."""
    heard = {}
    for formats in (("html",), ("html", "csv")):
        steps = Steps()
        library = Retention(ledgered / "retention.yaml", clock=lambda: TODAY, progress=steps)
        ended = library.evidence(
            EvidenceRequest(FIRST, LAST, formats=formats, out=ledgered / "out")
        )
        assert ended.code == 3
        heard[formats] = steps.heard

    making = ("section", "making the document: coverage, ladders, changes, the chain")
    writing = ("section", "writing the files")
    assert heard[("html",)] == [("sections", 3), making, writing, ("section", "")]
    assert heard[("html", "csv")] == [
        ("sections", 4),
        ("section", "writing the change log"),
        making,
        writing,
        ("section", ""),
    ]


def test_the_evidence_of_a_postgresql_ledger_is_the_sqlite_ones(
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """The same sixty days written into PostgreSQL (its password from the environment, as a
    CronJob's Secret gives it), the chain verified in the process beside the reading: the
    same coverage, findings, changes and exit code as from the SQLite ledger."""
    place = ledger_place_for(request, "postgresql")
    monkeypatch.setenv(ENV_LEDGER_URL, place.url)
    monkeypatch.setenv(ENV_LEDGER_PASSWORD, place.password or "")
    monkeypatch.setattr(evidence_job, "BESIDE", 0)
    config(folder)
    write_sixty_days(place)
    code, out = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--format", "json",
                         "--out", "out")  # fmt: skip
    doc = json.loads(written(folder, "json"))

    assert code == 3, out
    assert place.password is None or place.password not in out + written(folder, "json")
    assert [(n["section"], n["cluster"]) for n in doc["notMet"]] == [
        ("coverage", "prod-b"),
        ("retention", "prod-c"),
    ]
    assert {c["name"]: c["daysMet"] for c in doc["coverage"]} == {
        "prod-a": 60,
        "prod-b": 56,
        "prod-c": 60,
    }
    assert doc["changes"]["count"] == 1
    assert len(doc["changes"]["outside"]) == 2
    assert doc["chain"]["verified"] is True
    assert doc["chain"]["shards"][0]["records"] == 60


@given(st.text())
def test_a_csv_cell_reads_back_as_itself_and_never_as_a_formula(value: str) -> None:
    """Any text (commas, quotes, line ends, a leading "=" or "@") reads back as itself,
    one a spreadsheet would take for a formula with a leading apostrophe; written as
    csv.writer writes it, but for a carriage return, which csv.writer leaves unquoted
    when lines end in "\\n" (and a reader then splits the row there)."""
    safe = "'" + value if value.startswith(("=", "+", "-", "@", "\t", "\r")) else value
    line = csv_cell(value) + ",x\n"
    expected = io.StringIO()
    csv.writer(expected, lineterminator="\n").writerow([safe, "x"])

    assert list(csv.reader(io.StringIO(line))) == [[safe, "x"]]
    if "\r" not in value:
        assert line == expected.getvalue()


def test_the_files_hold_the_bytes_the_stream_does(
    ledgered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON and the CSV written to --out DIR (the change log first, the JSON's entries
    spilled to a temporary file and copied in) are byte for byte what --out - streams
    (the document first)."""
    period = ("--from", str(FIRST), "--to", str(LAST))
    evidence(capsys, *period, "--format", "json", "--format", "csv", "--out", "out")
    for fmt in ("json", "csv"):
        code = cli.main(["evidence", *period, "--format", fmt, "--out", "-"], clock=lambda: TODAY)
        streamed = capsys.readouterr().out

        assert code == 3
        assert streamed == written(ledgered, fmt)


def test_a_failure_while_making_the_document_leaves_no_file(
    ledgered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The change log is written before the document is made: when making it fails (the
    chain's process died, say), nothing is left in --out, not even the full CSV's
    temporary file."""

    def died(*args: object) -> dict[str, object]:
        raise RuntimeError("the chain's process died")

    monkeypatch.setattr(evidence_job, "document", died)
    library = Retention(ledgered / "retention.yaml", clock=lambda: TODAY)
    request = EvidenceRequest(FIRST, LAST, formats=("json", "csv"), out=ledgered / "out")

    with pytest.raises(RuntimeError, match="process died"):
        library.evidence(request)
    assert list((ledgered / "out").iterdir()) == []


Entries = Generator[dict[str, Any], None, None]


@pytest.mark.usefixtures("ctrl_c")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_the_change_log_is_written_ends_the_evidence_and_its_files(
    ledgered: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    signum: signal.Signals,
) -> None:
    """Ctrl-C or SIGTERM while the change log is written (the chain verified in its own
    process meanwhile): the evidence stops there with 130 or 143, the process verifying
    the chain is ended rather than waited for, and nothing is left in --out."""
    monkeypatch.setattr(evidence_job, "BESIDE", 0)
    stoppable = evidence_job._stoppable

    def signalled(log: Entries, stop: Stop) -> Entries:
        def entries() -> Entries:
            os.kill(os.getpid(), signum)
            yield from log

        return stoppable(entries(), stop)

    monkeypatch.setattr(evidence_job, "_stoppable", signalled)
    code, out = evidence(capsys, "--from", str(FIRST), "--to", str(LAST), "--out", "out",
                         "--format", "json", "--format", "csv")  # fmt: skip

    assert code == 128 + signum
    assert f"{signal.Signals(signum).name}: stopped before writing the change log" in out
    assert list((ledgered / "out").iterdir()) == []
    assert not [p for p in multiprocessing.active_children() if p.name == NAME]


def test_a_verification_whose_process_died_is_an_error_not_a_wait(ledgered: Path) -> None:
    """The process verifying the chain killed (for its memory, say) before it answered:
    the wait for its answer ends in a LedgerError that says so, not in a wait for ever."""
    place = LedgerPlace(f"sqlite:///{ledgered / 'reports' / 'ledger.db'}")
    with verifying(place, Stop()) as answer:
        [child] = [p for p in multiprocessing.active_children() if p.name == NAME]
        child.kill()  # at once: a spawned interpreter takes far longer to start
        child.join()
        with pytest.raises(LedgerError, match="its process ended without an answer"):
            answer()
    assert not [p for p in multiprocessing.active_children() if p.name == NAME]


def test_a_stop_that_reached_the_verifying_process_too_is_a_stop(ledgered: Path) -> None:
    """A Ctrl-C reaches the whole process group: when the process verifying the chain
    ended with it, the wait for its answer is a stop (exit 130), not a failure (exit 1)."""
    place = LedgerPlace(f"sqlite:///{ledgered / 'reports' / 'ledger.db'}")
    stop = Stop()
    with verifying(place, stop) as answer:
        [child] = [p for p in multiprocessing.active_children() if p.name == NAME]
        stop.request(signal.SIGINT)
        child.kill()
        child.join()
        with pytest.raises(StopRequestedError) as stopped:
            answer()
    assert stopped.value.exit_code == 130


def test_a_verification_that_failed_in_its_process_says_why(folder: Path) -> None:
    """A failure in the verifying process (here: no ledger where it looks) comes back to
    the evidence as a LedgerError naming what went wrong."""
    place = LedgerPlace(f"sqlite:///{folder / 'nowhere.db'}")
    with verifying(place, Stop()) as answer, pytest.raises(LedgerError) as failed:
        answer()
    assert str(failed.value).startswith("verifying the ledger's chain: ")
    assert "nowhere.db" in str(failed.value)
