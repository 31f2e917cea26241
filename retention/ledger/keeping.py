"""ledger.keep: the runs older than it leave the ledger, at the end of a `retention run`
that records the removal, and the chain stays verifiable.

Only a shard's oldest records go, in chain order (a prefix), never its newest: the last
removed record's position and hash become the shard's anchor (ledger_anchors), where
`verify` starts instead of the genesis. The run that prunes records each removal as an
event (``pruned``: shard, through which record, its hash, how many runs), so the anchor
itself is covered by the chain: verify checks it against the newest such event. Runs that
never finished and started before the cut go too, with their events; so do snapshots and
targets that were gone before it (what the ledger knows of the fleet now stays whole).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, delete, select, update

from retention.core.policy.duration import RetentionDuration
from retention.ledger.database import Ledger
from retention.ledger.recorder import RunRecord
from retention.ledger.rows import stamp
from retention.ledger.tables import anchors, cluster_runs, events, heads, runs, snapshots, targets


@dataclass
class LedgerPruned:
    """What ledger.keep removed: per shard the record it now starts after, and the runs."""

    cut: datetime
    anchors: dict[str, int] = field(default_factory=dict)  # shard: position pruned through
    runs: int = 0

    @property
    def removed(self) -> bool:
        """Whether anything was removed."""
        return self.runs > 0


def prune_ledger(
    ledger: Ledger, keep: RetentionDuration, now: datetime, record: RunRecord
) -> LedgerPruned:
    """Remove what ledger.keep lets go, in one transaction, and record it in ``record``
    (the run doing it, not yet finished: its events are its content)."""
    cut = keep.before(now)
    pruned = LedgerPruned(cut)
    cut_text = stamp(cut)
    with ledger.writing("pruning what ledger.keep lets go") as conn:
        for head in conn.execute(select(heads)).all():
            gone = conn.execute(
                select(runs.c.seq, runs.c.position, runs.c.hash)
                .where(
                    runs.c.shard == head.shard,
                    runs.c.position.is_not(None),
                    runs.c.position < head.position,
                    runs.c.ended < cut_text,
                )
                .order_by(runs.c.position)
            ).all()
            if not gone:
                continue
            last = gone[-1]
            _remove(conn, [r.seq for r in gone])
            _anchor(conn, head.shard, last.position, str(last.hash), stamp(now))
            pruned.anchors[head.shard] = last.position
            pruned.runs += len(gone)
            record.note_pruned(head.shard, last.position, str(last.hash), len(gone), now)
        stale = (
            conn.execute(
                select(runs.c.seq).where(
                    runs.c.position.is_(None), runs.c.started < cut_text, runs.c.seq != record.seq
                )
            )
            .scalars()
            .all()
        )
        if stale:
            _remove(conn, list(stale))
            pruned.runs += len(stale)
        oldest = conn.execute(select(runs.c.seq).order_by(runs.c.seq).limit(1)).scalar()
        if oldest is not None:
            conn.execute(delete(snapshots).where(snapshots.c.gone_run < oldest))
            conn.execute(delete(targets).where(targets.c.gone_run < oldest))
    return pruned


def _remove(conn: Connection, seqs: list[int]) -> None:
    for start in range(0, len(seqs), 500):  # bound the IN list
        chunk = seqs[start : start + 500]
        conn.execute(delete(events).where(events.c.run_seq.in_(chunk)))
        conn.execute(delete(cluster_runs).where(cluster_runs.c.run_seq.in_(chunk)))
        conn.execute(delete(runs).where(runs.c.seq.in_(chunk)))


def _anchor(conn: Connection, shard: str, position: int, hash_: str, at: str | None) -> None:
    found = conn.execute(select(anchors.c.shard).where(anchors.c.shard == shard)).first()
    values = {"position": position, "hash": hash_, "pruned_at": at}
    if found is None:
        conn.execute(anchors.insert().values(shard=shard, **values))
    else:
        conn.execute(update(anchors).where(anchors.c.shard == shard).values(**values))
