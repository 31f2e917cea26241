"""A command that fails before its plan is written (a refused key, a wrong port) leaves no run
folder behind, so `retention undo "$(ls -d reports/*/ | tail -1)"` finds the last real run;
and a folder without a plan (an empty one an older version left, a plan a signal stopped)
is said for what it is by undo, explain, apply and prune. Against the simulator over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.errors import EXIT_UNREACHABLE, EXIT_USAGE
from retention.runfolder.folder import RunFolder
from retention.simulator.server import Simulator
from tests.support.simfleet import KEY, shorten_small_in
from tests.support.wire_server import closed_port

EMPTY = "20261121T110000Z-0badf01d"  # an hour before the simulator's NOW
SAID = "is an empty run folder, left by a plan or run that failed before it wrote its plan"


def run_folders(folder: Path) -> list[str]:
    """The names of the run folders under the working folder's reports/, oldest first."""
    reports = folder / "reports"
    return sorted(path.name for path in reports.iterdir() if path.is_dir())


def applied_run(folder: Path, sim: Simulator, capsys: pytest.CaptureFixture[str]) -> str:
    """A run that shortened prod-small for real; its run folder's name."""
    shorten_small_in(folder, sim.base_url, "typo")
    assert cli.main(["run", "--format", "json"], clock=sim.clock.now) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return Path(document["runDir"]).name


def test_a_plan_and_a_run_whose_key_is_refused_leave_no_run_folder(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refused key ends plan and run with exit 5 and no new run folder: the last folder
    is still the run before them."""
    before = applied_run(folder, sim, capsys)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "not-the-key")

    plan = cli.main(["plan"], clock=sim.clock.now)
    run = cli.main(["run"], clock=sim.clock.now)

    assert (plan, run) == (EXIT_UNREACHABLE, EXIT_UNREACHABLE)
    assert "refused the credentials" in capsys.readouterr().err
    assert run_folders(folder) == [before]


@pytest.mark.usefixtures("instant_retries")
def test_a_plan_against_a_wrong_port_leaves_no_run_folder(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing listening at the base URL: exit 5, and the reports folder has only the
    folder of the run before."""
    before = applied_run(folder, sim, capsys)
    monkeypatch.setenv("RETENTION_BASE_URL", f"http://127.0.0.1:{closed_port()}/api/public/v1.0")

    assert cli.main(["plan"], clock=sim.clock.now) == EXIT_UNREACHABLE
    assert "cannot reach the API" in capsys.readouterr().err
    assert run_folders(folder) == [before]


def test_an_undo_whose_key_is_refused_leaves_no_run_folder(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An undo refused by the API before its first snapshot was read is exit 5 and leaves no
    folder (it had an empty results.jsonl), so undoing the last folder again still works."""
    run = applied_run(folder, sim, capsys)
    reports = folder / "reports"
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "not-the-key")

    assert cli.main(["undo", str(reports / run)], clock=sim.clock.now) == EXIT_UNREACHABLE
    assert run_folders(folder) == [run]

    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
    capsys.readouterr()
    last = str(reports / run_folders(folder)[-1])  # ls -d reports/*/ | tail -1
    assert cli.main(["undo", last, "--format", "json"], clock=sim.clock.now) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"restored": 2}


def test_undo_explain_apply_and_prune_say_what_an_empty_run_folder_is(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty run folder (as a failed plan left before) is exit 2 for undo, explain --plan
    and apply, each saying it is empty and nothing was sent from it (undo naming the
    newest run to undo instead); prune lists it with the same words, in text and JSON."""
    run = applied_run(folder, sim, capsys)
    sent = len(sim.admin("patches")["patches"])
    reports = folder / "reports"
    empty = reports / EMPTY
    empty.mkdir()
    (folder / "retention.yaml").write_text(
        (folder / "retention.yaml").read_text() + "reports:\n  keep: 30d\n"
    )

    undo = cli.main(["undo", str(empty)], clock=sim.clock.now)
    undo_err = capsys.readouterr().err
    explain = cli.main(["explain", "noexpiry", "--plan", str(empty)], clock=sim.clock.now)
    explain_err = capsys.readouterr().err
    apply = cli.main(["apply", str(empty)], clock=sim.clock.now)
    apply_err = capsys.readouterr().err
    assert cli.main(["prune", "--dry-run"], clock=sim.clock.now) == 0
    prune_out = capsys.readouterr().out
    assert cli.main(["prune", "--dry-run", "--format", "json"], clock=sim.clock.now) == 0
    folders = json.loads(capsys.readouterr().out)["folders"]

    assert (undo, explain, apply) == (EXIT_USAGE, EXIT_USAGE, EXIT_USAGE)
    assert f"{empty} {SAID}" in undo_err
    assert "nothing was sent from it, so there is nothing to undo" in undo_err
    assert f"The newest run folder that applied changes:\n  retention undo {reports / run}" in (
        undo_err
    )
    assert f"--plan {empty} {SAID}" in explain_err
    assert "is a directory" not in explain_err
    assert f"{empty} {SAID}" in apply_err
    assert f"  keep    {EMPTY}  younger than 30d (the keep duration); it {SAID}" in prune_out
    what = {entry["name"]: entry["what"] for entry in folders}
    assert what[EMPTY].startswith(SAID.removeprefix("is "))
    assert what[run] is None
    assert len(sim.admin("patches")["patches"]) == sent


def test_a_plan_stopped_while_planning_is_said_for_what_it_is(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder holding only interrupted.json (a plan stopped by SIGINT) is named as such by
    prune and explain --plan, as undo already did."""
    shorten_small_in(folder, sim.base_url, "typo")
    stopped = RunFolder(folder / "reports" / EMPTY)
    stopped.mark_interrupted("plan", "SIGINT", sim.clock.now(), sim.clock.now())
    (folder / "retention.yaml").write_text(
        (folder / "retention.yaml").read_text() + "reports:\n  keep: 30d\n"
    )

    explain = cli.main(["explain", "noexpiry", "--plan", str(stopped.path)], clock=sim.clock.now)
    explain_err = capsys.readouterr().err
    assert cli.main(["prune", "--dry-run"], clock=sim.clock.now) == 0
    prune_out = capsys.readouterr().out

    said = "a plan that SIGINT stopped while planning: no plan was written and nothing was sent"
    assert explain == EXIT_USAGE
    assert f"--plan {stopped.path} is {said}" in explain_err
    assert f"{EMPTY}  younger than 30d (the keep duration); it is {said}" in prune_out
