"""The table of `make bench`: one Markdown table from benchmarks/results/*.json (written by
the benchmarks it ran), in the shape of the README's performance section.

    .venv/bin/python benchmarks/table.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def load(name: str) -> dict[str, Any] | None:
    """A benchmark's results, or None when it has not run."""
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def rows() -> list[tuple[str, str, str]]:
    """(measurement, result, goal) for every benchmark that has results."""
    out: list[tuple[str, str, str]] = []
    if core := load("core"):
        out.append(
            (
                f"pure core: {core['snapshots']:,} snapshots, {core['clusters']:,} clusters",
                f"{core['snapshots_per_second']:,} snapshots/s",
                f">= {core['goal_snapshots_per_second']:,}/s",
            )
        )
    if fleet := load("fleet"):
        ours, bound = fleet["ours"], fleet["bound"]
        head = f"plan: {fleet['clusters']:,} clusters at {fleet['latency_ms']:g} ms"
        out.append(
            (
                f"{head}, ours",
                f"{ours['seconds']} s, {ours['requests']:,} requests, "
                f"{ours['challenges']} challenges, peak RSS {ours['peak_rss_mib']} MiB",
                "",
            )
        )
        out.append(
            (f"{head}, raw-fetch bound", f"{bound['seconds']} s, {bound['pages']:,} pages", "")
        )
        out.append(("plan: ours / bound", f"{fleet['ours_over_bound']}", "<= 1.3"))
        if "baseline" in fleet:
            base = fleet["baseline"]
            out.append(
                (f"{head}, naive baseline", f"{base['seconds']} s, {base['pages']:,} pages", "")
            )
            out.append(("plan: baseline / ours", f"{fleet['baseline_over_ours']}", ""))
    if apply := load("apply"):
        ours, bound = apply["ours"], apply["bound"]
        head = f"apply: {bound['patches']:,} PATCHes at {apply['latency_ms']:g} ms"
        out.append((f"{head}, ours", f"{ours['seconds']} s, {ours['requests']:,} requests", ""))
        out.append((f"{head}, raw bound", f"{bound['seconds']} s", ""))
        out.append(("apply: ours / bound", f"{apply['ours_over_bound']}", ""))
    if memory := load("plan_memory"):
        for run in memory["runs"]:
            out.append(
                (
                    f"plan peak RSS, {run['clusters']:,} clusters",
                    f"{run['peak_rss_mib']} MiB ({run['snapshots']:,} snapshots)",
                    "",
                )
            )
    return out


def main() -> None:
    """Print the table and the machine the figures come from."""
    table = rows()
    if not table:
        raise SystemExit("no results yet: run make bench")
    print("| measurement | result | goal |")
    print("|---|---|---|")
    for measurement, result, goal in table:
        print(f"| {measurement} | {result} | {goal} |")
    machines = {r["machine"] for n in ("core", "fleet", "apply") if (r := load(n))}
    print("\nmachine: " + "; ".join(sorted(machines)))


if __name__ == "__main__":
    main()
