"""The forecast's pure core: a year of daily steps for a fleet of clusters, each starting from
300 six-hourly snapshots under a GFS policy (restic's rules, no protect count rules), with
the cadence read off the snapshots. One process, one core, no I/O: `retention forecast`
runs the same function per cluster after its walk.

    make bench      # or: .venv/bin/python benchmarks/forecast.py [--clusters 2000] [--days 365]

Goal: the bench fleet (2,000 clusters x 300 snapshots), 365 daily steps, in <= 60 s on two
cores. Writes benchmarks/results/forecast.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from retention.config.policyfiles import parse_policies
from retention.core.cadence import observed_cadence
from retention.core.forecast import forecast_cluster
from retention.core.model import SnapshotView, Target

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
POLICY_FILE = b"""
- name: production
  timezone: Europe/Berlin
  keep: {last: 4, daily: 7, weekly: 5, monthly: 12, yearly: 3, within: 2d}
  safety: {min_keep: 2, max_expire_fraction: 1.0}
"""
POLICIES = list(parse_policies([(Path("bench.yaml"), POLICY_FILE)]))
GOAL_SECONDS = 60


def cluster(index: int, per: int) -> list[SnapshotView]:
    """A 6-hourly history of ``per`` snapshots, the newest expiring in 2 days, older ones
    kept long by earlier runs."""
    out = []
    for i in range(per):
        created = NOW - timedelta(hours=6 * i + (index % 5))
        expires = created + timedelta(days=2 if i < 8 else 400)
        out.append(
            SnapshotView(f"c{index:04d}s{i:04d}", created, True, False, expires, True, 10**9)
        )
    return out


def main() -> None:
    """Forecast every cluster of the synthetic fleet and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--per", type=int, default=300)
    parser.add_argument("--days", type=int, default=365)
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    final = 0
    for i in range(args.clusters):
        snapshots = cluster(i, args.per)
        result = forecast_cluster(
            Target("p", f"c{i:04d}", f"cluster-{i}"),
            snapshots,
            POLICIES,
            observed_cadence(snapshots, NOW),
            start=NOW,
            steps=args.days,
            step=timedelta(days=1),
            lease_for=timedelta(days=1),
        )
        final += result.steps[-1].count
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    per_cluster_year = seconds / args.clusters * 365 / args.days
    result_doc = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, one core",
        "clusters": args.clusters,
        "snapshots_per_cluster": args.per,
        "days": args.days,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "seconds_per_cluster_year": round(per_cluster_year, 4),
        "bench_fleet_year_one_core_seconds": round(per_cluster_year * 2000, 1),
        "goal_seconds_two_cores": GOAL_SECONDS,
        "snapshots_at_the_end": final,
    }
    out = Path(__file__).parent / "results" / "forecast.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result_doc, indent=2) + "\n")
    print(
        f"forecast core: {args.clusters:,} clusters x {args.per} snapshots, {args.days} daily "
        f"steps in {seconds:.1f} s ({cpu_seconds:.1f} s CPU), {per_cluster_year:.3f} s per "
        f"cluster-year; the bench fleet's year would take {per_cluster_year * 2000:.0f} s on "
        f"one core (goal {GOAL_SECONDS} s on two); {final:,} snapshots at the end"
    )
    print(f"machine: {result_doc['machine']}; written to {out}")


if __name__ == "__main__":
    main()
