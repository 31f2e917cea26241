"""The lifecycle called as a library, with no command line: a job's reports, notice,
metrics and run-finished event come from the lifecycle itself, and it prints nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from retention.library.changing import RunJob, UndoJob
from retention.library.ending import MetricsTarget
from retention.library.lifecycle import Setup, run_lifecycle
from retention.library.requests import RunRequest, UndoRequest
from retention.ops.logs import RUN_LOGGER
from retention.simulator.server import Simulator
from tests.support.notices import Receiver
from tests.test_notify import write_config


@pytest.fixture(autouse=True)
def no_log_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No handler an earlier command set up (on a stream since closed) writes this test's
    log records: what reaches stdout and stderr is the lifecycle's own doing."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])


def test_a_run_called_as_a_library_writes_its_reports_sends_its_notice_and_prints_nothing(
    sim: Simulator,
    folder: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """run_lifecycle(RunJob(RunRequest())) plans and applies, writes report.html and
    report.md into its run folder, sends the notice, writes the metrics, logs one
    run-finished event and returns the exit code with the result; stdout and stderr stay
    empty."""
    config = write_config(folder, sim.base_url, [receiver.url])
    metrics = folder / "m.prom"
    setup = Setup(config_path=config, clock=sim.clock.now, metrics=MetricsTarget(metrics))

    with caplog.at_level(logging.INFO, logger=RUN_LOGGER):
        ended = run_lifecycle(RunJob(RunRequest()), setup)

    [finished] = [r for r in caplog.records if r.getMessage().startswith("run ")]
    assert ended.code == 0
    assert ended.mode == "run"
    assert ended.result.applied is not None
    assert ended.result.applied.counts["applied"] > 0
    assert sorted(p.name for p in ended.reports) == ["report.html", "report.md"]
    assert all(p.parent == ended.result.run_dir and p.is_file() for p in ended.reports)
    assert [n.sent for n in ended.notices] == [True]
    assert len(receiver.notices) == 1
    assert "retention_last_run_exit_code 0.0" in metrics.read_text()
    assert finished.getMessage() == f"run {ended.result.run_id} finished: exit 0, done"
    assert capsys.readouterr() == ("", "")


def test_an_undo_called_as_a_library_writes_its_reports_and_sends_no_notice(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """run_lifecycle(UndoJob(UndoRequest(run folder))) puts back what the run shortened, writes the
    undo's reports into its own run folder and, as the command does, sends no notice."""
    config = write_config(folder, sim.base_url, [receiver.url])
    setup = Setup(config_path=config, clock=sim.clock.now)
    ran = run_lifecycle(RunJob(RunRequest()), setup)
    sent = len(receiver.notices)

    ended = run_lifecycle(UndoJob(UndoRequest(ran.result.run_dir)), setup)

    assert ended.code == 0
    assert ended.mode == "undo"
    assert ended.result.undo_of == ran.result.run_dir.resolve()
    assert ended.result.counts.get("restored", 0) > 0
    assert sorted(p.name for p in ended.reports) == ["report.html", "report.md"]
    assert (ended.result.run_dir / "undo.json").is_file()
    assert ended.notices == []
    assert len(receiver.notices) == sent
    assert capsys.readouterr() == ("", "")
