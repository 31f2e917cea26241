"""Stops of real `retention` processes against the simulator with latency: SIGINT and SIGTERM
stop an apply within seconds with at most api.concurrency PATCHes after the signal, a
journal that accounts for every PATCH the service received, reports and metrics; a second
Ctrl-C exits at once; a stop while planning leaves a folder that says so; and after kill -9
at any point, undo puts back every snapshot the service saw shortened.

The simulator runs in this process on the real clock and the product in child processes,
which read the same clock: the fleet is built from now, so these tests pass on any date.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retention import cli
from retention.core.timestamps import format_timestamp
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY, make_client
from tests.support.examples import examples
from tests.support.journal import intent_lines, outcome_lines
from tests.support.notices import Receiver
from tests.support.reportpage import ReportPage
from tests.support.waiting import wait_for

KEY = "stop-test-secret"
SNAPSHOT_LIST = "/groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots"
CONCURRENCY = 2
POLICY = """\
name: short
keep: {last: 3, daily: 3}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""
# SIGINT is reset to its default before the exec: a test run started in the background by
# a non-interactive shell (CI) hands its children SIGINT ignored, and retention, like
# Python, leaves an ignored SIGINT ignored.
WITH_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'retention', *sys.argv[1:]])"
)


def fleet(clusters: int, days: int) -> str:
    """A fleet file: one project of ``clusters`` clusters with ``days`` of 6-hourly history."""
    rows = "\n".join(
        f"      - {{name: prod-{n:02d}, generate: {{six_hourly_days: {days}}}}}"
        for n in range(clusters)
    )
    return (
        'projects:\n  - id: "5e2211c17a3e5a48f5497de3"\n    name: stop-test\n'
        f"    clusters:\n{rows}\n"
    )


class Running:
    """A retention process whose stdout and stderr are read as they come, so a test can
    wait for a line before it acts, and still have all of both at the end."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((proc.stdout, self.out), (proc.stderr, self.err))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str] | None, lines: list[str]) -> None:
        assert stream is not None
        lines.extend(stream)

    def said(self, text: str) -> bool:
        """True once stderr has a line holding ``text``."""
        return any(text in line for line in list(self.err))

    def finish(self, timeout: float) -> tuple[str, str]:
        """Wait for the process to end (TimeoutExpired after ``timeout``); its output."""
        self.proc.wait(timeout=timeout)
        self.close()
        return "".join(self.out), "".join(self.err)

    def close(self) -> None:
        """Kill the process if it still runs, and close its pipes: a test that fails half
        way leaves nothing running, and no open pipe, for the tests after it."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    @property
    def returncode(self) -> int | None:
        """The exit status, once it has ended."""
        return self.proc.returncode


@dataclass
class Setup:
    """A simulator, a configuration pointing at it, and the folder they live in."""

    sim: Simulator
    folder: Path
    config: Path
    started: list[Running] = field(default_factory=list)

    @property
    def reports(self) -> Path:
        """The reports folder of the configuration."""
        return self.folder / "reports"

    def start(self, *args: str, session: bool = False) -> Running:
        """`retention --config CONFIG ARGS` as a process of its own, with SIGINT default
        (``session``: in a process group of its own, to signal the group)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("RETENTION_")} | {
            "RETENTION_PUBLIC_KEY": PUBLIC_KEY,
            "RETENTION_PRIVATE_KEY": KEY,
        }
        running = Running(
            subprocess.Popen(
                [sys.executable, "-c", WITH_SIGINT, "--config", str(self.config), *args],
                cwd=self.folder,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=session,
            )
        )
        self.started.append(running)
        return running

    def patches(self) -> list[dict[str, Any]]:
        """The PATCHes the service received and applied, in order."""
        log: list[dict[str, Any]] = self.sim.admin("patches")["patches"]
        return [p for p in log if p["status"] == 200]

    def run_folders(self) -> list[Path]:
        """The run folders under the reports folder, oldest first."""
        if not self.reports.is_dir():
            return []
        return sorted(d for d in self.reports.iterdir() if d.is_dir())


@contextmanager
def served(
    tmp_path: Path,
    *,
    latency_ms: float,
    clusters: int = 4,
    days: int = 30,
    notify: str | None = None,
    workers: int = 1,
) -> Iterator[Setup]:
    """A simulator with latency on the real clock, and a configuration for it (sending
    failure notices to ``notify`` when given)."""
    (tmp_path / "fleet.yaml").write_text(fleet(clusters, days))
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "short.yaml").write_text(POLICY)
    config = SimulatorConfig(
        fleet=str(tmp_path / "fleet.yaml"),
        latency_ms=latency_ms,
        public_key=PUBLIC_KEY,
        private_key=KEY,
    )
    with Simulator(config) as sim:
        project = sim.admin("fleet")["projects"][0]["id"]
        path = tmp_path / "retention.yaml"
        path.write_text(
            f"api:\n  base_url: {sim.base_url}\n  concurrency: {CONCURRENCY}\n"
            f"  workers: {workers}\n"
            f'targets:\n  - project: "{project}"\npolicies: policies/\n'
            'schedule: "0 3 * * *"\nreports:\n  dir: reports/\n'
            + (f'notify:\n  urls: ["{notify}"]\n  on: [failure]\n' if notify else "")
        )
        setup = Setup(sim, tmp_path, path)
        try:
            yield setup
        finally:
            for running in setup.started:
                running.close()


def plan(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plan of the fleet, made in this process; its path."""
    monkeypatch.chdir(setup.folder)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
    assert cli.main(["--config", str(setup.config), "plan", "--out", "plan.json"]) == 0
    return setup.folder / "plan.json"


@pytest.mark.parametrize(
    ("signum", "code", "name"),
    [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")],
)
def test_a_signal_stops_an_apply_and_the_journal_says_exactly_what_was_sent(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    receiver: Receiver,
    signum: int,
    code: int,
    name: str,
) -> None:
    """A signal after 20 PATCHes: at most api.concurrency more reach the service, the
    process exits 130 (SIGINT) or 143 (SIGTERM) within 5 seconds, every PATCH the service
    applied has its intent and its applied outcome in results.jsonl, every change left is
    journalled not-sent, and the reports, interrupted.json, the metrics and the failure
    notice say so."""
    with served(tmp_path, latency_ms=50, notify=receiver.url) as setup:
        plan_path = plan(setup, monkeypatch)
        total = sum(1 for _ in open_plan(plan_path).read_list("changes"))
        metrics = setup.folder / "apply.prom"
        proc = setup.start("apply", "plan.json", "--metrics-file", str(metrics))
        wait_for(lambda: len(setup.patches()) >= 20, "20 PATCHes")

        at_signal = len(setup.patches())
        proc.proc.send_signal(signum)
        signalled = time.monotonic()
        out, err = proc.finish(timeout=60)
        took = time.monotonic() - signalled
        service = setup.patches()
        [run_dir] = setup.run_folders()

    journal = run_dir / "results.jsonl"
    outcomes = Counter(line["outcome"] for line in outcome_lines(journal))
    sent = Counter(p["snapshotId"] for p in service)
    assert proc.returncode == code, err
    assert took < 5, f"the stop took {took:.1f}s"
    assert len(service) - at_signal <= CONCURRENCY
    assert total > len(service) + 100  # the stop left most of the plan unsent
    assert Counter(x["snapshotId"] for x in intent_lines(journal)) == sent
    applied = [x for x in outcome_lines(journal) if x["outcome"] == "applied"]
    assert Counter(x["snapshotId"] for x in applied) == sent
    assert sum(outcomes.values()) == total
    assert outcomes["not-sent"] == total - len(service) > 0
    assert f"{name}: stopping" in err
    assert f"Exit {code}" in out
    assert f"Stopped by {name} before the end" in out
    interrupted = json.loads((run_dir / "interrupted.json").read_text())
    assert (interrupted["signal"], interrupted["step"], interrupted["exitCode"]) == (
        name,
        "apply",
        code,
    )
    assert interrupted["outcomes"] == dict(sorted(outcomes.items()))
    report_md = (run_dir / "report.md").read_text()
    assert f"**Stopped by {name} before the end:** {outcomes['not-sent']} changes not sent" in (
        report_md
    )
    assert 'id="stopped"' in (run_dir / "report.html").read_text()
    assert f"retention_last_run_exit_code {code}.0" in metrics.read_text()
    assert "retention_last_success_timestamp_seconds " not in metrics.read_text()
    [notice] = receiver.notices
    assert notice["type"] == "failure"
    assert f"exit {code}" in notice["title"]
    assert f"Stopped by {name} before the end" in notice["message"]


def test_a_stopped_apply_names_the_command_that_finishes_it_with_its_approvals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An apply that approved two held clusters, stopped by Ctrl-C after 20 PATCHes, prints
    and writes into both reports the exact command that finishes it: the apply of its run
    folder with an --approve for each; pasted as printed, it sends the rest of both
    clusters' held changes and holds only the cluster never approved."""
    with served(tmp_path, latency_ms=50, clusters=3) as setup:
        (setup.folder / "policies" / "short.yaml").write_text(
            POLICY.replace("max_expire_fraction: 1.0", "max_expire_fraction: 0.5")
        )
        monkeypatch.chdir(setup.folder)
        monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
        monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
        base = ["--config", str(setup.config)]
        assert cli.main([*base, "plan", "--out", "plan.json"]) == 3
        proc = setup.start("apply", "plan.json", "--approve", "prod-00", "--approve", "prod-02")
        wait_for(lambda: len(setup.patches()) >= 20, "20 PATCHes")
        proc.proc.send_signal(signal.SIGINT)
        out, err = proc.finish(timeout=60)
        [run_dir] = setup.run_folders()
        finish = f"    retention apply {run_dir} "  # the run folder: not its plan.json
        [command] = [line.strip() for line in out.splitlines() if line.startswith(finish)]

        assert proc.returncode == 130, err
        words = command.split()
        assert words[:3] == ["retention", "apply", str(run_dir)]
        assert sorted(zip(words[3::2], words[4::2], strict=True)) == [
            ("--approve", "prod-00"),
            ("--approve", "prod-02"),
        ]
        assert f"Finish it with `{command}`" in (run_dir / "report.md").read_text()
        assert command in ReportPage.of(run_dir / "report.html").text_of("stopped")
        sent_before = len(setup.patches())
        code = cli.main([*base, *command.split()[1:], "--quiet"])
        finished = sorted(setup.run_folders())[-1]
        sent_after = len(setup.patches())

    lines = outcome_lines(finished / "results.jsonl")
    outcomes = Counter(line["outcome"] for line in lines)
    assert code == 3  # prod-01, never approved, is held as before
    assert "not-sent" not in outcomes
    approved = {line["clusterName"] for line in lines if line.get("approved")}
    assert approved == {"prod-00", "prod-02"}
    assert outcomes["applied"] == sent_after - sent_before > 0


def test_a_second_ctrl_c_exits_at_once_and_undo_settles_what_was_in_doubt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While the PATCHes on the wire take seconds to answer, a second Ctrl-C ends the
    process at once: the journal holds their intents with no outcome, and `undo` puts
    back each of them that the service applied, saying they were in doubt."""
    with served(tmp_path, latency_ms=20) as setup:
        plan(setup, monkeypatch)
        proc = setup.start("apply", "plan.json")
        wait_for(lambda: len(setup.patches()) >= 5, "5 PATCHes")
        setup.sim.admin("faults", {"spec": "slow=1.0,slow_ms=8000"})
        # The service logs a PATCH when it applies it, then holds the answer for 8 s.
        slow_from = len(setup.patches())
        wait_for(lambda: len(setup.patches()) > slow_from, "a slow PATCH on the wire")
        proc.proc.send_signal(signal.SIGINT)
        wait_for(lambda: proc.said("SIGINT: stopping"), "the stop to be under way")
        proc.proc.send_signal(signal.SIGINT)
        _out, err = proc.finish(timeout=5)  # the slow PATCHes would take 8 s
        service = setup.patches()
        [run_dir] = setup.run_folders()
        setup.sim.admin("faults", {"spec": ""})
        journal = run_dir / "results.jsonl"
        answered = {x["snapshotId"] for x in outcome_lines(journal)}
        waiting = [x for x in intent_lines(journal) if x["snapshotId"] not in answered]
        capsys.readouterr()

        undone = cli.main(["--config", str(setup.config), "undo", str(run_dir), "--format", "json"])
        document = json.loads(capsys.readouterr().out)
        after = setup.patches()[len(service) :]

    assert proc.returncode == 130, err
    assert "Ctrl-C while stopping: exiting at once (exit 130)" in err
    assert 1 <= len(waiting) <= CONCURRENCY
    assert {x["snapshotId"] for x in waiting} <= {p["snapshotId"] for p in service}
    assert not (run_dir / "report.md").exists()  # it did not wait to write one
    assert undone == 0
    assert document["inDoubt"] == len(waiting)
    in_doubt = {i["snapshotId"]: i for i in document["items"] if i["inDoubt"]}
    assert set(in_doubt) == {x["snapshotId"] for x in waiting}
    assert {i["outcome"] for i in in_doubt.values()} == {"restored"}
    put_back = {p["snapshotId"] for p in after}
    assert set(in_doubt) <= put_back


def test_a_signal_stops_a_run_while_it_applies_and_then_an_undo_while_it_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` stopped by SIGINT while applying says so as a run (interrupted.json mode run,
    exit 130); `undo` of that folder stopped by SIGTERM exits 143, restores nothing after
    the signal but what was on the wire, and says so in undo.json and its report; the same
    undo run again finishes the job and names the stopped undo before it."""
    with served(tmp_path, latency_ms=50) as setup:
        run = setup.start("run")
        wait_for(lambda: len(setup.patches()) >= 30, "30 PATCHes")
        run.proc.send_signal(signal.SIGINT)
        _out, run_err = run.finish(timeout=60)
        [run_dir] = setup.run_folders()
        applied = len(setup.patches())

        undo = setup.start("undo", str(run_dir))
        wait_for(lambda: len(setup.patches()) >= applied + 5, "5 undo PATCHes")
        undo.proc.send_signal(signal.SIGTERM)
        at_signal = len(setup.patches())
        _out, undo_err = undo.finish(timeout=60)
        after_stop = len(setup.patches())
        undo_dir = next(d for d in setup.run_folders() if d != run_dir)
        monkeypatch.chdir(setup.folder)
        monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
        monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
        capsys.readouterr()
        again = cli.main(["--config", str(setup.config), "undo", str(run_dir), "--format", "json"])
        finished = json.loads(capsys.readouterr().out)

    interrupted = json.loads((run_dir / "interrupted.json").read_text())
    document = json.loads((undo_dir / "undo.json").read_text())
    assert run.returncode == 130, run_err
    assert (interrupted["mode"], interrupted["step"], interrupted["signal"]) == (
        "run",
        "apply",
        "SIGINT",
    )
    assert undo.returncode == 143, undo_err
    # An undo's restore is one PATCH here (the old expiry back): at most one a worker.
    assert after_stop - at_signal <= CONCURRENCY
    assert document["interrupted"] == "SIGTERM"
    assert document["counts"]["not-sent"] > 0
    assert "Stopped by SIGTERM before the end" in (undo_dir / "report.md").read_text()
    assert again == 0
    assert finished["counts"].get("not-sent", 0) == 0
    assert finished["counts"]["restored"] == document["counts"]["not-sent"]
    [before] = finished["undoneBefore"]
    assert Path(before["runDir"]).resolve() == undo_dir.resolve()
    assert (before["interrupted"], before["restored"]) == (
        "SIGTERM",
        document["counts"].get("restored", 0),
    )
    [markdown] = [Path(path) for path in finished["reports"] if path.endswith(".md")]
    assert f"{undo_dir.name} at {document['createdAt']} (stopped by SIGTERM)." in (
        markdown.read_text()
    )


def wait_for_the_walk(sim: Simulator) -> None:
    """Wait until the simulator has answered a snapshot list: the walk has begun."""

    def walking() -> bool:
        by_endpoint: dict[str, int] = sim.admin("counters")["byEndpoint"]
        return by_endpoint.get(f"GET {SNAPSHOT_LIST}", 0) > 0

    wait_for(walking, "the walk to start")


def test_a_stop_while_planning_leaves_a_folder_that_says_so_and_sends_nothing(
    tmp_path: Path,
) -> None:
    """SIGTERM during a run's walk: exit 143, no PATCH, and a run folder holding only
    interrupted.json (step plan), not a half decisions.jsonl that looks like a plan."""
    with served(tmp_path, latency_ms=300, clusters=16, days=5) as setup:
        proc = setup.start("run")
        wait_for_the_walk(setup.sim)
        proc.proc.send_signal(signal.SIGTERM)
        _out, err = proc.finish(timeout=30)
        service = setup.patches()
        folders = setup.run_folders()

    assert proc.returncode == 143, err
    assert service == []
    [run_dir] = folders
    assert sorted(p.name for p in run_dir.iterdir()) == ["interrupted.json"]
    interrupted = json.loads((run_dir / "interrupted.json").read_text())
    assert (interrupted["signal"], interrupted["step"], interrupted["sent"]) == (
        "SIGTERM",
        "plan",
        False,
    )
    assert "stopped by SIGTERM while planning: no plan was written and nothing was sent" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "doing"),
    [
        (("diff", "--base", "policies"), "reviewing"),
        (("forecast", "--days", "30"), "forecasting"),
    ],
    ids=["diff", "forecast"],
)
def test_a_stop_while_a_read_only_command_walks_writes_nothing_and_sends_nothing(
    tmp_path: Path, argv: tuple[str, ...], doing: str
) -> None:
    """SIGTERM during the walk of diff or forecast: exit 143 with the command's own words,
    no PATCH, nothing on stdout and no reports folder (neither writes anything)."""
    with served(tmp_path, latency_ms=300, clusters=16, days=5) as setup:
        proc = setup.start(*argv, "--format", "json")
        wait_for_the_walk(setup.sim)
        proc.proc.send_signal(signal.SIGTERM)
        out, err = proc.finish(timeout=30)
        service = setup.patches()

    assert proc.returncode == 143, err
    assert service == []
    assert out == ""
    assert not setup.reports.exists()
    assert f"stopped by SIGTERM while {doing}: nothing was written and nothing was sent" in err
    assert "Traceback" not in err


def test_sigterm_to_the_process_group_while_workers_plan_is_a_stop_not_a_crash(
    tmp_path: Path,
) -> None:
    """SIGTERM sent to the whole process group (systemd, timeout(1), kill -- -PGID) while
    planning workers decide: the workers ignore it and the run stops as for any SIGTERM,
    exit 143 with interrupted.json, not as a crashed worker (exit 1)."""
    with served(tmp_path, latency_ms=100, clusters=60, days=3, workers=2) as setup:
        proc = setup.start("run", session=True)

        def deciding() -> bool:
            by_endpoint: dict[str, int] = setup.sim.admin("counters")["byEndpoint"]
            return by_endpoint.get(f"GET {SNAPSHOT_LIST}", 0) >= 4

        wait_for(deciding, "the walk to be under way")
        os.killpg(proc.proc.pid, signal.SIGTERM)
        _out, err = proc.finish(timeout=60)
        folders = setup.run_folders()

    assert proc.returncode == 143, err
    assert "planning worker" not in err
    [run_dir] = folders
    assert sorted(p.name for p in run_dir.iterdir()) == ["interrupted.json"]


@settings(
    max_examples=examples(4),  # each a real apply killed and undone: CI time
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(after=st.integers(min_value=1, max_value=80), extra_ms=st.integers(0, 60))
def test_after_kill_9_at_any_point_undo_puts_back_every_snapshot_the_service_shortened(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    after: int,
    extra_ms: int,
) -> None:
    """kill -9 once the service has seen ``after`` PATCHes (plus up to a latency, so some
    kills land while PATCHes are on the wire): every PATCH the service received has its
    intent in the journal, undo counts as in doubt each intent left without an outcome,
    puts back exactly the snapshots the service saw shortened, and leaves each of them
    with the state it had before the apply."""
    tmp_path = tmp_path_factory.mktemp("kill")
    with served(tmp_path, latency_ms=40) as setup:
        plan(setup, monkeypatch)
        proc = setup.start("apply", "plan.json")
        wait_for(lambda: len(setup.patches()) >= after or proc.proc.poll() is not None, "PATCHes")
        time.sleep(extra_ms / 1000)
        proc.proc.kill()
        proc.finish(timeout=30)
        service = setup.patches()
        [run_dir] = setup.run_folders()
        journal = run_dir / "results.jsonl"
        intents = Counter(x["snapshotId"] for x in intent_lines(journal))
        answered = {x["snapshotId"]: x["outcome"] for x in outcome_lines(journal)}
        doubtful = {
            x["snapshotId"]
            for x in intent_lines(journal)
            if x["destructive"] and answered.get(x["snapshotId"]) in (None, "failed")
        }
        capsys.readouterr()

        code = cli.main(["--config", str(setup.config), "undo", str(run_dir), "--format", "json"])
        document = json.loads(capsys.readouterr().out)
        shortened = {
            p["snapshotId"]: p["before"]
            for p in reversed(service)
            if p["before"] != p["after"] and _shortens(p["before"], p["after"])
        }
        now = _states(setup)

    assert Counter(p["snapshotId"] for p in service) <= intents
    assert code == 0, document
    assert document["inDoubt"] == len(doubtful)
    restored = {i["snapshotId"] for i in document["items"] if i["outcome"] == "restored"}
    assert restored == set(shortened)
    assert {sid: now[sid] for sid in shortened} == {
        sid: _state(before) for sid, before in shortened.items()
    }


def _shortens(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """True when a PATCH let the service delete the snapshot sooner than before."""
    if before.get("doNotDelete") and not after.get("doNotDelete"):
        return True
    old, new = before.get("expires"), after.get("expires")
    return new is not None and (old is None or new < old)


def _state(document: dict[str, Any]) -> tuple[bool, str | None]:
    protected = bool(document.get("doNotDelete"))
    return protected, None if protected else document.get("expires")


def _states(setup: Setup) -> dict[str, tuple[bool, str | None]]:
    """Every snapshot's (doNotDelete, expires) as the service holds it now."""
    found: dict[str, tuple[bool, str | None]] = {}
    with make_client(setup.sim.base_url, private_key=KEY) as api:
        for project in setup.sim.admin("fleet")["projects"]:
            for cluster in project["clusters"]:
                for s in api.list_snapshots(project["id"], cluster["id"]):
                    expires = format_timestamp(s.expires) if s.expires else None
                    found[s.id] = (s.do_not_delete, None if s.do_not_delete else expires)
    return found
