"""The forecast without its walk: a year of daily steps for a fleet of clusters, each
starting from 300 six-hourly snapshots under a GFS policy (restic's rules, no protect count
rules), with the cadence read off the snapshots, run forward as `retention forecast` runs its
walked clusters: on a pool of ``--workers`` processes (forecasting.job.Forecaster through
planning.workers.Deciders), the clusters fed as a walk feeds them. No I/O.

    make bench      # or: .venv/bin/python benchmarks/forecast.py [--clusters 2000] [--days 365]
                    #     [--workers 2]

Goal: the bench fleet (2,000 clusters x 300 snapshots), 365 daily steps, in <= 60 s on two
cores. Writes benchmarks/results/forecast.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from machine import describe

from retention.config.policyfiles import parse_policies
from retention.core.model import SnapshotView, Target
from retention.core.policy.loader import PolicySet
from retention.forecast.forecaster import Forecaster
from retention.plan.workers import Deciders
from retention.walk.inventory import Walk

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
POLICY_FILE = b"""
- name: production
  timezone: Europe/Berlin
  keep: {last: 4, daily: 7, weekly: 5, monthly: 12, yearly: 3, within: 2d}
  safety: {min_keep: 2, max_expire_fraction: 1.0}
"""
POLICIES = PolicySet(parse_policies([(Path("bench.yaml"), POLICY_FILE)]))
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
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    run = Forecaster(POLICIES, None, NOW, args.days, timedelta(days=1), timedelta(days=1))
    walks = (
        Walk(Target("p", f"c{i:012x}", f"cluster-{i}"), cluster(i, args.per))
        for i in range(args.clusters)
    )
    started = time.perf_counter()
    with Deciders(run, args.workers, job="forecast") as forecasters:
        final = sum(outlook.current.counts[-1] for outlook in forecasters.decide_all(walks))
    seconds = time.perf_counter() - started
    # This process and its (reaped) workers: what the forecast cost in CPU.
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu_seconds = sum(u.ru_utime + u.ru_stime for u in usage)
    per_cluster_year = seconds / args.clusters * 365 / args.days
    bench_fleet = per_cluster_year * 2000
    result_doc = {
        "machine": describe(f"{os.cpu_count()} CPUs, {args.workers} workers"),
        "clusters": args.clusters,
        "snapshots_per_cluster": args.per,
        "days": args.days,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "seconds_per_cluster_year": round(per_cluster_year, 4),
        "bench_fleet_year_seconds": round(bench_fleet, 1),
        "goal_seconds_two_cores": GOAL_SECONDS,
        "goal_met": bench_fleet <= GOAL_SECONDS,
        "snapshots_at_the_end": final,
    }
    out = Path(__file__).parent / "results" / "forecast.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result_doc, indent=2) + "\n")
    verdict = "met" if bench_fleet <= GOAL_SECONDS else "NOT MET"
    print(
        f"forecast: {args.clusters:,} clusters x {args.per} snapshots, {args.days} daily steps "
        f"on {args.workers} workers in {seconds:.1f} s ({cpu_seconds:.1f} s CPU), "
        f"{per_cluster_year:.3f} s per cluster-year; the bench fleet's year: "
        f"{bench_fleet:.0f} s (goal <= {GOAL_SECONDS} s: {verdict}); {final:,} snapshots at "
        "the end"
    )
    print(f"machine: {result_doc['machine']}; written to {out}")


if __name__ == "__main__":
    main()
