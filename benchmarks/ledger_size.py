"""The ledger's size: 30 simulated daily runs of 200 clusters against a new SQLite ledger,
its file measured after each, and what fills it.

The fleet is the bench shape (about 300 snapshots a cluster: 6-hourly snapshots kept about
70 days, dailies, weeklies, monthlies 13 months), written as a fleet file whose clusters take
snapshots as the simulator's clock moves (`taking: true`). Each day the clock moves 24 hours
to 03:00 (the schedules take the day's four snapshots, the reaper deletes what expired), and
`retention run` plans and applies with the `keep` policy below: it keeps what the service's
schedule keeps, so after the first run the fleet is in its steady state, and every day the
lease extends the kept snapshots about to run out, the snapshots leaving the window are
shortened to the grace, and the ones that ran out vanish: the changes, and the events, of an
ordinary day. On five days a change is made "as someone else" (`/__admin/outside`): an expiry
shortened, a doNotDelete set, a snapshot deleted, a backup terminated, a cluster removed;
the next run must name each.

    make bench-ledger   # or: .venv/bin/python benchmarks/ledger_size.py [--clusters 200]
                        #     [--days 30] [--snapshots-per-cluster 300]

Reports the file's size after each run and, at the end, bytes per snapshot per day (the
file's size / (snapshots the ledger knew, on average over the runs x days)), the same for
the days after the first (the growth of a steady fleet), bytes per run, bytes per cluster
per day, what takes the space (SQLite's dbstat: each table and index) and how long
`retention ledger verify` then takes. Writes benchmarks/results/ledger_size.json.

Each run is a process of its own whose clock is the simulator's (a --child of this script
gives retention.cli.main that clock), so the two agree on the day.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests
from machine import describe
from requests.auth import HTTPDigestAuth
from simproc import admin, start_simulator

from retention.core.timestamps import format_timestamp, parse_timestamp
from retention.simulator.fleet import FleetBuilder

KEY = "ledger-size-secret"
# At most what one more run folder a day takes (benchmarks/footprint.py's goal): a year of a
# 10,000-snapshot fleet under 365 MB.
GOAL_BYTES_PER_SNAPSHOT_PER_DAY = 100
DAY = 86400
RUN_HOUR = 3  # the schedule's hour: each run is at 03:00 of its day
# Keeps what the fleet's schedule keeps: {window} is the 6-hourly snapshots' days.
POLICY = """\
name: steady
match: {{clusters: ["rs-*"]}}
keep: {{within: {window}d, daily: 7, weekly: 4, monthly: 13}}
grace: 24h
"""
# The changes made outside retention: on which day (before its run), and what.
OUTSIDE = {
    5: "expires",
    10: "doNotDelete",
    15: "delete",
    20: "terminate",
    25: "remove",
}
# What the run after each must name it.
FINDING = {
    "expires": "changed",
    "doNotDelete": "changed",
    "delete": "deleted-early",
    "terminate": "gone",
    "remove": "gone",
}


def child(at: str, argv: list[str]) -> None:
    """Run the command line with a clock that starts at ``at`` (the simulator's time)."""
    from retention.cli import main as cli_main  # noqa: PLC0415 - only in the child

    start, ticks = parse_timestamp(at), time.monotonic()

    def clock() -> datetime:
        return start + timedelta(seconds=time.monotonic() - ticks)

    raise SystemExit(cli_main(argv, clock=clock))


def fleet_file(folder: Path, clusters: int, window: int) -> Path:
    """The bench shape with `taking: true`: 100 clusters a project, named as bench:N's."""
    projects = []
    for first in range(0, clusters, 100):
        names = [f"rs-{i:04d}" for i in range(first, min(first + 100, clusters))]
        projects.append(
            {
                "name": f"project-{first // 100:02d}",
                "clusters": [{"name": n, "generate": {"six_hourly_days": window}} for n in names],
            }
        )
    path = folder / "fleet.json"
    path.write_text(json.dumps({"taking": True, "projects": projects}))
    return path


def window_for(snapshots: int) -> int:
    """The 6-hourly retention (days) that gives a bench cluster ``snapshots`` snapshots."""
    return FleetBuilder(1, datetime.now(UTC), "http://127.0.0.1").days_for(snapshots)


class Day:
    """One simulated day: the clock moved, perhaps a change made outside, then a run."""

    def __init__(self, folder: Path, base_url: str) -> None:
        self.folder = folder
        self.base_url = base_url
        self.api = requests.Session()
        self.api.auth = HTTPDigestAuth("sim-public-key", KEY)

    def now(self) -> str:
        """The simulator's time."""
        return str(admin(self.base_url, "clock")["now"])

    def retention(self, *args: str) -> dict[str, Any]:
        """A command at the simulator's time, --format json; its document and seconds."""
        env = {**os.environ, "RETENTION_PUBLIC_KEY": "sim-public-key", "RETENTION_PRIVATE_KEY": KEY}
        started = time.perf_counter()
        done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
            [sys.executable, __file__, "--child", self.now(), "--config",
             str(self.folder / "retention.yaml"), *args, "--format", "json"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode not in (0, 3):
            tail = (done.stdout + done.stderr)[-4000:]
            raise SystemExit(f"retention {' '.join(args)} exited {done.returncode}:\n{tail}")
        document: dict[str, Any] = json.loads(done.stdout)
        document["seconds"] = round(time.perf_counter() - started, 1)
        return document

    def outside(self, action: str, project: dict[str, Any], day: int) -> dict[str, Any]:
        """Make ``action`` as someone else, on a cluster of ``project`` picked by the day."""
        cluster = project["clusters"][day]
        body: dict[str, Any] = {"action": action, "clusterId": cluster["id"]}
        if action in ("expires", "doNotDelete", "delete"):
            body["snapshotId"] = self._kept_snapshot(project["id"], cluster["id"])
        if action == "expires":  # shortened in the UI: three days from now
            soon = parse_timestamp(self.now()) + timedelta(days=3)
            body["expires"] = format_timestamp(soon)
        if action == "doNotDelete":
            body["doNotDelete"] = True
        return dict(admin(self.base_url, "outside", body))

    def _kept_snapshot(self, project_id: str, cluster_id: str) -> str:
        """A complete snapshot well inside its expiry: the tenth newest."""
        url = f"{self.base_url}/groups/{project_id}/clusters/{cluster_id}/snapshots"
        answer = self.api.get(url, params={"itemsPerPage": 50}, timeout=60)
        answer.raise_for_status()
        complete = [s for s in answer.json()["results"] if s.get("complete")]
        return str(complete[9]["id"])


def measure(path: Path) -> tuple[int, int, int]:
    """The ledger's size (its pages, a WAL's included: what the file holds once the WAL is
    checkpointed into it), the bytes of its files now (the file, and a WAL left by a run),
    and the snapshots it knows and has not seen go."""
    files = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        (known,) = db.execute(
            "SELECT count(*) FROM ledger_snapshots WHERE gone_run IS NULL"
        ).fetchone()
    finally:
        db.close()
    return pages * page_size, files, int(known)


def what_fills_it(path: Path) -> dict[str, Any]:
    """Bytes by table and index (dbstat), rows by table, events by kind."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ledger_%'"
            )
        ]
        rows = {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}  # noqa: S608 - names from sqlite_master
        kinds = dict(
            db.execute(
                "SELECT kind, count(*) FROM ledger_events GROUP BY kind ORDER BY count(*) DESC"
            ).fetchall()
        )
        try:
            pages = dict(
                db.execute(
                    "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC"
                ).fetchall()
            )
        except sqlite3.OperationalError:  # an SQLite built without dbstat
            pages = {}
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0] * page_size
    finally:
        db.close()
    return {"bytes_by_object": pages, "free_bytes": free, "rows": rows, "events_by_kind": kinds}


def main() -> None:  # noqa: PLR0915 - one measurement, told in order
    """Run the days and print the size after each."""
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--snapshots-per-cluster", type=int, default=300)
    args = parser.parse_args()
    window = window_for(args.snapshots_per_cluster)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sim, base_url = start_simulator(str(fleet_file(folder, args.clusters, window)), KEY)
        try:
            (folder / "policies").mkdir()
            (folder / "policies" / "steady.yaml").write_text(POLICY.format(window=window))
            fleet = admin(base_url, "fleet")
            targets = "".join(f'  - project: "{p["id"]}"\n' for p in fleet["projects"])
            (folder / "retention.yaml").write_text(
                f"api:\n  base_url: {base_url}\n  concurrency: 8\ntargets:\n{targets}"
                'policies: policies/\nschedule: "0 3 * * *"\n'
                "reports:\n  dir: reports/\n  formats: []\n  keep: 2d\n"
            )
            ledger = folder / "reports" / "ledger.db"
            # The first run at the next 03:00; the clock stands still between runs.
            built = parse_timestamp(admin(base_url, "clock")["now"])
            first = built.replace(hour=RUN_HOUR, minute=0, second=0, microsecond=0)
            if first <= built:
                first += timedelta(days=1)
            admin(base_url, "clock", {"now": format_timestamp(first), "frozen": True})
            day = Day(folder, base_url)
            print(
                f"ledger size: {args.clusters} clusters, 6-hourly snapshots kept {window} days, "
                f"{args.days} daily runs from {format_timestamp(first)}",
                flush=True,
            )
            print(f"{'day':>4}{'snapshots':>11}{'known':>8}{'changes':>9}{'outside':>9}"
                  f"{'seconds':>9}{'ledger bytes':>14}{'grew':>12}{'on disk':>14}")  # fmt: skip
            for n in range(1, args.days + 1):
                if n > 1:
                    admin(base_url, "clock", {"advance": DAY})
                made = None
                if n in OUTSIDE:
                    project = fleet["projects"][n % len(fleet["projects"])]
                    answer = day.outside(OUTSIDE[n], project, n)
                    made = {"action": OUTSIDE[n], "clusterName": answer.get("clusterName")}
                document = day.retention("run", "--quiet")
                summary = document["summary"]
                head = _plan_head(Path(document["runDir"]) / "plan.json")
                found = [
                    {"kind": c["kind"], "clusterName": c["clusterName"], "alertId": c["alertId"]}
                    for c in head.get("outsideChanges", [])
                ]
                size, files, known = measure(ledger)
                row = {
                    "day": n,
                    "exit": document["exitCode"],
                    "seconds": document["seconds"],
                    "snapshots": summary["snapshots"],
                    "known": known,
                    "changes": sum((document.get("outcomes") or {}).values()),
                    "outside_made": made,
                    "outside_found": found,
                    "baseline": head.get("ledger", {}).get("baseline"),
                    "ledger_bytes": size,
                    "file_bytes": files,
                }
                grew = size - rows[-1]["ledger_bytes"] if rows else size
                rows.append(row)
                print(
                    f"{n:>4}{row['snapshots']:>11,}{row['known']:>8,}{row['changes']:>9,}"
                    f"{len(found):>9}{row['seconds']:>9}{size:>14,}{grew:>12,}{files:>14,}",
                    flush=True,
                )
            filled = what_fills_it(ledger)
            # What checking the whole chain costs once the ledger is this size.
            checked = day.retention("ledger", "verify")
        finally:
            sim.terminate()
            sim.wait(timeout=60)
    result = _figures(rows, args.clusters)
    result.update(
        {
            "machine": describe("2 cores shared with the simulator"),
            "goal_bytes_per_snapshot_per_day": GOAL_BYTES_PER_SNAPSHOT_PER_DAY,
            "clusters": args.clusters,
            "days": args.days,
            "six_hourly_days": window,
            "policy": POLICY.format(window=window),
            "outside_made": {str(k): v for k, v in OUTSIDE.items()},
            "what_fills_it": filled,
            "verify": {
                "verified": checked["verified"],
                "records": checked["records"],
                "seconds": checked["seconds"],
            },
            "runs": rows,
        }
    )
    out = Path(__file__).parent / "results" / "ledger_size.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    _print(result)
    print(f"machine: {result['machine']}; written to {out}")


def _plan_head(path: Path) -> dict[str, Any]:
    from retention.runfolder.planread import open_plan  # noqa: PLC0415 - only here

    head: dict[str, Any] = open_plan(path).head
    return head


def _figures(rows: list[dict[str, Any]], clusters: int) -> dict[str, Any]:
    """Bytes per snapshot per day (all days, and the days after the first), per run and
    per cluster per day."""
    days = len(rows)
    final = rows[-1]["ledger_bytes"]
    known = statistics.fmean(r["known"] for r in rows)
    later = rows[1:]
    grown = final - rows[0]["ledger_bytes"]
    known_later = statistics.fmean(r["known"] for r in later) if later else known
    return {
        "final_bytes": final,
        "known_average": round(known),
        "bytes_per_snapshot_per_day": round(final / (known * days), 1),
        "first_run_bytes": rows[0]["ledger_bytes"],
        "first_run_bytes_per_snapshot": round(rows[0]["ledger_bytes"] / rows[0]["known"], 1),
        "steady_bytes_per_snapshot_per_day": (
            round(grown / (known_later * len(later)), 1) if later else None
        ),
        "steady_bytes_per_cluster_per_day": (
            round(grown / (clusters * len(later))) if later else None
        ),
        "bytes_per_run": round(final / days),
        "outside_found": {r["day"]: r["outside_found"] for r in rows if r["outside_found"]},
        "outside_caught_as_made": all(_caught(r) for r in rows),
    }


def _caught(row: dict[str, Any]) -> bool:
    """The run named the day's change once, on its cluster, and nothing else."""
    made = row["outside_made"]
    expected = [] if made is None else [(FINDING[made["action"]], made["clusterName"])]
    return [(f["kind"], f["clusterName"]) for f in row["outside_found"]] == expected


def _print(result: dict[str, Any]) -> None:
    print(
        f"after {result['days']} runs: {result['final_bytes']:,} bytes; "
        f"{result['known_average']:,} snapshots known on average"
    )
    print(
        f"  bytes per snapshot per day: {result['bytes_per_snapshot_per_day']} "
        f"(goal <= {result['goal_bytes_per_snapshot_per_day']}) "
        f"(the first run: {result['first_run_bytes_per_snapshot']} bytes a snapshot; "
        f"each day after: {result['steady_bytes_per_snapshot_per_day']} bytes a snapshot, "
        f"{result['steady_bytes_per_cluster_per_day']:,} bytes a cluster)"
    )
    print(f"  bytes per run: {result['bytes_per_run']:,}")
    checked = result["verify"]
    print(
        f"  ledger verify: {checked['records']} records, "
        f"{'verified' if checked['verified'] else 'BROKEN'}, in {checked['seconds']} s"
    )
    for day, found in result["outside_found"].items():
        kinds = ", ".join(f"{f['kind']} {f['clusterName']}" for f in found)
        print(f"  day {day}: outside retention: {kinds}")
    if result["outside_caught_as_made"]:
        print("  each change made outside retention was named once, by the next run, and no other")
    else:
        print("  WRONG: the changes named outside retention are not the ones made (see runs)")
    filled = result["what_fills_it"]
    total = sum(filled["bytes_by_object"].values()) or 1
    for name, size in filled["bytes_by_object"].items():
        rows = filled["rows"].get(name)
        count = f" ({rows:,} rows)" if rows is not None else ""
        print(f"  {name:>32} {size:>12,} bytes {size / total:>6.1%}{count}")
    print(f"  events by kind: {filled['events_by_kind']}")


if __name__ == "__main__":
    main()
