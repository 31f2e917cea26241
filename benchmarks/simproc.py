"""The simulator in a process of its own, for the benchmarks: load and server must not share
one Python's GIL, or the figures measure the contention."""

from __future__ import annotations

import re
import subprocess
import sys


def start_simulator(
    fleet: str, private_key: str, *options: str
) -> tuple[subprocess.Popen[str], str]:
    """`retention simulator serve --fleet FLEET ...`; return it and its API base URL."""
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-m", "retention", "simulator", "serve", "--fleet", fleet,
         "--private-key", private_key, *options],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if match := re.search(r"base URL:\s+(\S+)", line):
            return proc, match.group(1)
    raise SystemExit("the simulator did not start")
