"""A reader that goes away (`retention diff | head`) is not a failure of the command: the
process stops writing and exits 141 (what a shell reports for a process SIGPIPE ended),
with nothing on stderr, whichever command was writing. Real processes on a real pipe whose
reader is closed before the first write, against the simulator over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retention.core.timestamps import format_timestamp
from retention.errors import EXIT_CLOSED_OUTPUT
from retention.simulator.server import Simulator
from tests.support.simfleet import NOW, shorten_small_in

AT = format_timestamp(NOW)  # the simulator's frozen time: a diff evaluated then, not now
# A base that keeps more of prod-small than the current policy: the diff has lines to write.
BASE = "name: typo\nmatch: {clusters: [prod-small]}\nkeep: {last: 5}\n"


def closed_reader(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``retention ARGV`` with stdout a pipe nobody reads (closed before the process
    starts); its exit status and stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "retention", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=cwd,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    return done.returncode, done.stderr


@pytest.fixture
def with_base(sim: Simulator, folder: Path) -> Path:
    """The working folder set up against the simulator, with base/ the policies to diff with."""
    shorten_small_in(folder, sim.base_url, "typo")
    (folder / "base").mkdir()
    (folder / "base" / "typo.yaml").write_text(BASE)
    return folder


def test_diff_into_a_closed_pipe_exits_141_and_says_nothing(with_base: Path) -> None:
    """`retention diff | head` with head gone: exit 141, not 1 (a cluster not walked), and
    no traceback or "Exception ignored" on stderr."""
    code, err = closed_reader(["diff", "--base", "base", "--at", AT], with_base)

    assert code == EXIT_CLOSED_OUTPUT == 141
    assert err == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],  # written while click parses the command line
        ["plan", "--help"],
        ["validate"],
        ["config", "show", "--format", "json"],
        ["diff", "--base", "base", "--at", AT, "--format", "markdown"],
    ],
)
def test_every_command_stops_quietly_when_its_reader_is_gone(
    with_base: Path, argv: list[str]
) -> None:
    """Help, a command without the API, a JSON document and a markdown review all end with
    exit 141 and an empty stderr when stdout's reader is gone."""
    code, err = closed_reader(argv, with_base)

    assert (code, err) == (EXIT_CLOSED_OUTPUT, "")
