"""What a plan's deciders read of the ledger: each walked cluster's snapshots as the ledger
last knew them (unless its walk is exactly the last one's: its digest), and the clusters
nobody has looked at since a change made outside retention.

Reading and comparing what the ledger knows of every snapshot of the fleet (600,000 rows
for the bench fleet) is CPU the plan's main process, busy with the walk, cannot spare: a
worker process that decides a cluster reads and compares it too, on a connection of its
own (``LedgerSight`` travels to each worker without its open ledger, and each opens its
own reader there). Nothing else of the run is written or read there: what the comparison
finds goes back with the decision, and the main process records it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
from sqlalchemy import Select

from retention.config.ledgerplace import LedgerPlace
from retention.core.model import SnapshotView, Target
from retention.core.outside import Attention, Known, Retained
from retention.ledger.database import Ledger, Reader, open_reader
from retention.ledger.rows import KNOWN, TARGET_STATE, read_stamp, read_time


def read_known(ledger: Ledger, target: Target) -> dict[str, Known]:
    """What ``ledger`` knows of ``target``'s snapshots that are not gone."""
    return {row[0]: as_known(row) for row in ledger.fetch(*_read(target, KNOWN))}


def _read(target: Target, statement: Select[Any]) -> tuple[str, Select[Any], dict[str, str]]:
    where = {"k_project": target.project_id, "k_cluster": target.cluster_id}
    return f"reading what it knows of {target.name}", statement, where


def as_known(row: Sequence[Any]) -> Known:
    """One row as KNOWN selects it."""
    _, created, complete, expires, dnd, pending, p_expires, p_dnd = row
    last = Retained(bool(complete), read_time(expires), bool(dnd))
    ours = Retained(bool(complete), read_time(p_expires), bool(p_dnd)) if pending else None
    return Known(read_stamp(created), last, ours)


@dataclass(frozen=True)
class Compared:
    """A walk against the rows the ledger knows of its cluster, the snapshots listed
    exactly as last known taken out of both (core.outside.cluster_drift's ``unchanged``):
    most of a cluster's, every day, so only the rest is made into Known values."""

    known: dict[str, Known]
    walked: list[SnapshotView]
    unchanged: int
    digest: str | None = None  # the walk's (walk_digest)
    version: int | None = None  # of what the ledger knew, read before its rows


def compare(rows: Iterable[Sequence[Any]], walked: Sequence[SnapshotView]) -> Compared:
    """``walked`` against ``rows`` (as KNOWN selects them): a walked snapshot whose
    ``complete``, ``expires`` and ``doNotDelete`` are the row's is unchanged; every other
    one, and every row not unchanged, is left to cluster_drift."""
    by_id = {row[0]: row for row in rows}
    same: set[str] = set()
    rest: list[SnapshotView] = []
    for snapshot in walked:
        row = by_id.get(snapshot.id)
        # A row's booleans are 0 and 1 on SQLite: == compares them with a bool as it should.
        if (
            row is not None
            and row[2] == snapshot.complete
            and row[4] == snapshot.do_not_delete
            and (
                row[3] is None
                if snapshot.expires is None
                else row[3] is not None and read_stamp(row[3]) == snapshot.expires
            )
        ):
            same.add(snapshot.id)
        else:
            rest.append(snapshot)
    # A snapshot listed twice (a page shifted under the walk) and changed in between is
    # compared as a whole walk would compare it: its row stays.
    again = {s.id for s in rest} & same if same else set()
    known = {i: as_known(row) for i, row in by_id.items() if i not in same or i in again}
    return Compared(known, rest, len(walked) - len(rest))


_DIGEST_ENCODER = msgspec.msgpack.Encoder()


def walk_digest(walked: Sequence[SnapshotView]) -> str:
    """What a walk listed, as a digest: each snapshot's id, ``complete``, ``expires`` (with
    its zone as the API wrote it) and ``doNotDelete``, in the walk's order. The ledger
    keeps the last walk's: a walk with the same digest, with no change of ours recorded
    since, finds every snapshot as the ledger knows it (what that walk recorded), and so
    is quiet without a row read. Anything else, the same snapshots in another order too,
    is compared in full."""
    fields = [(s.id, s.complete, s.expires, s.do_not_delete) for s in walked]
    return "w1:" + hashlib.blake2b(_DIGEST_ENCODER.encode(fields), digest_size=24).hexdigest()


class LedgerSight:
    """The ledger as a plan's deciders see it: where it is, what it knows of a target, and
    each target's first unacknowledged change made outside retention. Picklable: a copy
    sent to another process leaves the open ledger behind and opens a reader of its own on
    first use, which lasts as long as that process (a plan's worker)."""

    def __init__(
        self,
        place: LedgerPlace,
        attention: Mapping[tuple[str, str], Attention],
        ledger: Ledger | None = None,
    ) -> None:
        self.place = place
        self.attention = dict(attention)
        self._ledger = ledger  # the run's own, in its process: read through its pool
        self._reader: Reader | None = None  # in another process: a connection of its own

    def compare(self, target: Target, walked: Sequence[SnapshotView]) -> Compared:
        """``target``'s walk against what the ledger knows of its snapshots (``compare``),
        none of them read when the walk's digest is the one the ledger keeps (the last
        walk's, and nothing written of the target since)."""
        digest = walk_digest(walked)
        state = self._fetch(*_read(target, TARGET_STATE))
        kept, version = state[0] if state else (None, None)
        version = None if version is None else int(version)
        if kept is not None and kept == digest:
            return Compared({}, [], len(walked), digest, version)
        found = compare(self._fetch(*_read(target, KNOWN)), walked)
        return replace(found, digest=digest, version=version)

    def _fetch(self, what: str, statement: Select[Any], values: Mapping[str, Any]) -> list[Any]:
        if self._ledger is not None:
            return self._ledger.fetch(what, statement, values)
        if self._reader is None:
            self._reader = open_reader(self.place).reader()
        return self._reader.fetch(what, statement, values)

    def attention_of(self, target: Target) -> Attention | None:
        """``target``'s first change made outside retention that nobody acknowledged."""
        return self.attention.get((target.project_id, target.cluster_id))

    def __getstate__(self) -> dict[str, Any]:
        return {"place": self.place, "attention": self.attention}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.place, self.attention = state["place"], state["attention"]
        self._ledger, self._reader = None, None
