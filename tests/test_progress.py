"""Progress of the long commands, as a person and as cron see it: real `retention`
processes against the simulator over real HTTP, with stderr on a pseudo-terminal (the
progress is drawn there) or on pipes (not a byte of it is written); and the time left of
a stage, from the rate measured with a clock of the test's own.

The simulator runs in this process on the real clock and the product in child processes,
which read the same clock: the fleet is built from now, so these tests pass on any date.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import pytest
from rich.progress import Progress

from retention.cli.bars import SETTLE_ITEMS, SETTLE_SECONDS, time_left
from retention.cli.progress import APPLY_ORDER, UNDO_ORDER
from retention.core.model import Target
from retention.core.runfiles import OutcomeName, UndoOutcome
from retention.library.stages import Quiet, StageLog
from retention.ops.logs import RUN_LOGGER
from retention.simulator.server import Simulator, SimulatorConfig
from retention.walk.inventory import Walk
from tests.support.client import PUBLIC_KEY
from tests.support.journal import outcome_lines
from tests.support.terminal import Ended, plain, run_on_pipes, run_on_terminal

KEY = "progress-test-secret"
CLUSTERS = 4
FLEET = (
    'projects:\n  - id: "5e2211c17a3e5a48f5497de3"\n    name: progress-test\n    clusters:\n'
    + "".join(
        f"      - {{name: prod-{n:02d}, generate: {{six_hourly_days: 20}}}}\n"
        for n in range(CLUSTERS)
    )
)
POLICY = """\
name: short
keep: {last: 3, daily: 3}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""
# What a bar or its counts would leave in a stream: none of it may reach a pipe.
DRAWN = ("walking", "applying", "undoing", "reading", "snapshots read", "\x1b")


@dataclass
class Setup:
    """A simulator with latency, a configuration pointing at it, and the folder they share."""

    sim: Simulator
    folder: Path
    env: dict[str, str]

    def on_terminal(self, *args: str, stdout_too: bool = False, term: str = "xterm") -> Ended:
        """`retention ARGS` with stderr (``stdout_too``: and stdout) on a terminal."""
        return run_on_terminal(
            list(args), cwd=self.folder, env=self.env, stdout_too=stdout_too, term=term
        )

    def on_pipes(self, *args: str) -> Ended:
        """`retention ARGS` with stdout and stderr on pipes, as cron runs it."""
        return run_on_pipes(list(args), cwd=self.folder, env=self.env)

    def snapshots(self) -> int:
        """How many snapshots the service holds, in every cluster."""
        [project] = self.sim.admin("fleet")["projects"]
        return sum(cluster["snapshots"] for cluster in project["clusters"])

    def last_run(self) -> Path:
        """The newest run folder."""
        return max(path for path in (self.folder / "reports").iterdir() if path.is_dir())


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    """Four clusters of 20 days of 6-hourly snapshots, served with 10 ms of latency."""
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "short.yaml").write_text(POLICY)
    config = SimulatorConfig(
        fleet=str(tmp_path / "fleet.yaml"),
        latency_ms=10,
        public_key=PUBLIC_KEY,
        private_key=KEY,
    )
    with Simulator(config) as sim:
        project = sim.admin("fleet")["projects"][0]["id"]
        (tmp_path / "retention.yaml").write_text(
            f"api:\n  base_url: {sim.base_url}\n  concurrency: 2\n"
            f'targets:\n  - project: "{project}"\npolicies: policies/\n'
            'schedule: "0 3 * * *"\nreports:\n  dir: reports/\n  keep: 30d\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("RETENTION_")} | {
            "RETENTION_PUBLIC_KEY": PUBLIC_KEY,
            "RETENTION_PRIVATE_KEY": KEY,
        }
        yield Setup(sim, tmp_path, env)


def assert_nothing_drawn(ended: Ended) -> None:
    """Neither stream of a process on pipes holds any of the progress."""
    for stream in (ended.out, ended.raw):
        for drawn in DRAWN:
            assert drawn not in stream, (drawn, stream)


def test_plan_shows_the_walk_on_a_terminal_and_nothing_on_a_pipe(setup: Setup) -> None:
    """plan draws, on a terminal, the clusters walked of the total and the snapshots read
    (then clears them before its output); on pipes, stderr stays empty and stdout holds the
    same plan without a byte of progress."""
    snapshots = setup.snapshots()

    seen = setup.on_terminal("plan", stdout_too=True)
    assert seen.code == 0, seen.raw
    assert "walking" in seen.seen
    assert f"{CLUSTERS}/{CLUSTERS} clusters {snapshots:,} snapshots read" in seen.seen
    assert f"0/{CLUSTERS} clusters" in seen.seen  # drawn from the start, not only at the end
    # The bars are gone before the plan is printed: the plan comes after the last of them.
    assert seen.raw.rindex("snapshots read") < seen.raw.index("Saved ")

    piped = setup.on_pipes("plan")
    assert piped.code == 0, piped.raw
    assert piped.raw == ""
    assert "Saved " in piped.out
    assert_nothing_drawn(piped)


def test_stdout_on_a_pipe_gets_no_progress_while_the_terminal_shows_it(setup: Setup) -> None:
    """`retention plan --format json | jq` on a terminal: the progress is drawn on the
    terminal (stderr), and stdout is the JSON document alone."""
    seen = setup.on_terminal("plan", "--format", "json")
    assert seen.code == 0, seen.raw
    assert f"{CLUSTERS}/{CLUSTERS} clusters" in seen.seen
    assert seen.out.lstrip().startswith("{")
    assert_nothing_drawn(Ended(0, seen.out, ""))


def test_run_shows_the_walk_then_the_outcomes_of_applying_so_far(setup: Setup) -> None:
    """run draws the walk, then applying with the changes done of the total and the
    outcomes so far (applied, unchanged, stale, failed); the same run on pipes writes
    none of it, and stderr stays empty."""
    seen = setup.on_terminal("run", stdout_too=True)
    assert seen.code == 0, seen.raw
    changes = len(outcome_lines(setup.last_run() / "results.jsonl"))
    assert changes > 100
    assert f"{CLUSTERS}/{CLUSTERS} clusters" in seen.seen
    assert "applying" in seen.seen
    assert (
        f"{changes}/{changes} changes applied {changes}, unchanged 0, stale 0, failed 0"
        in seen.seen
    )
    assert "applied 0, unchanged 0, stale 0, failed 0" in seen.seen  # the counts from the start
    assert seen.raw.rindex("failed 0") < seen.raw.index("Exit 0")

    piped = setup.on_pipes("run")
    assert piped.code == 0, piped.raw
    assert piped.raw == ""
    assert "Exit 0" in piped.out
    assert_nothing_drawn(piped)


def test_apply_and_undo_show_their_outcomes_so_far(setup: Setup) -> None:
    """apply of a saved plan draws the changes done and their outcomes; undo of that run
    draws the snapshots put back of the total with its own outcomes; on pipes, neither
    writes any of it."""
    assert setup.on_pipes("plan", "--out", "plan.json").code == 0
    applied = setup.on_terminal("apply", "plan.json")
    assert applied.code == 0, applied.raw
    run_dir = setup.last_run()
    changes = len(outcome_lines(run_dir / "results.jsonl"))
    assert f"{changes}/{changes} changes applied {changes}, unchanged 0" in applied.seen

    undone = setup.on_terminal("undo", str(run_dir))
    assert undone.code == 0, undone.raw
    assert "undoing" in undone.seen
    assert f"{changes}/{changes} snapshots restored {changes}, unchanged 0, stale 0" in undone.seen

    again = setup.on_pipes("undo", "--dry-run", str(run_dir))
    assert again.raw == ""
    assert_nothing_drawn(again)


@pytest.mark.parametrize(
    "args", [("diff", "--base", "policies"), ("forecast", "--days", "7")], ids=["diff", "forecast"]
)
def test_diff_and_forecast_show_the_walk_on_a_terminal_only(
    setup: Setup, args: tuple[str, ...]
) -> None:
    """diff and forecast draw the clusters walked and the snapshots read on a terminal,
    and nothing of it on pipes."""
    snapshots = setup.snapshots()
    seen = setup.on_terminal(*args)
    assert seen.code == 0, seen.raw
    assert f"{CLUSTERS}/{CLUSTERS} clusters {snapshots:,} snapshots read" in seen.seen

    piped = setup.on_pipes(*args)
    assert piped.code == 0, piped.raw
    assert piped.raw == ""
    assert_nothing_drawn(piped)


def test_prune_shows_the_run_folders_read_on_a_terminal_only(setup: Setup) -> None:
    """prune draws the run folders read of the total on a terminal, nothing on pipes."""
    for _ in range(3):
        assert setup.on_pipes("plan").code == 0
    seen = setup.on_terminal("prune", "--dry-run")
    assert seen.code == 0, seen.raw
    assert "reading" in seen.seen
    assert "3/3 run folders" in seen.seen

    piped = setup.on_pipes("prune", "--dry-run")
    assert piped.code == 0, piped.raw
    assert piped.raw == ""
    assert_nothing_drawn(piped)


@pytest.mark.parametrize(
    "args",
    [("plan", "--quiet"), ("--log-format", "json", "plan")],
    ids=["quiet", "json-logs"],
)
def test_quiet_and_json_logs_draw_nothing_even_on_a_terminal(
    setup: Setup, args: tuple[str, ...]
) -> None:
    """--quiet, and --log-format json (where every stderr line is JSON), leave a terminal
    without any progress."""
    seen = setup.on_terminal(*args)
    assert seen.code == 0, seen.raw
    assert "walking" not in seen.seen
    assert "\x1b" not in seen.raw


def test_a_terminal_that_cannot_redraw_gets_no_progress(setup: Setup) -> None:
    """On a terminal that cannot move its cursor (TERM=dumb), no frame of the progress is
    written: each would stay on the screen."""
    seen = setup.on_terminal("plan", term="dumb")
    assert seen.code == 0, seen.raw
    assert seen.raw == ""


def test_the_time_left_waits_for_a_measured_rate_and_then_follows_it() -> None:
    """The time left shows nothing until the stage has run SETTLE_SECONDS and done
    SETTLE_ITEMS (a first burst is no rate), then is what is left at the rate measured:
    900 changes left at 20 a second is 45 seconds, not the guess of the first second."""
    now = [0.0]
    progress = Progress(get_time=lambda: now[0], auto_refresh=False)
    task = progress.add_task("applying", total=1000)
    progress.start_task(task)
    # A burst: 10 changes in the first tenth of a second (workers starting together).
    for _ in range(10):
        now[0] += 0.01
        progress.advance(task)
    assert time_left(progress.tasks[0]) is None  # SETTLE_ITEMS done, but too early
    # Then 20 a second until 100 are done.
    while progress.tasks[0].completed < 100:
        now[0] += 0.05
        progress.advance(task)
        if now[0] < SETTLE_SECONDS:
            assert time_left(progress.tasks[0]) is None
    assert now[0] >= SETTLE_SECONDS
    assert progress.tasks[0].completed >= SETTLE_ITEMS
    left = time_left(progress.tasks[0])
    assert left is not None
    assert left == pytest.approx(900 / 20, rel=0.1)


def test_plain_takes_the_escapes_out() -> None:
    """What a person reads on a terminal: the text of a drawn line without its colours."""
    assert (
        plain("\x1b[?25l\r\x1b[2Kwalking \x1b[32m1/4 clusters\x1b[0m") == "\rwalking 1/4 clusters"
    )


def test_an_unattended_run_logs_one_line_a_stage_and_no_progress(setup: Setup) -> None:
    """With --log-format json on pipes (a collector's run), run logs one stage-ended line
    for the walk and one for applying, with the counts the bars would show, and nothing
    drawn; in text mode (cron) stderr stays empty."""
    snapshots = setup.snapshots()
    piped = setup.on_pipes("--log-format", "json", "run")
    assert piped.code == 0, piped.raw
    assert "\x1b" not in piped.raw
    assert "\r" not in piped.raw
    lines = [json.loads(line) for line in piped.raw.splitlines()]
    stages = [line for line in lines if line.get("event") == "stage-ended"]
    changes = len(outcome_lines(setup.last_run() / "results.jsonl"))
    assert [(s["stage"], s["done"], s["total"]) for s in stages] == [
        ("walk", CLUSTERS, CLUSTERS),
        ("apply", changes, changes),
    ]
    assert stages[0]["snapshots"] == snapshots
    assert stages[1]["outcomes"] == {"applied": changes}
    assert stages[0]["message"] == (
        f"walk: {CLUSTERS} of {CLUSTERS} clusters, {snapshots:,} snapshots read in "
        f"{stages[0]['durationSeconds']:.1f} s"
    )
    assert [line["event"] for line in lines] == ["stage-ended", "stage-ended", "run-finished"]

    assert setup.on_pipes("run").raw == ""


def test_a_stage_cut_short_is_logged_as_far_as_it_got(caplog: pytest.LogCaptureFixture) -> None:
    """A walk the job leaves after 2 of 5 clusters (a stop, an error) is logged when the
    job closes, with the 2 done, what they read and the time taken on the job's clock;
    the progress it tells on hears every call."""
    start = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    times = iter([start, start + timedelta(seconds=7)])
    heard: list[str] = []

    class Heard(Quiet):
        def walk(self, walk: Walk) -> None:
            heard.append(walk.target.cluster_id)

        def close(self) -> None:
            heard.append("closed")

    stages = StageLog(Heard(), lambda: next(times))
    target = Target("p", "c1", "prod-a")
    with caplog.at_level(logging.INFO, logger=RUN_LOGGER):
        stages.walks(5)
        stages.walk(Walk(target, snapshots=[]))
        stages.walk(Walk(target, error="HTTP 500"))
        stages.close()

    [record] = caplog.records
    assert record.getMessage() == "walk: 2 of 5 clusters, 0 snapshots read (failed 1) in 7.0 s"
    assert record.fields == {  # type: ignore[attr-defined]
        "event": "stage-ended",
        "stage": "walk",
        "done": 2,
        "total": 5,
        "unit": "cluster",
        "snapshots": 0,
        "outcomes": {"failed": 1},
        "durationSeconds": 7.0,
    }
    assert heard == ["c1", "c1", "closed"]


def test_the_bars_know_every_outcome_in_the_order_the_journal_names_them() -> None:
    """The orders the bars show outcomes in are results.jsonl's and undo's words, all of
    them, in the order core.runfiles spells them: a new outcome cannot go unshown."""
    assert get_args(OutcomeName) == APPLY_ORDER
    assert get_args(UndoOutcome) == UNDO_ORDER
