"""The ledger's chain: each finished run's record carries the sha256 of its content and of
the record before it in its shard, so an edited row, a deleted run or two runs swapped
break it where they are.

A run's content is its row (everything but the database's own numbering and the hashes),
then its clusters' rows in cluster order, then its events in the order they were written,
each as one canonical JSON line (sorted keys, no spaces) fed to one sha256, so a run of a
million events is hashed without holding them. A record's hash is
sha256(previous hash + content hash), the first of a shard's chain following 64 zeros.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, select, text

from retention.core.timestamps import format_timestamp
from retention.errors import ChainBrokenError
from retention.ledger.database import stream_rows
from retention.ledger.tables import anchors, cluster_runs, events, heads, runs

GENESIS = "0" * 64
# The run row's fields that are its content: not its numbers (in this database, in its
# chain: the previous hash orders it), nor the hashes.
_NOT_CONTENT = frozenset({"seq", "position", "content_sha256", "prev_hash", "hash"})
_BATCH = 5000


def _plain(value: object) -> str:
    if isinstance(value, datetime):
        return format_timestamp(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


# json.dumps with these arguments builds an encoder a call; a run writes and hashes a line
# for each of its events, so one encoder serves them all (the same text).
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
)


def canonical(value: Mapping[str, Any] | list[Any]) -> str:
    """One value as the chain hashes it and the ledger stores JSON (times as the plan
    files write them)."""
    return _ENCODER.encode(value)


def content_sha256(conn: Connection, run: Row[Any]) -> str:
    """The sha256 of a run's content, read from the database."""
    digest = hashlib.sha256()
    head = {k: v for k, v in run._mapping.items() if k not in _NOT_CONTENT}
    digest.update(canonical(head).encode())
    for line in _lines(conn, run.seq):
        digest.update(b"\n")
        digest.update(line.encode())
    return digest.hexdigest()


# The columns of a run's clusters and events that are its content (the run's own number is
# in its row).
_CLUSTER_COLUMNS = [c for c in cluster_runs.c if c.name != "run_seq"]
_EVENT_COLUMNS = [c for c in events.c if c.name not in ("seq", "run_seq")]

# Columns added after a ledger may already hold runs: a line leaves them out when they are
# null, so that a run recorded before they were added hashes as it did.
_LATER_COLUMNS = frozenset({"expected"})


def line_of(
    names: Sequence[str], later: frozenset[str] = frozenset()
) -> Callable[[Sequence[Any]], str]:
    """A row's canonical line (``canonical`` of the mapping of ``names`` to its values,
    the ``later`` ones left out when null), built straight from the driver's tuple: the
    chain hashes a line for every event (a year of a fleet: two million), and a dict
    through the encoder cost twice as much."""
    order = sorted(range(len(names)), key=lambda i: names[i])
    fields = [(i, encode_basestring(names[i]) + ":", names[i] in later) for i in order]

    def line(row: Sequence[Any]) -> str:
        parts = []
        for i, key, optional in fields:
            value = row[i]
            if value is None:
                if not optional:
                    parts.append(key + "null")
            elif value.__class__ is str:
                parts.append(key + encode_basestring(value))
            elif value.__class__ is bool:
                parts.append(key + ("true" if value else "false"))
            elif value.__class__ is int:
                parts.append(key + int.__repr__(value))
            else:
                parts.append(key + _ENCODER.encode(value))
        return "{" + ",".join(parts) + "}"

    return line


_CLUSTER_LINE = line_of([c.name for c in _CLUSTER_COLUMNS], _LATER_COLUMNS)
_EVENT_LINE = line_of([c.name for c in _EVENT_COLUMNS])
_CLUSTERS_OF = (
    select(*_CLUSTER_COLUMNS)
    .where(cluster_runs.c.run_seq == bindparam("k_run"))
    .order_by(cluster_runs.c.project_id, cluster_runs.c.cluster_id)
)
_EVENTS_OF = (
    select(*_EVENT_COLUMNS).where(events.c.run_seq == bindparam("k_run")).order_by(events.c.seq)
)


def _lines(conn: Connection, seq: int) -> Iterator[str]:
    # Streamed by the driver (ledger.database.stream_rows): a first run hashes an event
    # for each snapshot of the fleet.
    for row in stream_rows(conn, "chain clusters", _CLUSTERS_OF, {"k_run": seq}, _BATCH):
        yield _CLUSTER_LINE(row)
    for row in stream_rows(conn, "chain events", _EVENTS_OF, {"k_run": seq}, _BATCH):
        yield _EVENT_LINE(row)


def link(prev_hash: str, content: str) -> str:
    """A record's hash: its content's, after the previous record's."""
    return hashlib.sha256(f"{prev_hash}{content}".encode()).hexdigest()


@dataclass
class ChainReport:
    """What ``verify`` found: per shard its records and head hash, and the runs that have
    no record (unfinished: killed, or running now)."""

    shards: dict[str, tuple[int, str]] = field(default_factory=dict)  # shard: (records, head)
    unfinished: list[str] = field(default_factory=list)
    # Shards whose oldest records ledger.keep removed: (the last removed position, its hash).
    pruned: dict[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def records(self) -> int:
        """Records verified, all shards."""
        return sum(n for n, _ in self.shards.values())


def shard_label(shard: str) -> str:
    """A shard as messages name it."""
    return f"shard {shard}" if shard else "the whole fleet"


def verify(conn: Connection, heard: Callable[[], None] = lambda: None) -> ChainReport:
    """Recompute every shard's chain; ChainBrokenError names the first record that does
    not match (by run id, shard and position). ``heard`` is called before each record's
    content is read (a command's stop: a year's chain takes seconds to hash)."""
    report = ChainReport()
    shards = sorted(
        {r.shard for r in conn.execute(select(runs.c.shard).distinct())}
        | {r.shard for r in conn.execute(select(heads.c.shard))}
    )
    report.pruned = _anchors(conn)
    for shard in shards:
        report.shards[shard] = _verify_shard(conn, shard, report.pruned.get(shard), heard)
    unfinished = select(runs.c.run_id, runs.c.shard).where(runs.c.position.is_(None))
    report.unfinished = [
        f"{r.run_id} ({shard_label(r.shard)})"
        for r in conn.execute(unfinished.order_by(runs.c.seq))
    ]
    return report


def _anchors(conn: Connection) -> dict[str, tuple[int, str]]:
    """Each pruned shard's anchor, checked against the newest ``pruned`` event that names
    it (an anchor no chained run put there is an edit)."""
    found = {a.shard: (a.position, a.hash) for a in conn.execute(select(anchors))}
    said: dict[str, tuple[int, str]] = {}
    for row in conn.execute(
        select(events.c.detail).where(events.c.kind == "pruned").order_by(events.c.seq)
    ):
        detail = json.loads(row.detail)
        said[detail["shard"]] = (detail["through"], detail["hash"])
    for shard, anchor in found.items():
        if said.get(shard) != anchor:
            where = shard_label(shard)
            raise ChainBrokenError(
                f"{where}: its anchor (record {anchor[0]}, {_short(anchor[1])}) is not what the "
                "newest pruning run recorded: records were removed outside ledger.keep",
                where,
            )
    return found


def _verify_shard(
    conn: Connection, shard: str, anchor: tuple[int, str] | None, heard: Callable[[], None]
) -> tuple[int, str]:
    prev, expected = (GENESIS, 1) if anchor is None else (anchor[1], anchor[0] + 1)
    chained = (
        select(runs)
        .where(runs.c.shard == shard, runs.c.position.is_not(None))
        .order_by(runs.c.position)
    )
    where = shard_label(shard)
    for run in conn.execute(chained).all():
        name = f"run {run.run_id} ({where}, record {run.position})"
        if run.position != expected:
            raise ChainBrokenError(
                f"{name}: record {expected} of {where} is missing (the chain goes from "
                f"{expected - 1} to {run.position}): a run was deleted",
                name,
            )
        if run.prev_hash != prev:
            raise ChainBrokenError(
                f"{name}: it does not follow the record before it (its previous hash "
                f"{_short(run.prev_hash)}, the record before it {_short(prev)}): runs were "
                "deleted, reordered or replaced",
                name,
            )
        heard()
        content = content_sha256(conn, run)
        if content != run.content_sha256:
            raise ChainBrokenError(
                f"{name}: its content does not match its hash (recorded "
                f"{_short(run.content_sha256)}, computed {_short(content)}): a row of it, its "
                "clusters or its events was edited, added or removed",
                name,
            )
        if link(prev, content) != run.hash:
            raise ChainBrokenError(f"{name}: its hash does not match its content", name)
        prev, expected = run.hash, expected + 1
    head = conn.execute(select(heads).where(heads.c.shard == shard)).first()
    records = expected - 1
    first = 0 if anchor is None else anchor[0]
    if head is None and records:
        raise ChainBrokenError(f"{where}: its head is missing", where)
    if head is not None and (head.position != records or head.hash != prev):
        raise ChainBrokenError(
            f"{where}: its head says record {head.position} ({_short(head.hash)}), the chain "
            f"ends at record {records} ({_short(prev)}): the last runs were deleted",
            where,
        )
    return records - first, prev


def _short(value: str | None) -> str:
    return "none" if not value else value[:12]


@dataclass(frozen=True)
class LedgerStatus:
    """What a ledger holds, without verifying it: its schema revision, its runs (and how
    many never finished), and the newest head of its chains."""

    revision: str | None
    runs: int
    unfinished: int
    head: str | None


def ledger_status(conn: Connection) -> LedgerStatus:
    """The ledger's status, read in a few counts."""
    revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    total = conn.execute(select(func.count()).select_from(runs)).scalar_one()
    unfinished = conn.execute(
        select(func.count()).select_from(runs).where(runs.c.ended.is_(None))
    ).scalar_one()
    newest = conn.execute(
        select(runs.c.hash).where(runs.c.hash.is_not(None)).order_by(runs.c.seq.desc()).limit(1)
    ).scalar()
    return LedgerStatus(revision, int(total), int(unfinished), newest)
