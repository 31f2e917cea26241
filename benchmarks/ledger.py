"""What the ledger adds to a plan: `retention plan` of the simulator's bench fleet (WAN
latency, api.concurrency 8, as benchmarks/fleet.py runs it) without a ledger
(`ledger: {enabled: false}`) and with one, back to back, in pairs whose order alternates
(the machine is noisy and the simulator shares its two cores; a drift in its load then
favours neither side). Two cases:

- first:  the plan against an empty ledger, each pair a new one: the baseline run, which
          writes every snapshot of the fleet once (a row and a `seen` event each);
- steady: the plan against a ledger that already knows the fleet (two plans made first,
          not timed: a cluster's first walk keeps no digest): nothing changed since, so
          each cluster's walk is the last one's (the digest the ledger kept), no snapshot
          row is read, and it writes a row a cluster;
- compared: the same, each cluster's digest dropped before the timed plan (not timed):
          every cluster's rows read and compared with its walk, what a plan pays for each
          cluster whose walk changed (a day's new and expired snapshots; the writes of
          those changes are not in it).

Each case with the default SQLite ledger, and with PostgreSQL when
RETENTION_BENCH_POSTGRES_URL names a server (`postgresql://user@host:5432/db`, its password
there or in RETENTION_LEDGER_PASSWORD; every ledger is a schema of its own the benchmark
makes in that database and drops after). The goal: the ledger adds at most 10% to the
plan's wall time; the ratio is given pair by pair and as the median.

    make bench-ledger   # or: .venv/bin/python benchmarks/ledger.py [--clusters 2000]
                        #     [--latency-ms 20] [--pairs 3] [--cases first steady]
                        #     [--backends sqlite postgresql]

Writes benchmarks/results/ledger.json (benchmarks/ledger_size.py measures the ledger's size).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The bench policy of fleet.py: it matches every bench cluster and changes most of each, so
# the plan has its usual work besides the ledger's.
from fleet import POLICY
from machine import describe
from simproc import admin, start_simulator

KEY = "ledger-bench-secret"
CONCURRENCY = 8
GOAL = 1.10
POSTGRES_ENV = "RETENTION_BENCH_POSTGRES_URL"


@dataclass(frozen=True)
class Plan:
    """One timed `retention plan`."""

    seconds: float
    cpu_seconds: float  # the retention process's and its workers' (rusage of the children)
    baseline: bool | None  # plan.json's ledger.baseline (None: made without a ledger)
    outside_changes: int


@dataclass(frozen=True)
class Setup:
    """The folder a plan runs in, and the simulator it plans."""

    folder: Path
    base_url: str
    projects: list[str]

    def config(self, name: str, ledger: str) -> Path:
        """A retention.yaml whose `ledger:` section is ``ledger``."""
        (self.folder / "policies").mkdir(exist_ok=True)
        (self.folder / "policies" / "bench.yaml").write_text(POLICY)
        targets = "".join(f'  - project: "{p}"\n' for p in self.projects)
        path = self.folder / f"{name}.yaml"
        path.write_text(
            f"api:\n  base_url: {self.base_url}\n  concurrency: {CONCURRENCY}\n"
            f"targets:\n{targets}policies: policies/\nreports:\n  dir: reports/\n"
            f"ledger: {ledger}\n"
        )
        return path

    def plan(self, config: Path, env: dict[str, str] | None = None) -> Plan:
        """`retention plan --out` with ``config``, timed as fleet.py times it."""
        out = self.folder / "plan.json"
        environment = {
            **os.environ,
            "RETENTION_PUBLIC_KEY": "sim-public-key",
            "RETENTION_PRIVATE_KEY": KEY,
            **(env or {}),
        }
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
            [sys.executable, "-m", "retention", "--config", str(config), "plan", "--out",
             str(out), "--quiet"],
            env=environment, capture_output=True, text=True, check=False,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 3):
            tail = (done.stdout + done.stderr)[-4000:]
            raise SystemExit(f"retention plan exited {done.returncode}:\n{tail}")
        head = _plan_head(out)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return Plan(
            round(seconds, 2),
            round(cpu, 2),
            head.get("ledger", {}).get("baseline"),
            len(head.get("outsideChanges", [])),
        )


def _plan_head(path: Path) -> dict[str, Any]:
    from retention.runfolder.planread import open_plan  # noqa: PLC0415 - only here

    head: dict[str, Any] = open_plan(path).head
    return head


class Backend:
    """Where the ledgers of one backend are, and how a plan is pointed at one."""

    name = "sqlite"

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.count = 0

    @contextmanager
    def fresh(self) -> Iterator[tuple[Path, dict[str, str]]]:
        """A new, empty ledger: the config and environment of a plan that writes to it."""
        self.count += 1
        name = f"ledger-{self.count}.db"
        config = self.setup.config(f"sqlite-{self.count}", f"{{url: 'sqlite:///{name}'}}")
        try:
            yield config, {}
        finally:
            for path in self.setup.folder.glob(f"{name}*"):
                path.unlink()

    def forget_digests(self) -> None:
        """Drop every cluster's walk digest: the next plan compares each in full."""
        import sqlite3  # noqa: PLC0415 - only for this case

        with closing(sqlite3.connect(self.setup.folder / f"ledger-{self.count}.db")) as db, db:
            db.execute("UPDATE ledger_targets SET walk_digest = NULL")

    def size(self) -> int:
        """Bytes of the newest ledger (its WAL included)."""
        name = f"ledger-{self.count}.db"
        return sum(p.stat().st_size for p in self.setup.folder.glob(f"{name}*"))


class Postgres(Backend):
    """Ledgers as schemas of their own in RETENTION_BENCH_POSTGRES_URL's database."""

    name = "postgresql"

    def __init__(self, setup: Setup, url: str) -> None:
        super().__init__(setup)
        from sqlalchemy.engine import make_url  # noqa: PLC0415 - only with a server

        parsed = make_url(url)
        self.password = parsed.password or os.environ.get("RETENTION_LEDGER_PASSWORD")
        self.url = parsed.set(password=None).render_as_string(hide_password=False)
        self.schema = ""

    def _engine(self) -> Any:
        from sqlalchemy import create_engine  # noqa: PLC0415 - only with a server
        from sqlalchemy.engine import make_url  # noqa: PLC0415

        url = make_url(self.url).set(drivername="postgresql+psycopg", password=self.password)
        return create_engine(url, isolation_level="AUTOCOMMIT")

    @contextmanager
    def fresh(self) -> Iterator[tuple[Path, dict[str, str]]]:
        """A new schema, its search_path given to the plan through the URL."""
        from sqlalchemy import text  # noqa: PLC0415 - only with a server

        self.count += 1
        self.schema = f"retention_bench_{uuid.uuid4().hex[:12]}"
        engine = self._engine()
        with engine.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{self.schema}"'))
        config = self.setup.config(f"postgresql-{self.count}", "{enabled: true}")
        sep = "&" if "?" in self.url else "?"
        env = {"RETENTION_LEDGER_URL": f"{self.url}{sep}options=-csearch_path%3D{self.schema}"}
        if self.password:
            env["RETENTION_LEDGER_PASSWORD"] = self.password
        try:
            yield config, env
        finally:
            with engine.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{self.schema}" CASCADE'))
            engine.dispose()

    def forget_digests(self) -> None:
        """Drop every cluster's walk digest: the next plan compares each in full."""
        from sqlalchemy import text  # noqa: PLC0415 - only with a server

        engine = self._engine()
        try:
            with engine.connect() as conn:
                table = f'"{self.schema}".ledger_targets'  # a name of our own making
                conn.execute(text(f"UPDATE {table} SET walk_digest = NULL"))  # noqa: S608
        finally:
            engine.dispose()

    def size(self) -> int:
        """Bytes of the schema's tables and indexes."""
        from sqlalchemy import text  # noqa: PLC0415 - only with a server

        engine = self._engine()
        try:
            with engine.connect() as conn:
                total = conn.execute(
                    text(
                        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = :schema AND c.relkind = 'r'"
                    ),
                    {"schema": self.schema},
                ).scalar_one()
        finally:
            engine.dispose()
        return int(total)


def pairs(setup: Setup, backend: Backend, case: str, count: int) -> list[dict[str, Any]]:
    """``count`` pairs of plans, without and with the ledger, alternating which goes first."""
    off = setup.config("off", "{enabled: false}")
    rows: list[dict[str, Any]] = []
    if case in ("steady", "compared"):
        with backend.fresh() as (config, env):
            known = setup.plan(config, env)  # the baseline, not timed: the ledger learns it
            if not known.baseline:
                raise SystemExit("the first plan of a new ledger did not say it is its baseline")
            setup.plan(config, env)  # the second: each cluster's digest kept

            def planned() -> Plan:
                if case == "compared":
                    backend.forget_digests()
                return setup.plan(config, env)

            for n in range(count):
                rows.append(_pair(n, lambda: setup.plan(off), planned))
                _say(backend, n, rows[-1])
            rows[-1]["ledger_bytes"] = backend.size()
        return rows

    def first() -> Plan:
        with backend.fresh() as (config, env):
            plan = setup.plan(config, env)
            sizes.append(backend.size())
        return plan

    sizes: list[int] = []
    for n in range(count):
        rows.append(_pair(n, lambda: setup.plan(off), first))
        rows[-1]["ledger_bytes"] = sizes[-1]
        _say(backend, n, rows[-1])
    return rows


def _pair(n: int, without: Callable[[], Plan], with_: Callable[[], Plan]) -> dict[str, Any]:
    """One pair: the even ones without the ledger first, the odd ones with it first."""
    if n % 2 == 0:
        plain, ledgered = without(), with_()
    else:
        ledgered, plain = with_(), without()
    return {
        "order": "without first" if n % 2 == 0 else "with first",
        "without_seconds": plain.seconds,
        "with_seconds": ledgered.seconds,
        "ratio": round(ledgered.seconds / plain.seconds, 3),
        "without_cpu_seconds": plain.cpu_seconds,
        "with_cpu_seconds": ledgered.cpu_seconds,
        "baseline": ledgered.baseline,
        "outside_changes": ledgered.outside_changes,
    }


def _say(backend: Backend, n: int, row: dict[str, Any]) -> None:
    print(
        f"  {backend.name:>10} pair {n + 1} ({row['order']}): without "
        f"{row['without_seconds']:>7.2f} s, with {row['with_seconds']:>7.2f} s, ratio "
        f"{row['ratio']:.3f} (CPU {row['without_cpu_seconds']} -> {row['with_cpu_seconds']} s)",
        flush=True,
    )


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The median ratio of a case, and whether it meets the goal."""
    median = round(statistics.median(r["ratio"] for r in rows), 3)
    return {
        "pairs": rows,
        "median_ratio": median,
        "median_added_percent": round((median - 1) * 100, 1),
        "meets_goal": median <= GOAL,
    }


def main() -> None:
    """Measure each case with each backend and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=("first", "steady", "compared"),
                        default=["first", "steady", "compared"])  # fmt: skip
    parser.add_argument("--backends", nargs="+", choices=("sqlite", "postgresql"),
                        default=["sqlite", "postgresql"])  # fmt: skip
    args = parser.parse_args()
    postgres_url = os.environ.get(POSTGRES_ENV) if "postgresql" in args.backends else None
    if "postgresql" in args.backends and not postgres_url:
        print(f"PostgreSQL: skipped ({POSTGRES_ENV} is not set: a server a developer runs)")
    proc, base_url = start_simulator(
        f"bench:{args.clusters}", KEY, "--latency-ms", str(args.latency_ms)
    )
    result: dict[str, Any] = {
        "machine": describe("2 cores shared with the simulator"),
        "clusters": args.clusters,
        "latency_ms": args.latency_ms,
        "goal_ratio": GOAL,
        "load_before": os.getloadavg()[0],
    }
    try:
        fleet = admin(base_url, "fleet")
        result["snapshots"] = sum(c["snapshots"] for p in fleet["projects"] for c in p["clusters"])
        print(
            f"ledger: {args.clusters:,} clusters ({result['snapshots']:,} snapshots), "
            f"{args.latency_ms:g} ms latency, {args.pairs} pairs a case; load average "
            f"{result['load_before']:.1f} on {os.cpu_count()} CPUs",
            flush=True,
        )
        with tempfile.TemporaryDirectory() as tmp:
            setup = Setup(Path(tmp), base_url, [p["id"] for p in fleet["projects"]])
            backends: list[Backend] = [Backend(setup)] if "sqlite" in args.backends else []
            if postgres_url:
                backends.append(Postgres(setup, postgres_url))
            for backend in backends:
                cases = result.setdefault(backend.name, {})
                for case in args.cases:
                    print(f"  {case}:", flush=True)
                    cases[case] = summary(pairs(setup, backend, case, args.pairs))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    result["load_after"] = os.getloadavg()[0]
    out = Path(__file__).parent / "results" / "ledger.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for backend in ("sqlite", "postgresql"):
        for case, figures in result.get(backend, {}).items():
            ratios = ", ".join(f"{r['ratio']:.3f}" for r in figures["pairs"])
            state = "met" if figures["meets_goal"] else "NOT MET"
            print(
                f"{backend} {case}: median {figures['median_ratio']} "
                f"(+{figures['median_added_percent']}%; pairs {ratios}); goal <= {GOAL}: {state}"
            )
    print(
        f"machine: {result['machine']}; load average {result['load_before']:.1f} before, "
        f"{result['load_after']:.1f} after; written to {out}"
    )


if __name__ == "__main__":
    main()
