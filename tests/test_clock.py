"""One clock: the package reads the wall clock in retention/ops/clock.py alone (the simulator
keeps its own), and the clock given to the command line is the time of everything a
command writes."""

from __future__ import annotations

import ast
import json
from datetime import timedelta
from pathlib import Path

import pytest

from retention import cli
from retention.core.timestamps import format_timestamp
from retention.ops.lock import LOCK_NAME
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator
from tests.support.simfleet import NOW, clock_at
from tests.test_logging import write_config

PACKAGE = Path(__file__).resolve().parent.parent / "retention"
THE_CLOCK = PACKAGE / "ops" / "clock.py"
SIMULATOR = PACKAGE / "simulator"

# Reads of the wall clock: datetime.now(), datetime.utcnow(), datetime.today(),
# date.today(), time.time(), time.time_ns(). time.monotonic() is not one: it measures
# durations, timeouts and rate limits, and no wall clock set forward or back moves it.
WALL_CLOCK_READS = {
    "datetime": {"now", "utcnow", "today"},
    "date": {"today"},
    "time": {"time", "time_ns"},
}


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every read of the wall clock in ``tree``: an attribute of a module
    or class that reads it, or such a function imported by name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if node.attr in WALL_CLOCK_READS.get(name, set()):
                found.append((node.lineno, f"{name}.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module in WALL_CLOCK_READS:
            for alias in node.names:
                if alias.name in WALL_CLOCK_READS[node.module]:
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
    return found


def test_the_wall_clock_is_read_in_one_place_outside_the_simulator() -> None:
    """datetime.now, time.time, date.today (and their kin) appear in retention/ only in
    retention/ops/clock.py and the simulator: every other module is handed a clock."""
    elsewhere = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != THE_CLOCK and SIMULATOR not in path.parents
        for line, what in _reads(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert elsewhere == []
    assert [what for _, what in _reads(ast.parse(THE_CLOCK.read_text()))] == ["datetime.now"]


def test_the_check_finds_each_way_of_reading_the_wall_clock() -> None:
    """The check above is not blind: it finds each read, however it is spelled."""
    source = (
        "import datetime, time\nfrom time import time_ns\n"
        "a = datetime.datetime.now()\nb = datetime.date.today()\nc = time.time()\n"
        "d = time.monotonic()\n"
    )
    assert [what for _, what in _reads(ast.parse(source))] == [
        "from time import time_ns",
        "datetime.now",
        "date.today",
        "time.time",
    ]


def test_a_command_given_a_clock_writes_its_time_everywhere(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --dry-run` given the simulator's clock names its run folder, dates its plan,
    signs the lock file and times every json log line with that clock's time."""
    write_config(folder, sim.base_url)
    at = format_timestamp(NOW)

    code = cli.main(["--log-format", "json", "run", "--dry-run"], clock=sim.clock.now)

    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    head = open_plan(run_dir / "plan.json").head
    assert code == 3  # the open alert holds prod-small
    assert run_dir.name.startswith(NOW.strftime("%Y%m%dT%H%M%SZ-"))
    assert format_timestamp(head["createdAt"]) == format_timestamp(head["evaluatedAt"]) == at
    assert lines
    assert {line["time"] for line in lines} == {at}
    assert (folder / "reports" / LOCK_NAME).read_text().endswith(f" since {at}\n")


def test_an_error_line_carries_the_time_of_the_clock_given(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fatal line that ends a failed command in json mode is timed by the clock given."""
    later = NOW + timedelta(days=400)

    code = cli.main(["--log-format", "json", "plan"], clock=clock_at(later))

    [fatal] = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    assert code == 2
    assert fatal["event"] == "fatal"
    assert fatal["time"] == format_timestamp(later)
