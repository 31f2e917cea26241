"""The planner against the simulator's bench fleet with WAN latency, beside two yardsticks
measured in the same run:

- ours:     `retention plan` (walk, decide, write) at api.concurrency 8;
- bound:    a minimal raw fetch of exactly the same list pages at the same concurrency
            (requests + digest, one session per thread, no parsing, no planning);
- baseline: what a person would script: one requests.get per page with a fresh
            HTTPDigestAuth each time, itemsPerPage=100, one after another.

    .venv/bin/python benchmarks/fleet.py [--clusters 2000] [--latency-ms 20] [--skip-baseline]

Prints a table (ours/bound, goal <= 1.3; baseline/ours) and writes
benchmarks/results/fleet.json. The simulator runs in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests
from machine import describe
from requests.auth import HTTPDigestAuth
from simproc import admin, cpu_seconds, on_sessions, start_simulator

from retention.ops.cpus import available_cpus

KEY = "fleet-bench-secret"
POLICY = """\
name: bench
match: {clusters: ["rs-*"]}
keep: {last: 4, daily: 7, weekly: 4, monthly: 6}
safety: {max_expire_fraction: 1.0}
"""


def counters(base_url: str) -> dict[str, Any]:
    """Requests by endpoint and status, and 401 challenges, since the last reset."""
    got: dict[str, Any] = admin(base_url, "counters")
    return got


def ours(
    base_url: str, projects: list[str], folder: Path, workers: int | None
) -> tuple[float, float, float]:
    """`retention plan` as an operator runs it: (seconds, peak RSS MiB, CPU seconds of the
    retention process itself, from its rusage: comparable across runs, unlike wall time)."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "bench.yaml").write_text(POLICY)
    targets = "".join(f'  - project: "{p}"\n' for p in projects)
    config = folder / "retention.yaml"
    pool = f"  workers: {workers}\n" if workers else ""  # else the tool's default: the CPUs
    config.write_text(
        f"api:\n  base_url: {base_url}\n  concurrency: 8\n{pool}targets:\n{targets}"
        "policies: policies/\n"
    )
    env = {**os.environ, "RETENTION_PUBLIC_KEY": "sim-public-key", "RETENTION_PRIVATE_KEY": KEY}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-m", "retention", "--config", str(config), "plan", "--out",
         str(folder / "plan.json")],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 3):
        tail = (done.stdout + done.stderr)[-4000:]
        raise SystemExit(f"retention plan exited {done.returncode}:\n{tail}")
    seconds = time.perf_counter() - started
    # The simulator is a child too, but still running: only waited-for children count.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, after.ru_maxrss / 1024, cpu


def page_urls(base_url: str, per_page: int) -> list[str]:
    """Every list page the walk reads: discovery, alerts, and each cluster's snapshots."""
    fleet = admin(base_url, "fleet")
    urls = []
    for project in fleet["projects"]:
        group = f"{base_url}/groups/{project['id']}"
        first = "pageNum=1&itemsPerPage=500"
        urls += [f"{group}/clusters?{first}", f"{group}/hosts?{first}"]
        urls.append(f"{group}/alerts?status=OPEN&{first}")
        for cluster in project["clusters"]:
            pages = max(1, -(-cluster["snapshots"] // per_page))
            listing = f"{group}/clusters/{cluster['id']}/snapshots?completed=all"
            urls += [f"{listing}&pageNum={n}&itemsPerPage={per_page}" for n in range(1, pages + 1)]
    return urls


def bound(urls: list[str], concurrency: int) -> float:
    """Fetch the pages on ``concurrency`` keep-alive sessions, digest once per thread."""

    def fetch(session: requests.Session, url: str) -> None:
        session.get(url, timeout=120).raise_for_status()

    return on_sessions(urls, fetch, concurrency=concurrency, private_key=KEY)


def baseline(urls: list[str]) -> float:
    """One requests.get per page, a fresh HTTPDigestAuth each time, one after another."""
    started = time.perf_counter()
    for url in urls:
        requests.get(
            url, auth=HTTPDigestAuth("sim-public-key", KEY), timeout=120
        ).raise_for_status()
    return time.perf_counter() - started


def main() -> None:
    """Run the three measurements and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--workers", type=int, help="api.workers (default: the CPUs available)")
    args = parser.parse_args()
    proc, base_url = start_simulator(
        f"bench:{args.clusters}", KEY, "--latency-ms", str(args.latency_ms)
    )
    rows: dict[str, Any] = {}
    try:
        projects = [p["id"] for p in admin(base_url, "fleet")["projects"]]
        with tempfile.TemporaryDirectory() as tmp:
            admin(base_url, "reset", {})
            snapshots = sum(
                c["snapshots"] for p in admin(base_url, "fleet")["projects"] for c in p["clusters"]
            )
            sim_before = cpu_seconds(proc.pid)
            seconds, rss, cpu = ours(base_url, projects, Path(tmp), args.workers)
            sim_cpu = cpu_seconds(proc.pid) - sim_before
            seen = counters(base_url)
            rows["ours"] = {"seconds": round(seconds, 2), "peak_rss_mib": round(rss, 1),
                            "cpu_seconds": round(cpu, 2), "snapshots": snapshots,
                            "cpu_us_per_snapshot": round(cpu / snapshots * 1e6, 1),
                            "workers": args.workers or available_cpus(),
                            "simulator_cpu_seconds": round(sim_cpu, 2),
                            "requests": seen["requests"], "challenges": seen["challenges"],
                            "by_endpoint": seen["byEndpoint"]}  # fmt: skip
        admin(base_url, "reset", {})
        urls = page_urls(base_url, 500)
        sim_before = cpu_seconds(proc.pid)
        rows["bound"] = {"seconds": round(bound(urls, 8), 2), "pages": len(urls)}
        rows["bound"]["simulator_cpu_seconds"] = round(cpu_seconds(proc.pid) - sim_before, 2)
        if not args.skip_baseline:
            naive = page_urls(base_url, 100)
            rows["baseline"] = {"seconds": round(baseline(naive), 2), "pages": len(naive)}
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    result = {
        "machine": describe("2 cores shared with the simulator"),
        "clusters": args.clusters,
        "latency_ms": args.latency_ms,
        **rows,
        "ours_over_bound": round(rows["ours"]["seconds"] / rows["bound"]["seconds"], 2),
    }
    if "baseline" in rows:
        result["baseline_over_ours"] = round(
            rows["baseline"]["seconds"] / rows["ours"]["seconds"], 2
        )
    out = Path(__file__).parent / "results" / "fleet.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"fleet: {args.clusters} clusters, {args.latency_ms:g} ms latency")
    mine = rows["ours"]
    print(
        f"  ours:     {mine['seconds']:>8} s  {mine['requests']} requests, "
        f"{mine['challenges']} challenges, peak RSS {mine['peak_rss_mib']} MiB, "
        f"{mine['workers']} workers"
    )
    print(
        f"  client CPU: {mine['cpu_seconds']} s for {mine['snapshots']:,} snapshots = "
        f"{mine['cpu_us_per_snapshot']} us per snapshot (goal <= 5)"
    )
    for endpoint, count in sorted(mine["by_endpoint"].items()):
        print(f"            {count:>8}  {endpoint}")
    print(
        f"  bound:    {rows['bound']['seconds']:>8} s  {rows['bound']['pages']} pages"
        f" (simulator CPU {rows['bound']['simulator_cpu_seconds']} s; during ours "
        f"{mine['simulator_cpu_seconds']} s)"
    )
    if "baseline" in rows:
        print(f"  baseline: {rows['baseline']['seconds']:>8} s  {rows['baseline']['pages']} pages")
        print(f"  baseline / ours: {result['baseline_over_ours']}")
    print(f"  ours / bound: {result['ours_over_bound']} (goal <= 1.3)")
    print(f"machine: {result['machine']}; written to {out}")


if __name__ == "__main__":
    main()
