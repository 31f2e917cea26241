"""The disk a run folder takes: `retention run --dry-run` of the simulator's bench fleet
(the bench policy, every file a dry run writes: plan.json, decisions.jsonl.zst, report.html,
report.md), in bytes per snapshot; the goal is 100.

    make bench      # or: .venv/bin/python benchmarks/footprint.py [--clusters 500]

Writes benchmarks/results/footprint.json."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import describe
from plan_memory import KEY, POLICY
from simproc import admin, start_simulator

GOAL_BYTES_PER_SNAPSHOT = 100


def measure(clusters: int, folder: Path) -> dict[str, object]:
    """Serve bench:<clusters>, dry-run it, and size its run folder file by file."""
    sim, base_url = start_simulator(f"bench:{clusters}", KEY)
    try:
        projects = [p["id"] for p in admin(base_url, "fleet")["projects"]]
        (folder / "policies").mkdir(exist_ok=True)
        (folder / "policies" / "bench.yaml").write_text(POLICY)
        targets = "\n".join(f'  - project: "{p}"' for p in projects)
        config = folder / "retention.yaml"
        config.write_text(
            f"api:\n  base_url: {base_url}\n  concurrency: 8\ntargets:\n{targets}\n"
            "policies: policies/\nreports:\n  dir: reports/\n"
        )
        env = {**os.environ, "RETENTION_PUBLIC_KEY": "sim-public-key", "RETENTION_PRIVATE_KEY": KEY}
        done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
            [sys.executable, "-m", "retention", "--config", str(config), "run", "--dry-run",
             "--quiet", "--format", "json"],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        document = json.loads(done.stdout)
        run_dir = Path(document["runDir"])
        files = {p.name: p.stat().st_size for p in sorted(run_dir.iterdir()) if p.is_file()}
        snapshots = document["summary"]["snapshots"]
        total = sum(files.values())
        return {
            "clusters": clusters,
            "snapshots": snapshots,
            "exit": done.returncode,
            "files": files,
            "bytes": total,
            "bytes_per_snapshot": round(total / snapshots, 1),
        }
    finally:
        sim.terminate()
        sim.wait(timeout=60)


def main() -> None:
    """Measure and print the run folder's size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        row = measure(args.clusters, Path(tmp))
    result = {"machine": describe("2 cores"), "goal_bytes_per_snapshot": GOAL_BYTES_PER_SNAPSHOT}
    result.update(row)
    out = Path(__file__).parent / "results" / "footprint.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    files = row["files"]
    assert isinstance(files, dict)
    for name, size in files.items():
        print(f"{name:>22} {size:>12,} bytes")
    print(
        f"run folder of a dry run, {row['clusters']:,} clusters, {row['snapshots']:,} snapshots: "
        f"{row['bytes']:,} bytes, {row['bytes_per_snapshot']} bytes a snapshot "
        f"(goal {GOAL_BYTES_PER_SNAPSHOT}); written to {out}"
    )


if __name__ == "__main__":
    main()
