"""The tables of `make bench`, from benchmarks/results/*.json (written by the benchmarks it
ran), in the shape of the README's performance section: first the goals (goals() below) with
their status, then every measurement behind them.

    .venv/bin/python benchmarks/table.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
# "Flat" peak memory: the largest fleet's peak at most this much above the smallest's.
FLAT = 1.2


def load(name: str) -> dict[str, Any] | None:
    """A benchmark's results, or None when it has not run."""
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def status(met: bool | None) -> str:
    """A goal's status in words."""
    return "not measured" if met is None else "met" if met else "NOT MET"


def goals() -> list[tuple[str, str, str, str]]:
    """(goal, measured, target, status) for each goal, from the latest results."""
    fleet, memory, apply = load("fleet"), load("plan_memory"), load("apply")
    out: list[tuple[str, str, str, str]] = []
    if fleet:
        ratio = fleet["ours_over_bound"]
        out.append(("plan: ours / raw-fetch bound", f"{ratio}", "<= 1.3", status(ratio <= 1.3)))
        speedup = fleet.get("baseline_over_ours")
        out.append(
            (
                "plan: naive baseline / ours",
                f"{speedup}" if speedup is not None else "(baseline skipped)",
                ">= 20",
                status(None if speedup is None else speedup >= 20),
            )
        )
        cpu = fleet["ours"]["cpu_us_per_snapshot"]
        out.append(
            (
                "plan: client CPU per snapshot (walk, parse, decide, write)",
                f"{cpu} us",
                "<= 5 us",
                status(cpu <= 5),
            )
        )
    else:
        out += [("plan (benchmarks/fleet.py)", "", "", status(None))]
    if memory and len(memory["runs"]) > 1:
        runs = sorted(memory["runs"], key=lambda r: r["clusters"])
        low, high = runs[0], runs[-1]
        growth = high["peak_rss_mib"] / low["peak_rss_mib"]
        out.append(
            (
                f"plan: peak RSS from {low['clusters']:,} to {high['clusters']:,} clusters",
                f"{low['peak_rss_mib']} -> {high['peak_rss_mib']} MiB (x{growth:.2f})",
                f"flat (<= x{FLAT})",
                status(growth <= FLAT),
            )
        )
    else:
        out.append(("plan: peak RSS flat (benchmarks/plan_memory.py)", "", "", status(None)))
    if apply:
        ratio = apply["ours_over_bound"]
        patches = apply["bound"]["patches"]
        out.append(
            (
                f"apply: {patches:,} PATCHes, ours / bound",
                f"{ratio}",
                "<= 1.3",
                status(ratio <= 1.3),
            )
        )
    else:
        out.append(("apply (benchmarks/apply.py)", "", "", status(None)))
    if forecast := load("forecast"):
        seconds = forecast["bench_fleet_year_seconds"]
        goal = forecast["goal_seconds_two_cores"]
        out.append(
            (
                "forecast: the bench fleet a year ahead, daily steps",
                f"{seconds} s ({forecast['machine'].split(', ')[2]})",
                f"<= {goal} s",
                status(seconds <= goal),
            )
        )
    else:
        out.append(("forecast (benchmarks/forecast.py)", "", "", status(None)))
    if footprint := load("footprint"):
        per, goal = footprint["bytes_per_snapshot"], footprint["goal_bytes_per_snapshot"]
        out.append(
            (
                f"disk: a dry run's folder, {footprint['clusters']:,} bench clusters, all files",
                f"{per} bytes a snapshot",
                f"<= {goal} bytes",
                status(per <= goal and footprint["exit"] in (0, 3)),
            )
        )
    else:
        out.append(("disk (benchmarks/footprint.py)", "", "", status(None)))
    out += _ledger_goals()
    if suite := load("suite"):
        out.append(
            (
                "make test on this machine",
                f"{suite['seconds']} s" + ("" if suite["exit"] == 0 else " (it failed)"),
                f"< {suite['goal_seconds']} s",
                status(suite["exit"] == 0 and suite["seconds"] < suite["goal_seconds"]),
            )
        )
    else:
        out.append(("make test (benchmarks/suite.py)", "", "", status(None)))
    return out


def _ledger_goals() -> list[tuple[str, str, str, str]]:
    """The ledger's: what it adds to a plan (each case, each backend) and its size."""
    out: list[tuple[str, str, str, str]] = []
    if ledger := load("ledger"):
        goal = ledger["goal_ratio"]
        cases = {
            "steady": "a plan of a ledger that knows the fleet, nothing changed",
            "compared": "the same, every cluster's rows read and compared with its walk",
            "first": "the first plan",
        }
        for backend in ("sqlite", "postgresql"):
            for case, words in cases.items():
                if figures := ledger.get(backend, {}).get(case):
                    out.append(
                        (
                            f"ledger ({backend}): {words}, {ledger['clusters']:,} clusters, "
                            "with / without (median of pairs)",
                            f"{figures['median_ratio']}",
                            f"<= {goal}",
                            status(figures["meets_goal"]),
                        )
                    )
    else:
        out.append(("ledger: added to a plan (benchmarks/ledger.py)", "", "", status(None)))
    if size := load("ledger_size"):
        per, goal = size["bytes_per_snapshot_per_day"], size["goal_bytes_per_snapshot_per_day"]
        out.append(
            (
                f"ledger: size after {size['days']} daily runs of {size['clusters']} clusters, "
                "per snapshot per day",
                f"{per} bytes",
                f"<= {goal} bytes",
                status(per <= goal),
            )
        )
    else:
        out.append(("ledger: size (benchmarks/ledger_size.py)", "", "", status(None)))
    if found := load("evidence"):
        for backend in ("sqlite", "postgresql"):
            for case, words in (("html", "HTML"), ("all", "all four formats")):
                if figures := found.get(backend, {}).get(case):
                    out.append(
                        (
                            f"evidence ({backend}): a year of {found['clusters']} clusters "
                            f"({found['days']} daily runs), {words}",
                            f"{figures['seconds']} s, {figures['peak_mb']} MB",
                            f"<= {found['goal_seconds']:.0f} s, {found['goal_mb']:.0f} MB",
                            status(figures["met"]),
                        )
                    )
    else:
        out.append(("evidence of a year (benchmarks/evidence.py)", "", "", status(None)))
    return out


def _ledger_rows() -> list[tuple[str, str]]:
    """The figures behind the ledger's goals."""
    out: list[tuple[str, str]] = []
    if ledger := load("ledger"):
        for backend in ("sqlite", "postgresql"):
            for case, figures in ledger.get(backend, {}).items():
                pairs = figures["pairs"]
                seconds = ", ".join(
                    f"{p['without_seconds']} -> {p['with_seconds']} s" for p in pairs
                )
                out.append(
                    (
                        f"ledger ({backend}), {case} plan, {ledger['clusters']:,} clusters at "
                        f"{ledger['latency_ms']:g} ms: without -> with, pair by pair",
                        seconds,
                    )
                )
    if size := load("ledger_size"):
        out.append(
            (
                f"ledger size: {size['days']} daily runs of {size['clusters']} clusters "
                f"({size['known_average']:,} snapshots known on average)",
                f"{size['final_bytes'] / 1e6:.1f} MB; the first run "
                f"{size['first_run_bytes_per_snapshot']} bytes a snapshot, each day after "
                f"{size['steady_bytes_per_snapshot_per_day']} bytes a snapshot "
                f"({size['steady_bytes_per_cluster_per_day']:,} bytes a cluster)",
            )
        )
        if checked := size.get("verify"):
            out.append(
                (
                    f"ledger verify after those {size['days']} runs",
                    f"{checked['seconds']} s for {checked['records']} records",
                )
            )
    return out


def rows() -> list[tuple[str, str]]:
    """(measurement, result) for every benchmark that has results."""
    out: list[tuple[str, str]] = []
    if core := load("core"):
        out.append(
            (
                f"pure core: decide() over {core['snapshots']:,} snapshots, "
                f"{core['clusters']:,} clusters, one core",
                f"{core['snapshots_per_second']:,} snapshots/s",
            )
        )
    if parse := load("parse"):
        for case in parse["cases"]:
            if "walk_decoder_ms" in case:
                out.append(
                    (
                        f"parse: a page of {parse['items_per_page']} snapshots, {case['page']}, "
                        "walk decoder vs pydantic validate_json",
                        f"{case['walk_decoder_ms']} ms vs {case['validate_json_ms']} ms",
                    )
                )
    if fleet := load("fleet"):
        ours, bound = fleet["ours"], fleet["bound"]
        head = f"plan: {fleet['clusters']:,} clusters at {fleet['latency_ms']:g} ms"
        workers = f", {ours['workers']} workers" if "workers" in ours else ""
        out.append(
            (
                f"{head}, ours{workers}",
                f"{ours['seconds']} s, {ours['requests']:,} requests, "
                f"{ours['challenges']} challenges, peak RSS {ours['peak_rss_mib']} MiB",
            )
        )
        if "cpu_seconds" in ours:
            out.append(
                (
                    f"{head}, client CPU (its own and its workers')",
                    f"{ours['cpu_seconds']} s for {ours['snapshots']:,} snapshots",
                )
            )
        out.append((f"{head}, raw-fetch bound", f"{bound['seconds']} s, {bound['pages']:,} pages"))
        if "simulator_cpu_seconds" in bound:
            out.append(
                (
                    f"{head}, the simulator's own CPU (one process, one GIL)",
                    f"{bound['simulator_cpu_seconds']} s serving the bound, "
                    f"{ours['simulator_cpu_seconds']} s serving ours",
                )
            )
        if "baseline" in fleet:
            base = fleet["baseline"]
            out.append((f"{head}, naive baseline", f"{base['seconds']} s, {base['pages']:,} pages"))
    if apply := load("apply"):
        ours, bound = apply["ours"], apply["bound"]
        head = f"apply: {bound['patches']:,} PATCHes at {apply['latency_ms']:g} ms"
        out.append((f"{head}, ours", f"{ours['seconds']} s, {ours['requests']:,} requests"))
        out.append((f"{head}, raw bound", f"{bound['seconds']} s"))
    if memory := load("plan_memory"):
        for run in memory["runs"]:
            out.append(
                (
                    f"plan peak RSS, {run['clusters']:,} clusters",
                    f"{run['peak_rss_mib']} MiB ({run['snapshots']:,} snapshots, "
                    f"{run['seconds']} s)",
                )
            )
    return out + _ledger_rows()


def main() -> None:
    """Print both tables and the machines the figures come from."""
    table = rows()
    if not table:
        raise SystemExit("no results yet: run make bench")
    print("| goal | measured | target | status |")
    print("|---|---|---|---|")
    for goal, measured, target, state in goals():
        print(f"| {goal} | {measured} | {target} | {state} |")
    print()
    print("| measurement | result |")
    print("|---|---|")
    for measurement, result in table:
        print(f"| {measurement} | {result} |")
    names = (
        "core", "parse", "fleet", "apply", "plan_memory", "forecast", "footprint", "ledger",
        "ledger_size", "suite",
    )  # fmt: skip
    machines = {r["machine"] for n in names if (r := load(n))}
    print("\nmachine: " + "; ".join(sorted(machines)))


if __name__ == "__main__":
    main()
