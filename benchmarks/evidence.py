"""`retention evidence` of a year: 365 daily runs of 200 clusters written into a new
ledger by a generator, through the path a plan and an apply write (RunRecord: each run
begun, each cluster's walk compared and observed, its changes intended and their
outcomes, the run finished into the chain), then the evidence of the whole year in all
four formats, timed and its peak memory measured, as a process of its own.

The fleet: each cluster takes a snapshot every 6 hours, kept 60 days (the one of the 1st
of a month at 00:00, 13 months), reaped once expired; each day's run sends 9 changes a
cluster (the ledger-size benchmark's steady fleet sends about that many), and on a few
days a snapshot is deleted as someone else, which the next run catches. SQLite, and
PostgreSQL when RETENTION_BENCH_POSTGRES_URL names a server (a schema of its own, vacuumed
as autovacuum would have over the year, dropped after).

    make bench-evidence   # or: .venv/bin/python benchmarks/evidence.py [--clusters 200]
                          #     [--days 365] [--backends sqlite postgresql]

Goal: the year's evidence in at most 30 s and 300 MB. Writes benchmarks/results/evidence.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from machine import describe

from retention.config.ledgerplace import LedgerPlace
from retention.core.model import SnapshotView, Target
from retention.core.outside import Known, Retained, cluster_drift
from retention.ledger.database import open_ledger
from retention.ledger.recorder import PolicyText, RunEnd, RunRecord, RunStart, Sent
from retention.ledger.tables import metadata

GOAL_SECONDS, GOAL_MB = 30.0, 300.0
POSTGRES_ENV = "RETENTION_BENCH_POSTGRES_URL"
POLICY = (
    'name: year\nmatch: {clusters: ["rs-*"]}\n'
    "keep: {within: 60d, daily: 7, weekly: 4, monthly: 13}\n"
)
SHA = hashlib.sha256(POLICY.encode()).hexdigest()
REFS = ({"name": "year", "path": "policies/year.yaml", "sha256": SHA},)
TEXTS = (PolicyText(SHA, "policies/year.yaml", POLICY),)
FIRST = date(2025, 1, 1)
CHANGES_A_CLUSTER = 9
OUTSIDE_EVERY = 30  # days
PROJECT = "5e2211c17a3e5a48f5497de9"


class Service:
    """The clusters' snapshots as the service has them."""

    def __init__(self, clusters: int) -> None:
        self.targets = [Target(PROJECT, f"{i:024x}", f"rs-{i:04d}") for i in range(clusters)]
        self.snaps: dict[str, dict[str, SnapshotView]] = {t.cluster_id: {} for t in self.targets}

    def take(self, day: date) -> None:
        """The day's four snapshots of each cluster, and the reaper."""
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        for t in self.targets:
            found = self.snaps[t.cluster_id]
            for hour in (0, 6, 12, 18):
                created = start + timedelta(hours=hour)
                keep = 395 if (day.day == 1 and hour == 0) else 60
                sid = f"{t.cluster_id[-8:]}{int(created.timestamp()):016x}"
                found[sid] = SnapshotView(sid, created, True, False, created + timedelta(days=keep))
            for sid in [s.id for s in found.values() if s.expires and s.expires <= start]:
                del found[sid]


def generate(ledger: Any, service: Service, days: int) -> None:
    """``days`` daily runs at 03:00, each walking every cluster and sending its changes."""
    known: dict[str, dict[str, Known]] = {t.cluster_id: {} for t in service.targets}
    for d in range(days):
        day = FIRST + timedelta(days=d)
        at = datetime(day.year, day.month, day.day, 3, tzinfo=UTC)
        service.take(day)
        if d and d % OUTSIDE_EVERY == 0:  # someone deletes a snapshot in the UI
            found = service.snaps[service.targets[d % len(service.targets)].cluster_id]
            del found[sorted(found)[len(found) // 2]]
        record = RunRecord.begin(
            ledger, RunStart(f"{d:08x}", "run", "", at, "cron", policies=REFS, policy_texts=TEXTS)
        )
        sends: list[Sent] = []
        for t in service.targets:
            walked = list(service.snaps[t.cluster_id].values())
            drift = cluster_drift(t, known[t.cluster_id], walked, at)
            newest = max(s.created for s in walked)
            age = int((at - newest).total_seconds())
            record.observe(t, drift, _entry(len(walked), newest, age), at)
            sends += _changes(t, walked, at)
        record.intend(sends, at)
        for c in sends:  # the service takes them
            s = service.snaps[c.cluster_id][c.snapshot_id]
            service.snaps[c.cluster_id][c.snapshot_id] = SnapshotView(
                s.id, s.created, True, False, c.after.expires
            )
        record.outcomes([replace(c, outcome="sent", status=200) for c in sends], at)
        for t in service.targets:
            known[t.cluster_id] = {
                s.id: Known(s.created, Retained(True, s.expires, s.do_not_delete))
                for s in service.snaps[t.cluster_id].values()
            }
        record.finish(RunEnd(at + timedelta(minutes=20), 0, summary={"changes": len(sends)}))
        if d % 30 == 0:
            print(f"  day {d + 1}/{days}", file=sys.stderr, flush=True)


def _entry(count: int, newest: datetime, age: int) -> dict[str, Any]:
    return {
        "counts": {"snapshots": count},
        "holds": [],
        "policies": ["year"],
        "newestRestorable": {
            "newest": newest,
            "ageSeconds": age,
            "withinSeconds": 13 * 3600,
            "expectedFrom": "cadence",
            "stale": age > 13 * 3600,
            "text": "",
        },
    }


def _changes(t: Target, walked: list[SnapshotView], at: datetime) -> list[Sent]:
    """The lease: the snapshots nearest their expiry get a day more."""
    soon = sorted((s for s in walked if s.expires), key=lambda s: s.expires or at)
    sends = []
    for s in soon[:CHANGES_A_CLUSTER]:
        old = s.expires or at
        sends.append(
            Sent(
                t.project_id,
                t.cluster_id,
                s.id,
                "extend",
                Retained(True, old + timedelta(days=1), False),
                before=Retained(True, old, False),
                policy="year",
                why="keep: within 60d (lease)",
            )
        )
    return sends


@contextmanager
def ledger_url(backend: str, folder: Path) -> Iterator[tuple[str, str | None]]:
    """A new ledger's URL (and password) for ``backend``."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'ledger.db'}", None
        return
    from sqlalchemy import create_engine, text  # noqa: PLC0415 - only with a server
    from sqlalchemy.engine import make_url  # noqa: PLC0415

    parsed = make_url(os.environ[POSTGRES_ENV])
    password = parsed.password or os.environ.get("RETENTION_LEDGER_PASSWORD")
    base = parsed.set(password=None).render_as_string(hide_password=False)
    schema = f"retention_evidence_{uuid.uuid4().hex[:12]}"
    engine = create_engine(
        make_url(base).set(drivername="postgresql+psycopg", password=password),
        isolation_level="AUTOCOMMIT",
    )
    with engine.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}", password
    finally:
        with engine.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def settle(url: str, password: str | None) -> None:
    """VACUUM ANALYZE the new ledger: a year-old one has been vacuumed by autovacuum many
    times over, while one written in minutes would have the evidence set the hint bits of
    two million rows on its first read, beside autovacuum's own first pass."""
    with open_ledger(LedgerPlace(url, password=password)) as ledger:
        engine = ledger.engine.execution_options(isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            names = ", ".join(table.name for table in metadata.sorted_tables)
            conn.exec_driver_sql(f"VACUUM ANALYZE {names}")


def evidence(
    folder: Path, url: str, password: str | None, days: int, formats: tuple[str, ...]
) -> dict[str, Any]:
    """`retention evidence` of the year in ``formats``, in a process of its own: its wall
    time, peak memory (maxrss), exit code and files."""
    config = folder / "retention.yaml"
    config.write_text(
        "api:\n  base_url: http://127.0.0.1:9/api/public/v1.0\n"
        f'targets:\n  - project: "{PROJECT}"\npolicies: policies/\nreports:\n  dir: {folder}\n'
    )
    env = {**os.environ, "RETENTION_LEDGER_URL": url, "RETENTION_PUBLIC_KEY": "x",
           "RETENTION_PRIVATE_KEY": "x"}  # fmt: skip
    if password:
        env["RETENTION_LEDGER_PASSWORD"] = password
    last = FIRST + timedelta(days=days - 1)
    out = folder / ("out-" + "-".join(formats))
    # /usr/bin/time's account of the child alone: RUSAGE_CHILDREN's maxrss is the largest
    # child's of the whole benchmark (the generator's children included).
    argv = ["/usr/bin/time", "-f", "%M %e", sys.executable, "-m", "retention",
            "--config", str(config), "evidence", "--from", str(FIRST), "--to", str(last),
            "--out", str(out)]  # fmt: skip
    for fmt in formats:
        argv += ["--format", fmt]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)  # noqa: S603 - our own command line
    if done.returncode not in (0, 3):
        sys.exit(f"evidence failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    peak_kb, seconds = done.stderr.strip().splitlines()[-1].split()
    files = {p.suffix[1:]: p.stat().st_size for p in out.iterdir()}
    return {
        "formats": list(formats),
        "seconds": round(float(seconds), 1),
        "peak_mb": round(int(peak_kb) / 1024, 1),
        "exit": done.returncode,
        "bytes": files,
        "summary": done.stdout.splitlines()[:3],
    }


def run(backend: str, clusters: int, days: int) -> dict[str, Any]:
    """Generate the year into a new ledger of ``backend``, then time its evidence."""
    with tempfile.TemporaryDirectory(prefix="retention-evidence-") as tmp:
        folder = Path(tmp)
        with ledger_url(backend, folder) as (url, password):
            began = time.perf_counter()
            with open_ledger(LedgerPlace(url, password=password)) as ledger:
                generate(ledger, Service(clusters), days)
            generated = time.perf_counter() - began
            if backend == "postgresql":
                settle(url, password)
            size = None
            if backend == "sqlite":
                size = sum(p.stat().st_size for p in folder.glob("ledger.db*"))
            cases = {
                "html": evidence(folder, url, password, days, ("html",)),
                "all": evidence(folder, url, password, days, ("html", "md", "json", "csv")),
            }
    result: dict[str, Any] = {"generated_seconds": round(generated), "ledger_bytes": size}
    for case, found in cases.items():
        found["met"] = found["seconds"] <= GOAL_SECONDS and found["peak_mb"] <= GOAL_MB
        result[case] = found
        print(
            f"{backend} ({', '.join(found['formats'])}): evidence of {days} runs x {clusters} "
            f"clusters in {found['seconds']} s, peak {found['peak_mb']} MB "
            f"({'met' if found['met'] else 'NOT met'}; goal {GOAL_SECONDS:.0f} s, "
            f"{GOAL_MB:.0f} MB); files {found['bytes']}",
            flush=True,
        )
    return result


def main() -> None:
    """Parse the arguments, run each backend, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    results: dict[str, Any] = {
        "clusters": args.clusters,
        "days": args.days,
        "changes_a_cluster_a_day": CHANGES_A_CLUSTER,
        "goal_seconds": GOAL_SECONDS,
        "goal_mb": GOAL_MB,
        "machine": describe("2 cores"),
        "date": datetime.now(UTC).date().isoformat(),
    }
    for backend in args.backends:
        if backend == "postgresql" and not os.environ.get(POSTGRES_ENV):
            print(f"postgresql: skipped ({POSTGRES_ENV} names no server)", flush=True)
            continue
        results[backend] = run(backend, args.clusters, args.days)
    out = Path(__file__).parent / "results" / "evidence.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
