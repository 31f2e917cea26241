"""A decider's comparison of a walk with the ledger's rows (retention.ledger.sight.compare):
the snapshots listed exactly as last known are taken out before core.outside.cluster_drift
sees the rest, and what it finds is exactly what it finds of the whole walk."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from retention.core.model import SnapshotView, Target
from retention.core.outside import cluster_drift
from retention.core.planfile import ClusterEntry
from retention.ledger.rows import stamp
from retention.ledger.sight import as_known, compare
from retention.plan.compared import Decided
from retention.runfolder.planwrite import EncodedCluster

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
TARGET = Target("p1", "c1", "prod-orders")
IDS = [f"s{i}" for i in range(6)]
# Expiries around NOW (gone before or after it), one with microseconds, and one instant
# written in another zone: the same time, so the same expiry.
EXPIRIES = [
    None,
    NOW - timedelta(days=1),
    NOW + timedelta(days=3),
    NOW + timedelta(days=3, microseconds=250),
    (NOW + timedelta(days=3)).astimezone(timezone(timedelta(hours=2))),
]


def row(
    snapshot_id: str, fields: tuple[bool, datetime | None, bool], pending: Any
) -> tuple[Any, ...]:
    """A row as KNOWN selects it from SQLite (booleans as 0 and 1)."""
    complete, expires, dnd = fields
    p_expires, p_dnd = pending if pending is not None else (None, None)
    created = NOW - timedelta(days=int(snapshot_id[1:]) + 1)
    return (
        snapshot_id,
        stamp(created),
        int(complete),
        stamp(expires),
        int(dnd),
        int(pending is not None),
        stamp(p_expires),
        None if p_dnd is None else int(p_dnd),
    )


fields = st.tuples(st.booleans(), st.sampled_from(EXPIRIES), st.booleans())
pendings = st.none() | st.tuples(st.sampled_from(EXPIRIES), st.booleans())


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[tuple[Any, ...]], list[SnapshotView]]:
    """Rows for some ids, and a walk of some ids (a few listed twice), each walked one
    either as its row says or with fields of its own."""
    known_ids = draw(st.lists(st.sampled_from(IDS), unique=True))
    rows = {i: row(i, draw(fields), draw(pendings)) for i in known_ids}
    walked = []
    for i in draw(st.lists(st.sampled_from(IDS), max_size=8)):
        created = NOW - timedelta(days=int(i[1:]) + 1)
        was = rows.get(i)
        if was is not None and draw(st.booleans()):
            known = as_known(was).last
            walked.append(
                SnapshotView(i, created, known.complete, known.do_not_delete, known.expires)
            )
        else:
            complete, expires, dnd = draw(fields)
            walked.append(SnapshotView(i, created, complete, dnd, expires))
    return list(rows.values()), walked


@given(scenarios())
def test_taking_out_the_unchanged_finds_exactly_what_the_whole_walk_finds(
    scenario: tuple[list[tuple[Any, ...]], list[SnapshotView]],
) -> None:
    """For any rows and walk (snapshots new, moved, gone, pending, listed twice, expiries
    in other zones), cluster_drift of what compare leaves, with its unchanged count, is
    cluster_drift of the whole walk against every row."""
    rows, walked = scenario
    whole = cluster_drift(TARGET, {r[0]: as_known(r) for r in rows}, walked, NOW)

    left = compare(rows, walked)
    found = cluster_drift(TARGET, left.known, left.walked, NOW, unchanged=left.unchanged)

    assert found == whole


def test_a_walk_that_lists_every_row_as_it_was_leaves_nothing_to_compare() -> None:
    """The everyday case: every snapshot as last known, so no Known is made and the
    comparison has nothing left (and a walk that listed them is not a cluster gone)."""
    fields = (True, NOW + timedelta(days=2), False)
    rows = [row(i, fields, None) for i in IDS]
    walked = [SnapshotView(i, NOW, True, False, NOW + timedelta(days=2)) for i in IDS]

    left = compare(rows, walked)

    assert (left.known, left.walked, left.unchanged) == ({}, [], len(IDS))
    assert cluster_drift(TARGET, left.known, left.walked, NOW, unchanged=left.unchanged).quiet


def test_an_empty_walk_keeps_every_row_so_the_cluster_reads_as_gone() -> None:
    """A walk that lists nothing leaves every row, with its creation, for the finding of a
    cluster gone with its restore points."""
    rows = [row(i, (True, NOW + timedelta(days=2), False), None) for i in IDS[:2]]

    left = compare(rows, [])
    drift = cluster_drift(TARGET, left.known, left.walked, NOW, unchanged=left.unchanged)

    assert sorted(left.known) == IDS[:2]
    assert [(c.kind, c.restore_points) for c in drift.outside] == [("gone", 2)]


def test_what_a_worker_sends_back_comes_back_whole() -> None:
    """A decided cluster with new snapshots (a ledger's first plan) crosses from a worker
    to the plan (pickled, its new snapshots as msgpack) unchanged, the rest of its drift
    with it; one without a drift too."""
    new = [SnapshotView(f"s{i}", NOW, True, False, NOW + timedelta(days=i)) for i in range(3)]
    drift = cluster_drift(TARGET, {}, new, NOW)
    drift.digest = "w1:abc"
    cluster = EncodedCluster(("p1", "cluster", "c1"), b"frame", 3, cast("ClusterEntry", {}))

    back = pickle.loads(pickle.dumps(Decided(TARGET, cluster, drift)))  # noqa: S301 - ours
    plain = pickle.loads(pickle.dumps(Decided(TARGET, cluster)))  # noqa: S301 - ours

    assert back == Decided(TARGET, cluster, drift)
    assert back.drift is not None
    assert back.drift.new == new
    assert plain == Decided(TARGET, cluster)
