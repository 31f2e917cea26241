"""Ledgers for tests: a SQLite file, or a fresh database of the test PostgreSQL server
(tests/support/postgres.py: skipped where there is none, a failure under CI=true)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retention.config.ledgerplace import LedgerPlace
from retention.core.model import SnapshotView, Target
from retention.core.outside import ClusterDrift, cluster_drift
from retention.core.policy.loader import PolicySet
from retention.ledger.database import Ledger
from retention.ledger.recorder import RunEnd, RunRecord, RunStart
from retention.plan.compared import Comparing
from retention.plan.workers import Shared
from retention.walk.inventory import Walk

NOW = datetime(2026, 11, 20, 3, tzinfo=UTC)
TARGET = Target("p1", "c1", "prod-orders")


def ledger_place_for(request: pytest.FixtureRequest, backend: str) -> LedgerPlace:
    """A fresh, empty ledger of ``backend`` (sqlite or postgresql) for the requesting test."""
    if backend == "sqlite":
        folder: Path = request.getfixturevalue("tmp_path")
        return LedgerPlace(f"sqlite:///{folder / 'ledger.db'}")
    database = request.getfixturevalue("postgres_database")
    return LedgerPlace(database.url, password=database.password)


def snap(i: int, expires_in: float = 10, *, dnd: bool = False) -> SnapshotView:
    expires = None if dnd else NOW + timedelta(days=expires_in)
    return SnapshotView(f"s{i}", NOW - timedelta(days=i), True, dnd, expires)


def one_run(
    ledger: Ledger, n: int, walked: list[SnapshotView], *, at: datetime = NOW, shard: str = ""
) -> tuple[RunRecord, list[str]]:
    """A plan run of one cluster: begun, walked, finished; its outside changes' kinds."""
    record = RunRecord.begin(ledger, RunStart(f"run-{shard}-{n}", "plan", shard, at, "tester"))
    drift = cluster_drift(TARGET, record.known(TARGET), walked, at)
    record.observe(TARGET, drift, {"counts": {"keep": len(walked)}, "holds": []}, at)
    record.finish(RunEnd(at, 0))
    return record, [c.kind for c in drift.outside]


def compared(
    ledger: Ledger, run_id: str, walked: list[SnapshotView], *, at: datetime = NOW
) -> tuple[RunRecord, ClusterDrift]:
    """A plan run begun and one cluster's walk compared as a plan compares it
    (retention.plan.compared, the walk digest's shortcut included), not yet recorded."""
    record = RunRecord.begin(ledger, RunStart(run_id, "plan", "", at, "tester"))
    sight = record.sight()
    shared = Shared(PolicySet(()), {}, {}, at, timedelta(days=1))
    return record, Comparing(shared, sight, at).drift(sight, Walk(TARGET, walked))


def planned(
    ledger: Ledger, n: int, walked: list[SnapshotView], *, at: datetime = NOW
) -> tuple[RunRecord, ClusterDrift]:
    """A plan run of one cluster (``compared``), recorded and finished; what it found."""
    record, drift = compared(ledger, f"plan-{n}", walked, at=at)
    record.observe(TARGET, drift, {"counts": {"keep": len(walked)}, "holds": []}, at)
    record.finish(RunEnd(at, 0))
    return record, drift
