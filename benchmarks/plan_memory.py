"""Peak memory of a full `retention plan` against the simulator's bench fleet, at 500 and at
2,000 clusters (x ~300 snapshots): it must not grow with the number of clusters, because the
walk streams (a few clusters in memory) and decisions go straight to decisions.jsonl.

    make bench     # or: .venv/bin/python benchmarks/plan_memory.py [--sizes 500 2000]

The planner runs in a process of its own, so its peak RSS is measured alone (the simulator
runs in another). Writes benchmarks/results/plan_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from retention import cli

KEY = "bench-secret"


def child(config: str, out: str) -> None:
    """Run `retention plan` in this process and report its peak RSS on the last line."""
    started = time.perf_counter()
    code = cli.main(["--config", config, "plan", "--out", out])
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"exit": code, "peak_rss_mib": round(peak_kib / 1024, 1), "seconds": round(seconds, 2)}
        )
    )


def measure(clusters: int, folder: Path) -> dict[str, object]:
    """Serve bench:<clusters>, plan it in a child process, return its figures."""
    sim = subprocess.Popen(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-m", "retention", "simulator", "serve", "--fleet", f"bench:{clusters}",
         "--private-key", KEY],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        base_url = ""
        for line in sim.stdout:
            if match := re.search(r"base URL:\s+(\S+)", line):
                base_url = match.group(1)
                break
        admin = base_url.split("/api/", maxsplit=1)[0] + "/__admin/fleet"
        with urllib.request.urlopen(admin) as answer:  # noqa: S310 - loopback
            projects = [p["id"] for p in json.load(answer)["projects"]]
        config = folder / f"retention-{clusters}.yaml"
        targets = "\n".join(f'  - project: "{p}"' for p in projects)
        config.write_text(
            f"api:\n  base_url: {base_url}\n  concurrency: 8\ntargets:\n{targets}\n"
            f"policies: {Path(__file__).resolve().parent.parent / 'policies'}\n"
        )
        env = {**os.environ, "RETENTION_PUBLIC_KEY": "sim-public-key", "RETENTION_PRIVATE_KEY": KEY}
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
        figures["snapshots"] = json.loads((folder / f"plan-{clusters}.json").read_text())[
            "summary"
        ]["snapshots"]
        return figures
    finally:
        sim.terminate()
        sim.wait(timeout=60)


def main() -> None:
    """Measure each size and print a table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "OUT"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(size, Path(tmp)) for size in args.sizes]
    result = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, 2 cores",
        "runs": rows,
    }
    out = Path(__file__).parent / "results" / "plan_memory.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'clusters':>9}{'snapshots':>11}{'seconds':>9}{'peak RSS MiB':>14}{'exit':>6}")
    for row in rows:
        print(
            f"{row['clusters']:>9}{row['snapshots']:>11}{row['seconds']:>9}{row['peak_rss_mib']:>14}{row['exit']:>6}"
        )
    print(f"machine: {result['machine']}; written to {out}")


if __name__ == "__main__":
    main()
