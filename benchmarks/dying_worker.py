"""A planning worker SIGKILLed while it writes its answer, N rounds: does the plan end?

    .venv/bin/python benchmarks/dying_worker.py [--rounds 25] [--limit 120]

Each round is a fresh interpreter that decides big clusters (an answer is megabytes) on
two workers while a watcher thread reads /proc/<pid>/wchan of each worker and SIGKILLs the
first one it finds blocked writing into the full result pipe: its answer is half written,
the case where CPython's result reader waits in recv() for bytes that never come. A round
that outlives --limit seconds is killed and counted as hung. Prints each round's outcome:
where the pool's result reader was 20 ms after the kill (anon_pipe_read: stuck on the half
answer), how long the RetentionError took, and the round's time with its interpreter's
start and exit. Linux only (/proc); not part of `make bench`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from retention.config.policyfiles import parse_policies
from retention.core.model import SnapshotView, Target
from retention.core.policy.loader import PolicySet
from retention.errors import RetentionError
from retention.plan.workers import Deciders, Shared
from retention.walk.inventory import Walk

# One round runs in a child: these are its clusters (8,000 snapshots each, an answer of
# about 4 MB, so a worker spends most of each write blocked on the full pipe).
CLUSTERS = 40
PER_CLUSTER = 8_000
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
POLICY = b"name: gfs\nkeep: {last: 4, daily: 7, weekly: 4, monthly: 6}\n"


def one_round() -> None:
    """Decide the clusters on two workers with the watcher on; print the outcome."""
    policies = PolicySet(parse_policies([(Path("gfs.yaml"), POLICY)]))
    shared = Shared(policies, {}, {}, NOW, timedelta(days=1))
    walks = [
        Walk(
            Target("p1", f"c{n:04d}", f"rs-{n:04d}"),
            [
                SnapshotView(f"c{n:04d}s{i:05d}", NOW - timedelta(hours=i), True, False, None)
                for i in range(PER_CLUSTER)
            ],
        )
        for n in range(CLUSTERS)
    ]
    killed: list[float] = []
    reader: list[str] = []  # what the pool's result reader does 20 ms after the kill
    start = time.monotonic()
    with Deciders(shared, 2) as deciders:
        assert deciders._pool is not None
        processes = deciders._pool._processes
        manager: threading.Thread = deciders._pool._executor_manager_thread  # type: ignore[assignment]

        def watch() -> None:
            while not killed and time.monotonic() - start < 60:
                for pid in list(processes or {}):
                    try:
                        wchan = Path(f"/proc/{pid}/wchan").read_text()
                    except OSError:
                        continue
                    if "pipe_write" in wchan:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(time.monotonic())
                        time.sleep(0.02)
                        try:
                            task = f"/proc/{os.getpid()}/task/{manager.native_id}/wchan"
                            reader.append(Path(task).read_text() or "running")
                        except OSError:
                            reader.append("ended")
                        return
                time.sleep(0.0005)

        threading.Thread(target=watch, daemon=True).start()
        try:
            done = sum(1 for _ in deciders.decide_all(walks))
        except RetentionError as exc:
            after = time.monotonic() - (killed[0] if killed else start)
            print(
                f"reader {reader[0] if reader else '?'} 20 ms after the kill; RetentionError "
                f"{after:.2f} s after it: {str(exc)[:42]}...",
                flush=True,
            )
            return
    print(f"all {done} clusters decided, workers {deciders.workers}, kill: {bool(killed)}")


def main() -> None:
    """Run the rounds, each in its own interpreter, and report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--limit", type=float, default=120)
    parser.add_argument("--round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.round:
        one_round()
        return
    hung = 0
    for n in range(1, args.rounds + 1):
        start = time.monotonic()
        # A session of its own: a hung round's workers go with it (killpg), none lingers.
        child = subprocess.Popen(  # noqa: S603 - this script, this interpreter
            [sys.executable, __file__, "--round"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            said, _ = child.communicate(timeout=args.limit)
            said = said.strip().splitlines()[-1] if said.strip() else ""
            outcome = f"exit {child.returncode}: {said}"
        except subprocess.TimeoutExpired:
            hung += 1
            outcome = "HUNG, killed"
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
        print(f"round {n:2d}: {time.monotonic() - start:6.2f} s  {outcome}", flush=True)
    print(f"{args.rounds - hung}/{args.rounds} rounds ended, {hung} hung")


if __name__ == "__main__":
    main()
