"""The chain's content hash is a format: a ledger written by one retention is verified by
every later one, so the text a run's rows are hashed as must never change, however it is
computed (benchmarks/ledger.py made it faster)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from retention.config.ledgerplace import LedgerPlace
from retention.core.model import SnapshotView, Target
from retention.core.outside import Retained, cluster_drift
from retention.ledger.chain import content_sha256
from retention.ledger.database import Ledger, open_ledger
from retention.ledger.recorder import RunEnd, RunRecord, RunStart, Sent
from retention.ledger.tables import runs
from tests.support.ledgers import ledger_place_for

NOW = datetime(2026, 11, 20, 3, tzinfo=UTC)
# A name beyond ASCII: the canonical JSON keeps it as it is, not as \\u escapes.
TARGET = Target("p1", "c1", "prod-zürich")
# The content hash of the run below, the same however it is computed (it was made faster).
# Changed once, before any release, when a cluster row's `snapshots` became the entry's
# snapshot count instead of the sum of all its counts: a value of the row, not the format.
GOLDEN = "99b14f0d2d62d9d98b321450370361175351688195f0d85198fa2789bbe49ba6"


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger(request: pytest.FixtureRequest) -> Iterator[Ledger]:
    """A fresh ledger, opened: a SQLite file, or a database of the test PostgreSQL server."""
    place: LedgerPlace = ledger_place_for(request, str(request.param))
    with open_ledger(place) as opened:
        yield opened


def test_a_runs_content_hashes_to_the_same_text_as_before(ledger: Ledger) -> None:
    """A run with a cluster row, seen, intent and sent events and a summary holding a time
    hashes to the digest every earlier retention computed for it."""
    record = RunRecord.begin(ledger, RunStart("run-golden", "run", "", NOW, "tester"))
    walked = [
        SnapshotView("s1", NOW - timedelta(days=1), True, False, NOW + timedelta(days=3)),
        SnapshotView("s2", NOW - timedelta(days=2), True, True, None),
        SnapshotView("s3", NOW - timedelta(hours=1), False, False, None),
    ]
    drift = cluster_drift(TARGET, record.known(TARGET), walked, NOW)
    entry = {
        "counts": {"keep": 2, "shorten": 1},
        "holds": [{"kind": "gate", "reason": "an alert: über"}],
        "restorePoints": {"count": 2, "newest": "2026-11-19T03:00:00Z", "text": "2 points"},
        "newestRestorable": {"ageSeconds": 86400},
    }
    record.observe(TARGET, drift, entry, NOW)
    sent = Sent("p1", "c1", "s1", "shorten", Retained(True, NOW + timedelta(hours=24), False))
    record.intend([sent], NOW)
    record.outcomes([Sent(**{**sent.__dict__, "outcome": "sent", "status": 200})], NOW)
    record.finish(RunEnd(NOW + timedelta(minutes=1), 0, summary={"at": NOW, "changes": 1}))
    with ledger.writing("test") as conn:
        # The host and process are part of a run's content: made the same everywhere.
        conn.execute(update(runs).values(host="host-1", pid=4242))
        row = conn.execute(select(runs).where(runs.c.run_id == "run-golden")).one()

        assert content_sha256(conn, row) == GOLDEN
