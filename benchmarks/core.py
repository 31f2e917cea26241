"""The pure core's throughput: decide() over 2,000 clusters x 500 snapshots (1,000,000) under
3 policies (GFS in Europe/Berlin, a short dev policy, a compliance policy with a quarterly
cron), each cluster matched by one of them in turn, and its restore points described, as a
plan does. One process, one core, no I/O.

    make bench      # or: .venv/bin/python benchmarks/core.py [--clusters 2000] [--per 500]

Goal: >= 250,000 snapshots/s. Writes benchmarks/results/core.json.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from machine import describe

from retention.config.policyfiles import parse_policies
from retention.core.decide import decide
from retention.core.model import ClusterView, SnapshotView, Target
from retention.core.restorable import describe_restore_points

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


# The three policies, as a policy file would give them (the decision model takes the
# loaded policies themselves).
POLICY_FILE = b"""
- name: production
  timezone: Europe/Berlin
  keep: {last: 4, daily: 7, weekly: 5, monthly: 12, yearly: 3, within: 2d}
  protect: {yearly: 1}
  safety: {min_keep: 2, max_expire_fraction: 1.0, hold_on_alerts: [BAD_CLUSTERSHOTS]}
- name: dev
  keep: {last: 3, daily: 3}
  grace: 2h
  safety: {min_keep: 2, max_expire_fraction: 1.0, hold_on_alerts: [BAD_CLUSTERSHOTS]}
- name: compliance
  keep:
    monthly: 13
    every: [{cron: "0 0 1 1,4,7,10 *", count: 8}]
  protect: {yearly: 7}
  safety: {min_keep: 2, max_expire_fraction: 1.0, hold_on_alerts: [BAD_CLUSTERSHOTS]}
"""
POLICIES = sorted(parse_policies([(Path("bench.yaml"), POLICY_FILE)]), key=lambda p: p.index)


def cluster(index: int, per: int) -> list[SnapshotView]:
    """A 6-hourly history of ``per`` snapshots with a mix of expiries."""
    out = []
    for i in range(per):
        created = NOW - timedelta(hours=6 * i + (index % 5))
        expires = created + timedelta(days=2 if i % 4 else 30)
        out.append(SnapshotView(f"c{index:04d}s{i:04d}", created, i != 0, i % 97 == 5, expires))
    return out


def main() -> None:
    """Time decide() (and the description) over the synthetic fleet and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--per", type=int, default=500)
    args = parser.parse_args()
    fleet = [cluster(i, args.per) for i in range(args.clusters)]
    lease_for = timedelta(days=2)
    changes = 0
    started = time.perf_counter()
    cpu = time.process_time()
    for i, snapshots in enumerate(fleet):
        target = Target("p", f"c{i:04d}", f"cluster-{i}")
        view = ClusterView(target, snapshots)
        decided = decide(view, [POLICIES[i % 3]], now=NOW, lease_for=lease_for)
        describe_restore_points(decided, NOW)
        changes += sum(1 for d in decided.decisions if d.patch is not None)
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu
    total = args.clusters * args.per
    result = {
        "machine": describe("one core"),
        "clusters": args.clusters,
        "snapshots": total,
        "policies": len(POLICIES),
        "changes_planned": changes,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "snapshots_per_second": round(total / seconds),
        "goal_snapshots_per_second": 250_000,
    }
    out = Path(__file__).parent / "results" / "core.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"pure core: {total:,} snapshots in {seconds:.2f} s ({cpu_seconds:.2f} s CPU) = "
        f"{total / seconds:,.0f} snapshots/s (goal 250,000); {changes:,} changes planned"
    )
    print(f"machine: {result['machine']}; written to {out}")


if __name__ == "__main__":
    main()
