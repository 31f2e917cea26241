"""The simulator in a process of its own, for the benchmarks: load and server must not share
one Python's GIL, or the figures measure the contention."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from typing import Any


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


def admin(base_url: str, path: str, payload: dict[str, Any] | None = None) -> Any:
    """GET (or POST) the simulator's admin surface."""
    url = base_url.split("/api/", maxsplit=1)[0] + "/__admin/" + path
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")  # noqa: S310
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
        return json.load(answer)
