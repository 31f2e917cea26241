"""The ledger against a real database, SQLite and PostgreSQL: its schema and migrations,
what a run records, the chain and what `verify` finds when it is broken."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import create_engine, delete, func, select, text, update

from retention.config.ledgerplace import LedgerPlace
from retention.core.outside import Retained, cluster_drift
from retention.core.policy.duration import RetentionDuration
from retention.errors import ChainBrokenError, LedgerError, LedgerSchemaError
from retention.ledger import sight as sight_module
from retention.ledger.chain import canonical, line_of, verify
from retention.ledger.database import HEAD_REVISION, Ledger, alembic_config, open_ledger
from retention.ledger.keeping import prune_ledger
from retention.ledger.recorder import RunEnd, RunRecord, RunStart, Sent
from retention.ledger.rows import KNOWN
from retention.ledger.tables import anchors, cluster_runs, events, heads, metadata, runs, snapshots
from tests.support.ledgers import (
    NOW,
    TARGET,
    compared,
    ledger_place_for,
    one_run,
    planned,
    snap,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest) -> LedgerPlace:
    """A fresh, empty ledger: a SQLite file, or a database of the test PostgreSQL server."""
    return ledger_place_for(request, str(request.param))


@pytest.fixture
def ledger(place: LedgerPlace) -> Iterator[Ledger]:
    """The ledger at ``place``, opened (its schema made)."""
    with open_ledger(place) as opened:
        yield opened


def test_a_new_ledger_gets_the_schema_and_a_second_open_changes_nothing(place: LedgerPlace) -> None:
    """open_ledger makes every table at the newest revision; opening again is a no-op."""
    with open_ledger(place) as first:
        one_run(first, 1, [snap(1)])
    with open_ledger(place) as again, again.reading("test") as conn:
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        assert revision == HEAD_REVISION
        assert conn.execute(select(func.count()).select_from(runs)).scalar_one() == 1


def test_a_ledger_newer_than_this_retention_is_refused_and_left_alone(place: LedgerPlace) -> None:
    """A schema revision this retention does not know: LedgerSchemaError (exit 2), no write."""
    with open_ledger(place) as first, first.writing("test") as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))

    with pytest.raises(LedgerSchemaError, match="newer than retention") as refused:
        open_ledger(place)

    assert refused.value.exit_code == 2
    engine = create_engine(place.engine_url())
    try:
        with engine.connect() as conn:
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    finally:
        engine.dispose()
    assert revision == "0099"


def test_an_unreachable_ledger_is_a_ledger_error_without_the_password() -> None:
    """A server that does not answer: LedgerError naming the ledger, never its password."""
    place = LedgerPlace("postgresql://retention@127.0.0.1:9/ledger", password="s3cret-pw")

    with pytest.raises(LedgerError) as failed:
        open_ledger(place)

    assert "127.0.0.1:9" in str(failed.value)
    assert "s3cret-pw" not in str(failed.value)


def test_outside_changes_are_caught_once_and_our_own_are_not(ledger: Ledger) -> None:
    """Baseline, then an outside change caught in the next run only; a change of ours sent
    and seen is never one."""
    walked = [snap(1, 30), snap(2, 30), snap(3, 30)]
    first, kinds1 = one_run(ledger, 1, walked)
    assert first.baseline
    assert kinds1 == []

    shortened = [snap(1, 2), snap(2, 30)]  # s1 cut by someone, s3 deleted before its time
    _, kinds2 = one_run(ledger, 2, shortened, at=NOW + timedelta(hours=1))
    _, kinds3 = one_run(ledger, 3, shortened, at=NOW + timedelta(hours=2))

    assert sorted(kinds2) == ["changed", "deleted-early"]
    assert kinds3 == []

    ours = RunRecord.begin(ledger, RunStart("run-ours", "run", "", NOW, "tester"))
    change = Sent("p1", "c1", "s2", "shorten", Retained(True, NOW + timedelta(days=5), False))
    ours.intend([change], NOW)
    ours.outcomes([Sent(**{**change.__dict__, "outcome": "sent", "status": 200})], NOW)
    ours.finish(RunEnd(NOW, 0))
    _, kinds4 = one_run(ledger, 4, [snap(1, 2), snap(2, 5)], at=NOW + timedelta(hours=3))
    assert kinds4 == []


def test_a_killed_apply_leaves_its_changes_pending_so_they_read_as_ours(ledger: Ledger) -> None:
    """Intents are written before the first send: a run killed after sending leaves them
    pending, and the next walk takes what it sent for ours."""
    one_run(ledger, 1, [snap(1, 30)])
    killed = RunRecord.begin(ledger, RunStart("run-killed", "run", "", NOW, "tester"))
    killed.intend(
        [Sent("p1", "c1", "s1", "shorten", Retained(True, NOW + timedelta(days=4), False))], NOW
    )
    # killed here: no outcomes, no finish

    _, kinds = one_run(ledger, 2, [snap(1, 4)], at=NOW + timedelta(hours=1))

    assert kinds == []
    with ledger.reading("test") as conn:
        report = verify(conn)
    assert report.unfinished == ["run-killed (the whole fleet)"]
    assert report.shards[""][0] == 2


@pytest.fixture
def row_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many snapshots each comparison that read a cluster's rows was given (none is
    read when a walk's digest is the one the ledger keeps)."""
    reads: list[int] = []
    compare = sight_module.compare

    def counted(rows: Any, walked: Any) -> Any:
        reads.append(len(walked))
        return compare(rows, walked)

    monkeypatch.setattr(sight_module, "compare", counted)
    return reads


def test_a_walk_exactly_as_the_last_reads_no_row_and_any_other_is_compared(
    ledger: Ledger, row_reads: list[int]
) -> None:
    """A cluster's first walk keeps no digest and its second does; a plan whose walk then
    lists what the last plan's did is quiet without reading a snapshot row; a walk with one
    expiry moved, or the same snapshots in another order, is compared in full (and the
    moved expiry caught)."""
    walked = [snap(1, 30), snap(2, 30), snap(3, 30)]
    planned(ledger, 1, walked)
    planned(ledger, 2, walked, at=NOW + timedelta(minutes=30))
    row_reads.clear()

    _, same = planned(ledger, 3, walked, at=NOW + timedelta(hours=1))
    _, reordered = planned(ledger, 4, walked[::-1], at=NOW + timedelta(hours=2))
    _, moved = planned(ledger, 5, [snap(1, 2), *walked[1:]], at=NOW + timedelta(hours=3))

    assert same.quiet
    assert same.digest is not None
    assert reordered.quiet
    assert [c.kind for c in moved.outside] == ["changed"]
    assert row_reads == [3, 3]  # the reordered walk and the moved one


def test_a_change_of_ours_undone_outside_is_caught_though_the_walk_is_the_last_one(
    ledger: Ledger,
) -> None:
    """A change of ours sent (the ledger then knows the new expiry) and put back by someone
    else makes the next walk list exactly what the walk before the change did: it is
    compared in full, not taken for unchanged, and the change back is caught."""
    walked = [snap(1, 30), snap(2, 30)]
    planned(ledger, 1, walked)
    planned(ledger, 2, walked, at=NOW + timedelta(minutes=30))
    ours = RunRecord.begin(ledger, RunStart("run-ours", "run", "", NOW, "tester"))
    change = Sent("p1", "c1", "s1", "shorten", Retained(True, NOW + timedelta(days=5), False))
    ours.intend([change], NOW)
    ours.outcomes([Sent(**{**change.__dict__, "outcome": "sent", "status": 200})], NOW)
    ours.finish(RunEnd(NOW, 0))

    _, back = planned(ledger, 3, walked, at=NOW + timedelta(hours=1))

    assert [(c.kind, c.snapshot_id) for c in back.outside] == [("changed", "s1")]


def test_a_plan_that_compared_before_another_write_keeps_no_digest(
    ledger: Ledger, row_reads: list[int]
) -> None:
    """Two writes of what the ledger knows of a cluster land while a plan is between its
    comparison and its record: an apply's changes, and another plan that found an expiry
    changed outside. The plan's walk predates both, so it keeps no digest: the next plan
    compares in full, and catches that expiry put back."""
    walked = [snap(1, 30), snap(2, 30)]
    planned(ledger, 1, walked)
    planned(ledger, 2, walked, at=NOW + timedelta(minutes=30))
    for write in ("apply", "plan"):
        slow, found = compared(ledger, f"slow-{write}", walked)
        if write == "apply":
            other = RunRecord.begin(ledger, RunStart("run-ours", "run", "", NOW, "tester"))
            change = Sent(
                "p1", "c1", "s2", "extend", Retained(True, NOW + timedelta(days=40), False)
            )
            other.intend([change], NOW)
            other.finish(RunEnd(NOW, 0))
        else:
            _, caught = planned(ledger, 9, [snap(1, 3), snap(2, 30)], at=NOW + timedelta(hours=1))
            assert [c.kind for c in caught.outside] == ["changed"]
        slow.observe(TARGET, found, {"counts": {}, "holds": []}, NOW)
        slow.finish(RunEnd(NOW, 0))
        assert found.quiet  # its walk was the last one

    row_reads.clear()
    _, back = planned(ledger, 10, walked, at=NOW + timedelta(hours=2))

    assert row_reads == [2]
    assert [(c.kind, c.snapshot_id) for c in back.outside] == [("changed", "s1")]


def test_a_reader_whose_connection_broke_reads_again_on_a_new_one(ledger: Ledger) -> None:
    """A decider's reader holds one connection; one that broke between two reads (a
    server restarted during a long walk) is replaced once, and the read comes back."""
    one_run(ledger, 1, [snap(1), snap(2)])
    reader = ledger.reader()
    first = reader.fetch("test", KNOWN, {"k_project": "p1", "k_cluster": "c1"})
    reader._raw.driver_connection.close()

    again = reader.fetch("test", KNOWN, {"k_project": "p1", "k_cluster": "c1"})
    reader.close()

    assert sorted(r[0] for r in again) == sorted(r[0] for r in first) == ["s1", "s2"]


def test_verify_holds_for_an_untouched_ledger_and_names_the_head(ledger: Ledger) -> None:
    """Three runs verify; the report's head is the last run's hash."""
    records = [one_run(ledger, n, [snap(1), snap(n + 1)])[0] for n in range(1, 4)]

    with ledger.reading("test") as conn:
        report = verify(conn)

    assert report.shards == {"": (3, records[-1].head)}
    assert report.unfinished == []


def _three_runs(ledger: Ledger) -> None:
    for n in range(1, 4):
        one_run(ledger, n, [snap(1), snap(n + 1)], at=NOW + timedelta(hours=n))


def _broken(ledger: Ledger) -> ChainBrokenError:
    with ledger.reading("test") as conn, pytest.raises(ChainBrokenError) as broken:
        verify(conn)
    return broken.value


def test_verify_names_the_run_whose_event_was_edited(ledger: Ledger) -> None:
    """An edited event breaks its run's content hash: that run is named."""
    _three_runs(ledger)
    with ledger.writing("test") as conn:
        seq = conn.execute(select(runs.c.seq).where(runs.c.run_id == "run--2")).scalar_one()
        first = conn.execute(
            select(func.min(events.c.seq)).where(events.c.run_seq == seq)
        ).scalar_one()
        conn.execute(update(events).where(events.c.seq == first).values(after='{"expires":null}'))

    broken = _broken(ledger)

    assert broken.record == "run run--2 (the whole fleet, record 2)"
    assert "content does not match" in str(broken)


def test_verify_names_an_edited_run_row(ledger: Ledger) -> None:
    """An edited field of a run's own row (its exit code) breaks that run."""
    _three_runs(ledger)
    with ledger.writing("test") as conn:
        conn.execute(update(runs).where(runs.c.run_id == "run--1").values(exit_code=3))

    assert _broken(ledger).record == "run run--1 (the whole fleet, record 1)"


def test_verify_names_the_gap_a_deleted_run_leaves(ledger: Ledger) -> None:
    """A deleted run (and its events) leaves a gap the next record names."""
    _three_runs(ledger)
    with ledger.writing("test") as conn:
        seq = conn.execute(select(runs.c.seq).where(runs.c.run_id == "run--2")).scalar_one()
        conn.execute(delete(events).where(events.c.run_seq == seq))
        conn.execute(delete(runs).where(runs.c.seq == seq))

    broken = _broken(ledger)

    assert broken.record == "run run--3 (the whole fleet, record 3)"
    assert "record 2 of the whole fleet is missing" in str(broken)


def test_verify_finds_two_runs_swapped(ledger: Ledger) -> None:
    """Two runs' positions swapped: the first out of place does not follow its predecessor."""
    _three_runs(ledger)
    with ledger.writing("test") as conn:
        conn.execute(update(runs).where(runs.c.position == 2).values(position=-2))
        conn.execute(update(runs).where(runs.c.position == 3).values(position=2))
        conn.execute(update(runs).where(runs.c.position == -2).values(position=3))

    broken = _broken(ledger)

    assert broken.record == "run run--3 (the whole fleet, record 2)"
    assert "does not follow" in str(broken)


def test_verify_finds_the_last_run_deleted(ledger: Ledger) -> None:
    """The newest run deleted: the head no longer matches the chain's end."""
    _three_runs(ledger)
    with ledger.writing("test") as conn:
        seq = conn.execute(select(runs.c.seq).where(runs.c.run_id == "run--3")).scalar_one()
        conn.execute(delete(runs).where(runs.c.seq == seq))

    assert "the last runs were deleted" in str(_broken(ledger))


def test_shards_keep_a_chain_each(ledger: Ledger) -> None:
    """Runs of two shards interleave; each shard's chain verifies on its own."""
    for n in range(2):
        for shard in ("0/2", "1/2"):
            one_run(ledger, n, [snap(1)], shard=shard)

    with ledger.reading("test") as conn:
        report = verify(conn)

    assert {s: n for s, (n, _) in report.shards.items()} == {"0/2": 2, "1/2": 2}
    with ledger.reading("test") as conn:
        assert conn.execute(select(func.count()).select_from(heads)).scalar_one() == 2
        known = conn.execute(select(func.count()).select_from(snapshots)).scalar_one()
    assert known == 1


def test_the_migrations_make_exactly_the_tables_the_code_uses(ledger: Ledger) -> None:
    """Alembic's revisions, run on an empty database, leave nothing for the tables of
    retention/ledger/tables.py to differ by (a revision forgotten, a column misspelled)."""
    with ledger.reading("test") as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
        head = ScriptDirectory.from_config(alembic_config(conn)).get_current_head()

    assert differences == []
    assert head == HEAD_REVISION  # what open_ledger checks without Alembic


def test_an_older_ledger_is_brought_up_to_date_and_keeps_its_runs(place: LedgerPlace) -> None:
    """A ledger at the first revision, with a run an older retention recorded, is migrated
    on first use: the run is still there and still verifies, and the new table is made."""
    with open_ledger(place) as ledger:
        one_run(ledger, 1, [snap(1)])
    engine = create_engine(place.engine_url())
    with engine.begin() as conn:  # as an older retention had it, its run kept
        command.downgrade(alembic_config(conn), "0001")
    engine.dispose()

    with open_ledger(place) as ledger, ledger.reading("test") as conn:
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        report = verify(conn)
        anchored = conn.execute(select(func.count()).select_from(anchors)).scalar_one()

    assert revision == HEAD_REVISION
    assert report.shards[""][0] == 1
    assert anchored == 0


def _prune_at(ledger: Ledger, now: datetime, keep: str) -> RunRecord:
    """A run at ``now`` that applies ledger.keep ``keep`` before it finishes."""
    record = RunRecord.begin(ledger, RunStart("run-pruning", "run", "", now, "tester"))
    prune_ledger(ledger, RetentionDuration.parse(keep), now, record)
    record.finish(RunEnd(now, 0))
    return record


def test_ledger_keep_removes_old_runs_and_the_chain_still_verifies(ledger: Ledger) -> None:
    """ledger.keep removes the runs that ended before it, never the newest; the chain then
    starts at their anchor and verifies, and the pruning run records what it removed."""
    for n, days in enumerate((10, 5, 1), start=1):
        one_run(ledger, n, [snap(1), snap(n + 1)], at=NOW - timedelta(days=days))

    pruning = _prune_at(ledger, NOW, "3d")

    with ledger.reading("test") as conn:
        report = verify(conn)
        left = conn.execute(select(runs.c.run_id).order_by(runs.c.position)).scalars().all()
        noted = conn.execute(select(events.c.detail).where(events.c.kind == "pruned")).scalar_one()
    assert left == ["run--3", "run-pruning"]
    assert report.shards == {"": (2, pruning.head)}
    assert report.pruned[""][0] == 2
    assert json.loads(noted)["runs"] == 2


def test_an_anchor_no_pruning_run_recorded_breaks_the_chain(ledger: Ledger) -> None:
    """An anchor moved by hand (records removed outside ledger.keep) is named by verify."""
    for n, days in enumerate((10, 5, 1), start=1):
        one_run(ledger, n, [snap(1)], at=NOW - timedelta(days=days))
    _prune_at(ledger, NOW, "7d")
    with ledger.writing("test") as conn:
        conn.execute(update(anchors).values(position=2))

    assert "not what the newest pruning run recorded" in str(_broken(ledger))


def test_a_cluster_run_counts_its_snapshots_not_every_count(ledger: Ledger) -> None:
    """ledger_cluster_runs.snapshots is the entry's snapshot count, not the sum of its
    counts by action and state."""
    record = RunRecord.begin(ledger, RunStart("run-counts", "plan", "", NOW, "tester"))
    drift = cluster_drift(TARGET, record.known(TARGET), [snap(1), snap(2)], NOW)
    entry = {"counts": {"snapshots": 2, "action:keep": 2, "state:kept": 2}, "holds": []}
    record.observe(TARGET, drift, entry, NOW)
    record.finish(RunEnd(NOW, 0))

    with ledger.reading("test") as conn:
        counted = conn.execute(select(cluster_runs.c.snapshots)).scalar_one()
    assert counted == 2


def test_shards_opening_a_new_ledger_at_once_all_get_its_schema(place: LedgerPlace) -> None:
    """Four processes' worth of first opens at once on an empty database: one makes the
    schema, the others wait for it (no duplicate-table error), and all can record."""
    errors: list[BaseException] = []

    def first_open() -> None:
        try:
            with open_ledger(place) as opened:
                one_run(opened, 1, [snap(1)], shard=f"{threading.get_ident() % 4}/4")
        except BaseException as exc:  # noqa: BLE001 - the test reports every thread's
            errors.append(exc)

    threads = [threading.Thread(target=first_open) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []


_VALUES = st.one_of(
    st.none(), st.text(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.booleans()
)


@given(st.lists(_VALUES, min_size=3, max_size=3), st.booleans())
def test_a_line_built_from_the_drivers_row_is_the_canonical_json_of_it(
    values: list[object], later_null: bool
) -> None:
    """The chain's fast line (chain.line_of) is byte for byte canonical() of the row's
    mapping, whatever the text (quotes, backslashes, control characters, any script) and
    with a later column left out only when it is null: the hashes of every ledger depend
    on it."""
    names = ["zeta", "alpha", "later"]
    row = [*values[:2], None if later_null else values[2]]
    expected = dict(zip(names, row, strict=True))
    if expected["later"] is None:
        del expected["later"]

    assert line_of(names, frozenset({"later"}))(row) == canonical(expected)


def test_a_change_outside_retention_a_killed_run_found_is_carried_by_the_next(
    ledger: Ledger,
) -> None:
    """A plan killed after writing what its walk found moved what the ledger knows, so no
    later walk finds its outside change again: the next run of the shard carries it (its
    plan, reports and notice name it; its finished record holds it, with the run that
    found it), and the run after that does not carry it again."""
    one_run(ledger, 1, [snap(1), snap(2)])
    killed = RunRecord.begin(ledger, RunStart("run-killed", "plan", "", NOW, "tester"))
    drift = cluster_drift(TARGET, killed.known(TARGET), [snap(1)], NOW)
    killed.observe(TARGET, drift, {"counts": {}, "holds": []}, NOW)
    killed.flush()  # and then kill -9: no finish
    assert [c.kind for c in drift.outside] == ["deleted-early"]

    after = RunRecord.begin(ledger, RunStart("run-after", "plan", "", NOW, "tester"))
    walked = cluster_drift(TARGET, after.known(TARGET), [snap(1)], NOW)
    carried = after.carry(NOW)
    after.observe(TARGET, walked, {"counts": {}, "holds": []}, NOW)
    after.finish(RunEnd(NOW, 0))
    again = RunRecord.begin(ledger, RunStart("run-again", "plan", "", NOW, "tester"))

    assert walked.outside == []  # the walk alone finds nothing: the killed run wrote it
    assert [(c.kind, c.snapshot_id, c.cluster_name) for c in carried] == [
        ("deleted-early", "s2", "prod-orders")
    ]
    assert again.carry(NOW) == []
    with ledger.reading("test") as conn:
        [(detail,)] = conn.execute(
            select(events.c.detail)
            .join(runs, runs.c.seq == events.c.run_seq)
            .where(runs.c.run_id == "run-after", events.c.kind == "deleted-early")
        ).all()
        assert json.loads(detail)["foundBy"] == "run-killed"
        assert verify(conn).shards[""][0] == 2
