"""Apply at scale: `retention apply` sending 10,000 PATCHes to the simulator with
WAN latency, beside the lower bound measured in the same run:

- ours:  `retention apply PLAN` at api.concurrency 8: compare-and-swap re-reads (one list
         walk per cluster), protect/extend before destructive changes, the journal;
- bound: exactly the same PATCH requests and bodies on 8 keep-alive sessions (requests +
         digest, one session per thread), nothing else.

    .venv/bin/python benchmarks/apply.py [--patches 10000] [--latency-ms 20]

The plan is made once, cut to --patches changes, and applied to the fleet as the plan saw
it; the simulator is reset (same fleet, same ids) before the bound sends the same PATCHes.
Prints a table and writes benchmarks/results/apply.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests
from machine import describe
from simproc import admin, on_sessions, start_simulator

KEY = "apply-bench-secret"
CONCURRENCY = 8
POLICY = """\
name: bench
match: {clusters: ["rs-*"]}
keep: {last: 4, daily: 7, weekly: 4, monthly: 6}
safety: {max_expire_fraction: 1.0}
"""


def retention(folder: Path, *args: str) -> float:
    """Run the retention command line against the simulator; return its wall time."""
    env = {**os.environ, "RETENTION_PUBLIC_KEY": "sim-public-key", "RETENTION_PRIVATE_KEY": KEY}
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-m", "retention", "--config", str(folder / "retention.yaml"), *args],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 3):
        tail = (done.stdout + done.stderr)[-4000:]
        raise SystemExit(f"retention {args[0]} exited {done.returncode}:\n{tail}")
    return seconds


def cut_plan(path: Path, patches: int) -> list[dict[str, Any]]:
    """Keep the first ``patches`` changes of the plan (whole clusters first, in plan order)."""
    document = json.loads(path.read_text())
    changes: list[dict[str, Any]] = document["changes"][:patches]
    if len(changes) < patches:
        raise SystemExit(f"the plan has {len(changes)} changes, fewer than {patches}")
    document["changes"] = changes
    document["held"] = []
    path.write_text(json.dumps(document, indent=2) + "\n")
    return changes


def bound(base_url: str, changes: list[dict[str, Any]]) -> float:
    """Send the PATCHes on CONCURRENCY keep-alive sessions, digest once per thread."""

    def send(session: requests.Session, c: dict[str, Any]) -> None:
        url = f"{base_url}/groups/{c['projectId']}/clusters/{c['clusterId']}/snapshots/"
        session.patch(url + c["snapshotId"], json=c["body"], timeout=120).raise_for_status()

    return on_sessions(changes, send, concurrency=CONCURRENCY, private_key=KEY)


def main() -> None:
    """Plan once, then time apply and the bound on the same fleet state."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--patches", type=int, default=10_000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    # The bench policy changes about 280 of a bench cluster's 300 snapshots.
    clusters = args.patches // 270 + 2
    proc, base_url = start_simulator(f"bench:{clusters}", KEY, "--latency-ms", str(args.latency_ms))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "policies").mkdir()
            (folder / "policies" / "bench.yaml").write_text(POLICY)
            projects = [p["id"] for p in admin(base_url, "fleet")["projects"]]
            targets = "".join(f'  - project: "{p}"\n' for p in projects)
            (folder / "retention.yaml").write_text(
                f"api:\n  base_url: {base_url}\n  concurrency: {CONCURRENCY}\n"
                f"targets:\n{targets}policies: policies/\n"
            )
            plan = folder / "run" / "plan.json"
            retention(folder, "plan", "--out", str(plan))
            changes = cut_plan(plan, args.patches)
            admin(base_url, "reset", {})
            seconds = retention(folder, "apply", str(plan), "--quiet")
            seen = admin(base_url, "counters")
            sent = sum(1 for p in admin(base_url, "patches")["patches"] if p["status"] == 200)
            admin(base_url, "reset", {})
            raw = bound(base_url, changes)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    ours = {
        "seconds": round(seconds, 2),
        "patches_applied": sent,
        "requests": seen["requests"],
        "challenges": seen["challenges"],
        "by_endpoint": seen["byEndpoint"],
    }
    result = {
        "machine": describe("2 cores shared with the simulator"),
        "latency_ms": args.latency_ms,
        "concurrency": CONCURRENCY,
        "ours": ours,
        "bound": {"seconds": round(raw, 2), "patches": len(changes)},
        "ours_over_bound": round(seconds / raw, 2),
    }
    out = Path(__file__).parent / "results" / "apply.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"apply: {len(changes)} PATCHes, {args.latency_ms:g} ms latency, {CONCURRENCY} threads")
    print(
        f"  ours:  {seconds:>8.2f} s  {sent} applied, {seen['requests']} requests "
        f"({seen['challenges']} challenges)"
    )
    print(f"  bound: {raw:>8.2f} s  {len(changes)} PATCHes")
    print(f"  ours / bound: {result['ours_over_bound']}")
    print(f"machine: {result['machine']}; written to {out}")


if __name__ == "__main__":
    main()
