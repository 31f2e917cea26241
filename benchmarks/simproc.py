"""The simulator in a process of its own, for the benchmarks: load and server must not share
one Python's GIL, or the figures measure the contention."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import requests
from requests.auth import HTTPDigestAuth

T = TypeVar("T")


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


def on_sessions(
    items: Sequence[T],
    send: Callable[[requests.Session, T], None],
    *,
    concurrency: int,
    private_key: str,
) -> float:
    """A raw bound: ``send`` every item on ``concurrency`` threads, each with one keep-alive
    session that digests once; return the seconds it took."""
    work: queue.Queue[T] = queue.Queue()
    for item in items:
        work.put(item)

    def worker() -> None:
        session = requests.Session()
        session.auth = HTTPDigestAuth("sim-public-key", private_key)
        while True:
            try:
                item = work.get_nowait()
            except queue.Empty:
                return
            send(session, item)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    """User plus system CPU a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return ticks / os.sysconf("SC_CLK_TCK")
