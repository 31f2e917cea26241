"""The ledger's rows as a run writes them: times as the ledger stores them, the rows of
snapshots, events and clusters built from what a walk found, a run's batch of them and the
statements that write one, and the chain head's lock. recorder.py decides what to write and
when; this module only says how.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, case, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from retention.core.model import SnapshotView, Target
from retention.core.outside import OutsideChange, Retained
from retention.errors import LedgerError
from retention.ledger.chain import GENESIS, canonical
from retention.ledger.database import driver_sql
from retention.ledger.tables import cluster_runs, events, heads, snapshots, targets

# Rows a batch gathers before it is written: a few hundred kilobytes of parameters.
BATCH_ROWS = 2000

# What a plan compares of each cluster's snapshots, in one statement built once: a plan
# may read every snapshot the ledger knows (600,000 for the bench fleet), and building the
# statement for each cluster and reading whole rows took half of that.
KNOWN = select(
    snapshots.c.snapshot_id,
    snapshots.c.created,
    snapshots.c.complete,
    snapshots.c.expires,
    snapshots.c.do_not_delete,
    snapshots.c.pending,
    snapshots.c.pending_expires,
    snapshots.c.pending_do_not_delete,
).where(
    snapshots.c.project_id == bindparam("k_project"),
    snapshots.c.cluster_id == bindparam("k_cluster"),
    snapshots.c.gone_run.is_(None),
)


# A target's walk digest and the version of what the ledger knows of it, read before its
# snapshots (retention.ledger.sight): a walk with that digest reads none of them.
TARGET_STATE = select(targets.c.walk_digest, targets.c.known_version).where(
    targets.c.project_id == bindparam("k_project"),
    targets.c.cluster_id == bindparam("k_cluster"),
)


def stamp(value: datetime | None) -> str | None:
    """A time as the ledger writes it: UTC, ``Z``, the sub-second digits kept when there
    are any (an expiry compared again next run must be exactly what the API said)."""
    if value is None:
        return None
    utc = value.astimezone(UTC)
    spec = "microseconds" if utc.microsecond else "seconds"
    return utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def read_stamp(text: str) -> datetime:
    """A time the ledger wrote (``stamp``: always UTC with a ``Z``, which fromisoformat
    reads as UTC itself, several times faster than the general parse_timestamp)."""
    return datetime.fromisoformat(text)


def read_time(text: str | None) -> datetime | None:
    """A time the ledger wrote, or None."""
    return None if text is None else datetime.fromisoformat(text)


def retained_fields(value: Retained | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {
        "complete": value.complete,
        "expires": stamp(value.expires),
        "doNotDelete": value.do_not_delete,
    }


@dataclass
class Batch:
    """The rows a run gathered and has not written yet."""

    new: list[dict[str, Any]] = field(default_factory=list)
    moved: list[dict[str, Any]] = field(default_factory=list)
    gone: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    targets_new: list[dict[str, Any]] = field(default_factory=list)
    targets_seen: list[dict[str, Any]] = field(default_factory=list)
    gone_clusters: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return (
            len(self.new) + len(self.moved) + len(self.gone) + len(self.events) + len(self.clusters)
        )


def lock_head(conn: Connection, shard: str) -> Any:
    """The shard's head, locked until the transaction ends (PostgreSQL: FOR UPDATE, after
    the first run of a shard made it at position 0, whichever of two racing runs did;
    SQLite: the write transaction already excludes every other writer)."""
    conn.execute(insert_new(conn, heads).values(shard=shard, position=0, hash=GENESIS))
    return conn.execute(select(heads).where(heads.c.shard == shard).with_for_update()).one()


def insert_new(conn: Connection, table: Any) -> Any:
    """INSERT that leaves a row already there alone (ON CONFLICT DO NOTHING): two runs at
    once (a plan by hand beside cron's run) may both see a snapshot first."""
    if conn.dialect.name == "postgresql":
        return postgresql_insert(table).on_conflict_do_nothing()
    return sqlite_insert(table).on_conflict_do_nothing()


def snapshot_key(key: Mapping[str, str], snapshot_id: str | None) -> dict[str, Any]:
    if snapshot_id is None:
        raise LedgerError("a snapshot change without a snapshot id")
    return {
        "k_project": key["project_id"],
        "k_cluster": key["cluster_id"],
        "k_snapshot": snapshot_id,
    }


def target_key(key: Mapping[str, str]) -> dict[str, str]:
    return {"k_project": key["project_id"], "k_cluster": key["cluster_id"]}


def snapshot_where() -> Any:
    return (
        (snapshots.c.project_id == bindparam("k_project"))
        & (snapshots.c.cluster_id == bindparam("k_cluster"))
        & (snapshots.c.snapshot_id == bindparam("k_snapshot"))
    )


def snapshot_row(s: SnapshotView, seq: int) -> dict[str, Any]:
    return {
        "snapshot_id": s.id,
        "created": stamp(s.created),
        "complete": s.complete,
        "expires": stamp(s.expires),
        "do_not_delete": s.do_not_delete,
        "pending": False,
        "pending_expires": None,
        "pending_do_not_delete": None,
        "first_run": seq,
        "changed_run": seq,
        "gone_run": None,
    }


def moved_row(after: Retained, seq: int) -> dict[str, Any]:
    return {
        "m_complete": after.complete,
        "m_expires": stamp(after.expires),
        "m_dnd": after.do_not_delete,
        "m_run": seq,
    }


@dataclass(frozen=True)
class At:
    """The run and time an event is written for."""

    seq: int
    at: str | None

    def event(
        self,
        kind: str,
        key: Mapping[str, str],
        snapshot_id: str | None,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An events row."""
        return {
            "run_seq": self.seq,
            "at": self.at,
            "kind": kind,
            "project_id": key["project_id"],
            "cluster_id": key["cluster_id"],
            "snapshot_id": snapshot_id,
            "before": None if before is None else canonical(dict(before)),
            "after": None if after is None else canonical(dict(after)),
            "detail": None if not detail else canonical(dict(detail)),
        }


def outside_event(
    now: At, key: Mapping[str, str], change: OutsideChange, *, found_by: str | None = None
) -> dict[str, Any]:
    """An events row of a change made outside retention (``found_by``: the id of the run
    that found it and never finished, when this run carries it on)."""
    if change.kind == "gone":
        detail: dict[str, Any] | None = _gone_detail(change)
    else:
        detail = {"alertId": change.alert_id} if change.alert_id else None
    if found_by is not None:
        detail = {**(detail or {}), "foundBy": found_by}
    before, after = retained_fields(change.before), retained_fields(change.after)
    return now.event(change.kind, key, change.snapshot_id, before, after, detail)


def _gone_detail(change: OutsideChange) -> dict[str, Any]:
    detail: dict[str, Any] = {
        "name": change.cluster_name,
        "restorePoints": change.restore_points,
        "newest": stamp(change.newest),
    }
    if change.alert_id:
        detail["alertId"] = change.alert_id
    return detail


def cluster_row(seq: int, target: Target, entry: Mapping[str, Any]) -> dict[str, Any]:
    counts = entry.get("counts", {})
    points = entry.get("restorePoints")
    ladder = (
        {k: points[k] for k in ("count", "newest", "oldest", "text") if k in points}
        if points
        else {}
    )
    fresh = entry.get("newestRestorable") or {}
    return {
        "run_seq": seq,
        "project_id": target.project_id,
        "cluster_id": target.cluster_id,
        "kind": target.kind,
        "name": target.name,
        "snapshots": int(counts.get("snapshots", 0)),
        "counts": canonical(dict(counts)),
        "holds": canonical(
            [{"kind": h["kind"], "reason": h["reason"]} for h in entry.get("holds", [])]
        ),
        "ladder": canonical(ladder),
        "newest_age_seconds": fresh.get("ageSeconds"),
        "walk_error": "; ".join(entry.get("errors", [])) or None,
        "expected": _expected(entry, fresh),
    }


def _expected(entry: Mapping[str, Any], fresh: Mapping[str, Any]) -> str | None:
    """What was expected of a cluster in a run: its policies and its freshness check (the
    evidence of ``retention evidence``), None when its entry says neither."""
    expected: dict[str, Any] = {}
    if entry.get("policies"):
        expected["policies"] = list(entry["policies"])
    for key in ("withinSeconds", "stale", "newest", "expectedFrom"):
        if fresh.get(key) is not None:
            expected[key] = fresh[key]
    return canonical(expected) if expected else None


def execute_many(conn: Connection, name: str, statement: Any, rows: list[dict[str, Any]]) -> None:
    """``statement`` once for each of ``rows`` (dicts with the same keys), through the
    driver's executemany in ``conn``'s transaction (a first plan of the bench fleet writes
    1.2 million rows). ``name`` says which statement it is."""
    sql = driver_sql(name, statement, conn.dialect, tuple(rows[0]))
    cursor = conn.connection.cursor()
    try:
        cursor.executemany(sql.text, [sql.params(r) for r in rows])
    finally:
        cursor.close()


def write_batch(conn: Connection, b: Batch) -> None:
    if b.new:
        execute_many(conn, "new snapshots", insert_new(conn, snapshots), b.new)
    if b.moved:
        execute_many(
            conn,
            "moved snapshots",
            update(snapshots)
            .where(snapshot_where())
            .values(
                complete=bindparam("m_complete"),
                expires=bindparam("m_expires"),
                do_not_delete=bindparam("m_dnd"),
                changed_run=bindparam("m_run"),
                pending=False,
                pending_expires=None,
                pending_do_not_delete=None,
            ),
            b.moved,
        )
    if b.gone:
        gone = update(snapshots).where(snapshot_where()).values(gone_run=bindparam("g_run"))
        execute_many(conn, "gone snapshots", gone, b.gone)
    if b.targets_new:
        conn.execute(insert_new(conn, targets), b.targets_new)
    if b.targets_seen:
        conn.execute(
            update(targets)
            .where(
                (targets.c.project_id == bindparam("k_project"))
                & (targets.c.cluster_id == bindparam("k_cluster"))
            )
            .values(
                last_run=bindparam("t_run"),
                gone_run=bindparam("t_gone"),
                name=bindparam("t_name"),
                # The first unacknowledged outside change stays the first.
                attention_run=func.coalesce(targets.c.attention_run, bindparam("t_attention")),
                # The walk's digest only if nothing else wrote what the ledger knows of
                # the target since this run read it (another run, an apply, at the same
                # time): the ledger may then know the snapshots otherwise than this walk
                # listed them.
                walk_digest=case(
                    (targets.c.known_version == bindparam("t_version"), bindparam("t_digest")),
                    else_=None,
                ),
                known_version=targets.c.known_version + 1,
            ),
            b.targets_seen,
        )
    if b.gone_clusters:
        conn.execute(
            update(snapshots)
            .where(
                (snapshots.c.project_id == bindparam("k_project"))
                & (snapshots.c.cluster_id == bindparam("k_cluster"))
                & snapshots.c.gone_run.is_(None)
            )
            .values(gone_run=bindparam("g_run")),
            b.gone_clusters,
        )
    if b.clusters:
        execute_many(conn, "cluster runs", insert(cluster_runs), b.clusters)
    if b.events:
        execute_many(conn, "events", insert(events), b.events)
