"""Peak memory of a full `retention plan` against the simulator's bench fleet, at 500 and at
20,000 clusters (x ~300 snapshots: 6 million at the top): it must not grow with the number
of clusters, because the walk streams (a few clusters in memory), decisions go straight to
decisions.jsonl and changes to spool files.

    make bench     # or: .venv/bin/python benchmarks/plan_memory.py [--sizes 500 20000]

The planner runs in a process of its own, so its peak RSS is measured alone (the simulator
runs in another). The figure is the largest process's peak (rusage of the children): the
main process or one of its planning workers (api.workers, the CPUs by default), each of
which holds a few clusters. Writes benchmarks/results/plan_memory.json. The 20,000-cluster
run takes a few minutes and about 8 GB of disk for its plan files."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from machine import describe
from simproc import start_simulator

from retention.runfolder.planread import open_plan

KEY = "bench-secret"
EXTRA_ENV: dict[str, str] = {}  # for experiments, e.g. {"MALLOC_ARENA_MAX": "8"}
# A policy that matches every bench cluster and may change most of each: the plan then holds
# hundreds of thousands of changes, which is what memory must not grow with.
POLICY = """\
name: bench
match: {clusters: ["rs-*"]}
keep: {last: 4, daily: 7, weekly: 4, monthly: 6}
safety: {max_expire_fraction: 1.0}
"""


def child(config: str, out: str) -> None:
    """Run `python -m retention plan` as its own process (as a user would, re-exec and all)
    and report that process's peak RSS on the last line."""
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-m", "retention", "--config", config, "plan", "--out", out],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = {"exit": done.returncode, "peak_rss_mib": round(peak_kib / 1024, 1)}
    print(json.dumps({**report, "seconds": round(seconds, 2)}))


def measure(clusters: int, folder: Path) -> dict[str, object]:
    """Serve bench:<clusters>, plan it in a child process, return its figures."""
    sim, base_url = start_simulator(f"bench:{clusters}", KEY)
    try:
        admin = base_url.split("/api/", maxsplit=1)[0] + "/__admin/fleet"
        with urllib.request.urlopen(admin) as answer:  # noqa: S310 - loopback
            projects = [p["id"] for p in json.load(answer)["projects"]]
        (folder / "policies").mkdir(exist_ok=True)
        (folder / "policies" / "bench.yaml").write_text(POLICY)
        config = folder / f"retention-{clusters}.yaml"
        targets = "\n".join(f'  - project: "{p}"' for p in projects)
        config.write_text(
            f"api:\n  base_url: {base_url}\n  concurrency: 8\ntargets:\n{targets}\n"
            "policies: policies/\n"
        )
        env = {**os.environ, "RETENTION_PUBLIC_KEY": "sim-public-key", "RETENTION_PRIVATE_KEY": KEY}
        env.update(EXTRA_ENV)
        result = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
            [
                sys.executable,
                __file__,
                "--child",
                str(config),
                str(folder / f"plan-{clusters}.json"),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        figures: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
        figures["clusters"] = clusters
        # The head alone, streamed: at 20,000 clusters the plan file is gigabytes.
        summary = open_plan(folder / f"plan-{clusters}.json").head["summary"]
        figures["snapshots"] = summary["snapshots"]
        figures["changes"] = sum(summary["byAction"].values())
        return figures
    finally:
        sim.terminate()
        sim.wait(timeout=60)


def main() -> None:
    """Measure each size and print a table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 20000])
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "OUT"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(size, Path(tmp)) for size in args.sizes]
    result = {
        "machine": describe("2 cores"),
        "runs": rows,
    }
    out = Path(__file__).parent / "results" / "plan_memory.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'clusters':>9}{'snapshots':>11}{'changes':>9}{'seconds':>9}{'peak RSS MiB':>14}")
    for row in rows:
        print(
            f"{row['clusters']:>9}{row['snapshots']:>11}{row['changes']:>9}{row['seconds']:>9}"
            f"{row['peak_rss_mib']:>14}"
        )
    print(f"machine: {result['machine']}; written to {out}")


if __name__ == "__main__":
    main()
