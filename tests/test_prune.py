"""Pruning run folders: which ones reports.keep lets go and why (the pure verdicts), what a
folder's files say (survey), and `retention prune` as a user runs it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from retention import cli
from retention.core.policy.duration import RetentionDuration
from retention.core.pruning import FolderFacts, prune_verdicts
from retention.ops.lock import run_lock
from retention.prune.folders import REMOVING, survey
from retention.runfolder.folder import made_at
from tests.support.client import fixed_clock

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
WEEK = RetentionDuration(days=7)


def name(days_ago: float, run_id: str = "0000abcd") -> str:
    """A run folder's name made ``days_ago`` before NOW."""
    return f"{(NOW - timedelta(days=days_ago)).strftime('%Y%m%dT%H%M%SZ')}-{run_id}"


def facts(days_ago: float, **fields: object) -> FolderFacts:
    """A successful folder made ``days_ago`` before NOW, with ``fields`` changed."""
    made = NOW - timedelta(days=days_ago)
    base: dict[str, object] = {"name": name(days_ago), "made": made, "successful": True}
    return FolderFacts(**{**base, **fields})  # type: ignore[arg-type]


def verdicts(*folders: FolderFacts) -> dict[str, tuple[bool, str]]:
    """Each folder's verdict by name: (removed, why)."""
    return {v.name: (v.remove, v.why) for v in prune_verdicts(folders, now=NOW, keep=WEEK)}


def test_folders_older_than_keep_go_and_younger_ones_stay() -> None:
    """A folder older than keep with nothing to undo is removed; one younger stays."""
    found = verdicts(facts(10), facts(3), facts(1))
    assert found[name(10)] == (True, "older than 7d, nothing to undo")
    assert found[name(3)] == (False, "younger than 7d (the keep duration)")


def test_the_newest_successful_run_stays_however_old() -> None:
    """After a month of failed runs the last good one is kept, older folders go."""
    found = verdicts(facts(40), facts(30), facts(20, successful=False))
    assert found[name(30)] == (False, "the newest successful run: always kept")
    assert found[name(40)][0] is True
    assert found[name(20)][0] is True


def test_an_open_undo_window_keeps_an_old_folder_until_it_closes() -> None:
    """A folder whose written expiry is still ahead stays; once it passed, it goes."""
    open_until = NOW + timedelta(hours=5)
    found = verdicts(facts(1), facts(9, undo_until=open_until), facts(8, undo_until=NOW))
    assert found[name(9)] == (False, "its undo window is open until 2026-11-21T17:00:00Z")
    assert found[name(8)] == (True, "older than 7d, nothing left to undo")


def test_a_folder_whose_window_cannot_be_told_stays() -> None:
    """An unreadable journal keeps its folder, saying why."""
    found = verdicts(facts(1), facts(30, undo_unknown="1 journal line cannot be read"))
    assert found[name(30)] == (False, "kept: 1 journal line cannot be read")


def test_verdicts_come_oldest_first_with_names_breaking_ties() -> None:
    """The order is the folders' time, then their name (two runs in one second)."""
    a, b = facts(9, name=name(9, "0000000b")), facts(9, name=name(9, "0000000a"))
    got = [v.name for v in prune_verdicts([facts(1), a, b], now=NOW, keep=WEEK)]
    assert got == [name(9, "0000000a"), name(9, "0000000b"), name(1)]


def test_only_run_folder_names_are_run_folders() -> None:
    """made_at reads the time of a run folder's name and nothing else."""
    assert made_at("20261121T120000Z-0000abcd") == NOW
    for other in ("20261121T120000Z-xyz", "notes", "20261321T120000Z-0000abcd", ".retention.lock"):
        assert made_at(other) is None


# ---- survey: the facts from the files --------------------------------------------------


def journal_line(expires: datetime, outcome: str | None = "applied") -> bytes:
    """One line of an apply journal for a shorten to ``expires`` (an intent without outcome)."""
    line: dict[str, object] = {
        "at": "2026-11-01T00:00:00Z", "projectId": "p1", "clusterId": "c1",
        "clusterName": "prod", "snapshotId": "s1", "action": "shorten", "destructive": True,
        "observed": {"doNotDelete": False, "expires": "2027-01-01T00:00:00Z"},
        "planned": {"expires": expires}, "approved": False,
    }  # fmt: skip
    if outcome is None:
        line.update(intent=True, body={"expires": expires})
    else:
        line.update(body={"expires": expires}, outcome=outcome, status=200, error=None)
    return orjson.dumps(line, option=orjson.OPT_UTC_Z) + b"\n"


def make(reports: Path, folder: str, *files: tuple[str, bytes]) -> Path:
    """A run folder with ``files`` (name, bytes)."""
    path = reports / folder
    path.mkdir(parents=True)
    for file, data in files:
        (path / file).write_bytes(data)
    return path


def test_survey_reads_the_undo_window_and_success_from_the_journal(tmp_path: Path) -> None:
    """A run's window ends at the latest expiry it wrote; a PATCH in doubt (intent without
    outcome) counts, and makes the run unsuccessful; a dry run has nothing to undo."""
    plan = ("plan.json", b"{}")
    late, early = NOW + timedelta(days=2), NOW - timedelta(days=1)
    make(tmp_path, name(9, "00000001"), plan, ("results.jsonl", journal_line(early)))
    make(tmp_path, name(8, "00000002"), plan, ("results.jsonl", journal_line(late, None)))
    make(tmp_path, name(7, "00000003"), plan, ("report.md", b"# dry run"))
    make(tmp_path, name(6, "00000004"), plan, ("results.jsonl", b"{cut short"))
    make(tmp_path, "notes", ("plan.json", b"{}"))
    found = {f.name: f for f in survey(tmp_path)}
    assert sorted(found) == [name(9, "00000001"), name(8, "00000002"), name(7, "00000003"),
                             name(6, "00000004")]  # fmt: skip
    one, two, three, four = (found[n] for n in sorted(found))
    assert (one.undo_until, one.successful) == (early, True)
    assert (two.undo_until, two.successful) == (late, False)
    assert (three.undo_until, three.undo_unknown, three.successful) == (None, None, True)
    assert four.undo_unknown == "1 journal line of results.jsonl cannot be read"
    assert one.size == len(b"{}") + len(journal_line(early))


def test_survey_of_a_missing_reports_folder_is_empty(tmp_path: Path) -> None:
    """No reports folder yet: nothing to prune, no error."""
    assert survey(tmp_path / "reports") == []


# ---- retention prune -------------------------------------------------------------------


@pytest.fixture
def reports(folder: Path) -> Path:
    """A working folder whose retention.yaml keeps 7 days, with four run folders: a dry run
    of 10 days ago, an apply of 9 days ago still undoable, one of 2 days ago, and a user's
    file beside them."""
    (folder / "retention.yaml").write_text(
        "api:\n  base_url: https://ops.example.net/api/public/v1.0\n"
        'targets:\n  - project: "5e2211c17a3e5a48f5497de3"\n'
        "reports:\n  dir: reports/\n  keep: 7d\n"
    )
    (folder / "policies").mkdir()
    reports = folder / "reports"
    plan = ("plan.json", b"{}")
    make(reports, name(10, "0000000a"), plan, ("report.md", b"# a dry run"))
    undoable = journal_line(NOW + timedelta(days=1))
    make(reports, name(9, "0000000b"), plan, ("results.jsonl", undoable))
    make(reports, name(2, "0000000c"), plan, ("results.jsonl", journal_line(NOW)))
    (reports / "README.txt").write_text("mine")
    return reports


def test_prune_dry_run_lists_every_folder_and_removes_nothing(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--dry-run says what would go and why, and leaves every folder."""
    code = cli.main(["prune", "--dry-run"], clock=lambda: NOW)
    out = capsys.readouterr().out
    assert code == 0
    assert f"  remove  {name(10, '0000000a')}  older than 7d, nothing to undo" in out
    assert f"  keep    {name(9, '0000000b')}  its undo window is open until 2026-11-22" in out
    assert "Would remove 1 run folder of 3 in" in out
    assert len(list(reports.iterdir())) == 4


def test_prune_removes_what_keep_lets_go_and_leaves_other_files(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """prune removes the old dry run only; the user's file and the young and undoable
    folders stay; the JSON document says the same; the prune is recorded in the ledger
    beside them."""
    code = cli.main(["prune", "--format", "json"], clock=lambda: NOW)
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["removed"] == [name(10, "0000000a")]
    assert [f["remove"] for f in document["folders"]] == [True, False, False]
    assert sorted(p.name for p in reports.iterdir() if not p.name.startswith(".")) == [
        name(9, "0000000b"), name(2, "0000000c"), "README.txt", "ledger.db"
    ]  # fmt: skip
    assert not list(reports.glob(REMOVING + "*"))


def test_prune_with_keep_on_the_command_line_overrides_the_config(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--keep 1d lets the 2-day-old folder go too (its expiry has passed)."""
    code = cli.main(["prune", "--keep", "1d", "--dry-run", "--format", "json"], clock=lambda: NOW)
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [f["remove"] for f in document["folders"]] == [True, False, False]
    assert document["folders"][2]["why"] == "the newest successful run: always kept"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["prune", "--keep", "week"], "--keep: 'week' is not a duration"),
        (["prune", "--keep", "0d"], "--keep: 0h would remove every folder"),
    ],
)
def test_prune_refuses_a_bad_keep_with_exit_2(
    reports: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """A duration that is not one, or zero, is a usage error and nothing is removed."""
    assert cli.main(argv, clock=lambda: NOW) == 2
    assert message in capsys.readouterr().err
    assert len(list(reports.iterdir())) == 4


def test_prune_without_any_keep_says_where_to_set_it(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No reports.keep and no --keep: exit 2, naming both."""
    config = reports.parent / "retention.yaml"
    config.write_text(config.read_text().replace("  keep: 7d\n", ""))
    assert cli.main(["prune"], clock=lambda: NOW) == 2
    assert "set reports.keep in retention.yaml" in capsys.readouterr().err


def test_prune_waits_for_no_run_and_exits_4_while_one_holds_the_lock(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run in progress holds the lock: prune removes nothing and exits 4."""
    with run_lock(reports, setup_wait=0, clock=fixed_clock):
        assert cli.main(["prune"], clock=lambda: NOW) == 4
    assert len(list(reports.iterdir())) >= 4
    assert name(10, "0000000a") in {p.name for p in reports.iterdir()}


def test_reports_keep_is_checked_when_the_config_loads(
    reports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """reports.keep: 0h is a configuration error (exit 2) naming the field."""
    config = reports.parent / "retention.yaml"
    config.write_text(config.read_text().replace("keep: 7d", "keep: 0h"))
    assert cli.main(["prune", "--dry-run"], clock=lambda: NOW) == 2
    err = capsys.readouterr().err
    assert "reports.keep" in err
    assert "use null to keep them all" in err
