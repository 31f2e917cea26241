"""A run folder's files read back through their models: the journals of an apply and of an
undo, undo.json and interrupted.json, and the names RunFolder knows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from retention.api.client import OpsManagerClient
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.runfiles import UNDO_DOCUMENT
from retention.library.changing import run_job
from retention.runfolder.folder import RunFolder, decisions_path, partial_path
from retention.runfolder.journal import apply_lines, read_apply_journal, undo_lines
from retention.simulator.server import Simulator
from retention.undo.restoring import undo_run
from tests.support.journal import journal_lines
from tests.support.simfleet import NOW, P, client_for

BAD_POLICY = """\
name: typo
match: {clusters: [prod-small]}
keep: {last: 1}
release_protection: true
grace: 24h
safety: {min_keep: 1, max_expire_fraction: 1.0, hold_on_alerts: []}
"""


@pytest.fixture
def api(sim: Simulator) -> Iterator[OpsManagerClient]:
    """A client for the simulator."""
    with client_for(sim) as client:
        yield client


def test_a_run_folder_names_each_of_its_files() -> None:
    """RunFolder knows where each file of a run folder is, and a plan saved under another
    name keeps its decisions beside it under its own name."""
    folder = RunFolder(Path("reports/20261121T030000Z-1a2b3c4d"))

    assert folder.run_id == "1a2b3c4d"
    assert [p.name for p in (folder.plan, folder.decisions, folder.results)] == [
        "plan.json",
        "decisions.jsonl.zst",
        "results.jsonl",
    ]
    assert (folder.undo.name, folder.interrupted.name) == ("undo.json", "interrupted.json")
    assert (folder.report("html").name, folder.report("markdown").name) == (
        "report.html",
        "report.md",
    )
    assert decisions_path(Path("r/review.json")) == Path("r/review.decisions.jsonl.zst")
    assert partial_path(folder.plan).name == "plan.json.partial"


def test_a_new_run_folder_is_named_after_its_utc_start_and_a_fresh_run_id(
    tmp_path: Path,
) -> None:
    """Two folders made in the same second differ by their run ids, and nothing is made on
    disk until a file is written."""
    at = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)

    first, second = RunFolder.new(tmp_path, at), RunFolder.new(tmp_path, at)

    assert first.path.name.startswith("20261121T030000Z-")
    assert first.run_id != second.run_id
    assert len(first.run_id) == 8
    assert not first.path.exists()


def test_every_line_a_run_and_its_undo_journal_reads_back_through_its_model(
    api: OpsManagerClient, tmp_path: Path
) -> None:
    """An apply's journal reads back as intents and outcomes, an undo's as intents and
    items, and undo.json as written: no line of either is unreadable, and neither
    journal's lines read as the other's."""
    (tmp_path / "typo.yaml").write_text(BAD_POLICY)
    scope = Scope(load_policies(tmp_path / "typo.yaml"), [ProjectTargets(P)], concurrency=2)
    run = run_job(api, scope, reports=tmp_path / "reports", dry_run=False, clock=lambda: NOW)
    undo = undo_run(
        api, run.run_dir, reports=tmp_path / "reports", dry_run=False, concurrency=2,
        clock=lambda: NOW + timedelta(hours=1),
    )  # fmt: skip
    applied, undone = RunFolder(run.run_dir), RunFolder(undo.run_dir)

    lines, unreadable = read_apply_journal(applied.results)
    assert unreadable == 0
    assert len(lines) == len(journal_lines(applied.results)) > 0
    assert {"intent" in line for line in lines} == {True, False}
    items = list(undo_lines(undone.results))
    assert None not in items
    assert len(items) == len(journal_lines(undone.results)) > 0
    assert list(apply_lines(undone.results)) == [None] * len(items)
    assert list(undo_lines(applied.results)) == [None] * len(lines)
    assert undone.read_undo() == UNDO_DOCUMENT.validate_python(undo.document)
    assert undone.read_undo()["counts"] == undo.counts


def test_a_journal_line_cut_short_or_of_another_shape_reads_as_unreadable(
    tmp_path: Path,
) -> None:
    """A line cut by a kill, a line that is not an object and an outcome line missing a
    key are counted as unreadable; the readable lines around them still read."""
    path = tmp_path / "results.jsonl"
    good = (
        b'{"at":"2026-11-21T12:00:00Z","projectId":"p","clusterId":"c","clusterName":"n",'
        b'"snapshotId":"s","action":"shorten","destructive":true,'
        b'"observed":{"doNotDelete":false,"expires":null},'
        b'"planned":{"expires":"2026-11-22T12:00:00Z"},"body":null,"outcome":"stale",'
        b'"approved":false,"status":null,"error":"gone"}\n'
    )
    path.write_bytes(good + b"[1, 2]\n" + good.replace(b'"error":"gone"', b'"x":1') + b'{"at')

    lines, unreadable = read_apply_journal(path)

    assert unreadable == 3
    assert [line["snapshotId"] for line in lines] == ["s"]


def test_interrupted_json_reads_back_as_mark_interrupted_wrote_it(tmp_path: Path) -> None:
    """interrupted.json of a command stopped while planning reads back through its model,
    in step plan with no outcomes."""
    started = datetime(2026, 11, 21, tzinfo=UTC)
    path = RunFolder(tmp_path / "stopped").mark_interrupted(
        "dry-run", "SIGTERM", started, started + timedelta(seconds=3)
    )

    document = RunFolder(path.parent).read_interrupted()

    assert document == {
        "format": "retention-interrupted/v1",
        "mode": "dry-run",
        "signal": "SIGTERM",
        "exitCode": 143,
        "startedAt": "2026-11-21T00:00:00Z",
        "stoppedAt": "2026-11-21T00:00:03Z",
        "step": "plan",
        "sent": False,
        "outcomes": None,
    }


def test_an_undo_file_of_another_format_is_refused_on_read(tmp_path: Path) -> None:
    """undo.json is checked on read: a document of another format does not read."""
    folder = RunFolder(tmp_path)
    folder.undo.write_text('{"format": "retention-undo/v2"}\n')

    with pytest.raises(ValidationError):
        folder.read_undo()
