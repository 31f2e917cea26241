"""Recording one run: its row when it starts, what its walk found of each cluster as the
plan goes (written in batches, only what changed), the changes it is about to send and how
they ended, and its end, which appends it to its shard's chain.

A run is recorded as it goes, never held in memory whole: each batch is one short
transaction. Its row stays unfinished (no position in the chain) until ``finish``, which
reads its content back for the hash in the same transaction that appends it; a run killed
on the way is left unfinished, as it was, and says so in ``ledger verify``. The changes a
run sends are written, committed, before the first of them is sent: a run killed after
sending leaves them pending, so the next walk takes them for ours and not for an outside
change.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, exists, func, insert, select, update

from retention.core.model import Target
from retention.core.outside import (
    AUDIT_TYPES,
    Attention,
    ClusterDrift,
    Known,
    OutsideChange,
    Retained,
)
from retention.ledger.chain import canonical, content_sha256, link
from retention.ledger.database import Ledger
from retention.ledger.rows import (
    BATCH_ROWS,
    At,
    Batch,
    cluster_row,
    insert_new,
    lock_head,
    moved_row,
    outside_event,
    read_time,
    retained_fields,
    snapshot_key,
    snapshot_row,
    snapshot_where,
    stamp,
    target_key,
    write_batch,
)
from retention.ledger.sight import LedgerSight, read_known
from retention.ledger.tables import events, heads, policies, runs, snapshots, targets

# The kinds of the events of changes made outside retention.
OUTSIDE_KINDS = tuple(AUDIT_TYPES)


@dataclass(frozen=True)
class RunStart:
    """What a run is, as it starts."""

    run_id: str
    mode: str
    shard: str  # "" for the whole fleet, "2/4" for a shard
    started: datetime
    actor: str
    key_name: str | None = None
    base_url: str | None = None
    config_sha256: str | None = None
    policies: tuple[Mapping[str, str], ...] = ()  # {name, path, sha256}
    version: str = ""
    # The text of each policy file, kept once per sha256 (ledger_policies).
    policy_texts: tuple[PolicyText, ...] = ()


@dataclass(frozen=True)
class PolicyText:
    """A policy file as a run read it: the sha256 of its bytes, its path and its text."""

    sha256: str
    path: str
    text: str


@dataclass(frozen=True)
class RunEnd:
    """How a run ended."""

    ended: datetime
    exit_code: int
    signal: str | None = None
    service_version: str | None = None
    plan_digest: str | None = None
    approvals: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sent:
    """A change of ours: what it asks of a snapshot, and, once known, how it ended
    (``outcome``: sent, refused, or unknown when no answer came)."""

    project_id: str
    cluster_id: str
    snapshot_id: str
    action: str
    after: Retained
    approval: str | None = None
    outcome: str | None = None
    status: int | None = None
    before: Retained | None = None  # the snapshot's fields the change was planned from
    policy: str | None = None  # the policy that decided it
    why: str | None = None  # the decision's reasons, as the plan words them


class RunRecord:
    """One run being recorded (``begin`` starts it)."""

    def __init__(self, ledger: Ledger, start: RunStart, seq: int, *, baseline: bool) -> None:
        self.ledger = ledger
        self.start = start
        self.seq = seq
        self.baseline = baseline  # no earlier run of its shard: it reports no drift
        self.head: str | None = None  # the chain's head once finished
        self._batch = Batch()
        # What the ledger knows of each target: (kind, name, gone).
        self._targets: dict[tuple[str, str], tuple[str, str, bool]] = {}
        # Each target's first change made outside retention that nobody acknowledged.
        self._attention: dict[tuple[str, str], Attention] = {}
        # Changes made outside retention that runs of this shard found and never finished
        # (killed after writing them), with the id of the run that found each.
        self._carried: list[tuple[OutsideChange, str]] = []

    @classmethod
    def begin(cls, ledger: Ledger, start: RunStart) -> RunRecord:
        """Insert the run's row, unfinished, and read what it needs of the ledger."""
        with ledger.writing(f"recording the start of run {start.run_id}") as conn:
            earlier = conn.execute(select(exists().where(runs.c.shard == start.shard))).scalar_one()
            row = {
                "run_id": start.run_id,
                "shard": start.shard,
                "mode": start.mode,
                "started": stamp(start.started),
                "actor": start.actor,
                "key_name": start.key_name,
                "base_url": start.base_url,
                "version": start.version,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "config_sha256": start.config_sha256,
                "policies": canonical([dict(p) for p in start.policies]),
                "approvals": canonical({}),
                "summary": canonical({}),
                "baseline": not earlier,
            }
            seq = conn.execute(insert(runs).values(row).returning(runs.c.seq)).scalar_one()
            record = cls(ledger, start, int(seq), baseline=not earlier)
            if start.policy_texts:
                conn.execute(
                    insert_new(conn, policies),
                    [
                        {"sha256": p.sha256, "path": p.path, "text": p.text, "first_run": seq}
                        for p in start.policy_texts
                    ],
                )
            found = select(targets, runs.c.started.label("attention_started")).outerjoin(
                runs, runs.c.seq == targets.c.attention_run
            )
            for t in conn.execute(found):
                gone = t.gone_run is not None
                record._targets[t.project_id, t.cluster_id] = (t.kind, t.name, gone)
                if t.attention_run is not None:
                    since = read_time(t.attention_started)
                    record._attention[t.project_id, t.cluster_id] = Attention(
                        int(t.attention_run), since
                    )
            record._carried = _unfinished_outside(conn, start.shard, record.seq, record._targets)
        return record

    # -- what a plan's walk found ------------------------------------------------------

    def known(self, target: Target) -> dict[str, Known]:
        """What the ledger knows of ``target``'s snapshots that are not gone."""
        return read_known(self.ledger, target)

    def sight(self) -> LedgerSight:
        """The ledger as this run's deciders compare walks with it (on this run's ledger
        here, on a reader of their own in a worker process)."""
        return LedgerSight(self.ledger.place, self._attention, self.ledger)

    def observe(
        self,
        target: Target,
        drift: ClusterDrift,
        entry: Mapping[str, Any],
        at: datetime,
    ) -> None:
        """Record one walked cluster: its new, moved and gone snapshots, its outside
        changes (``drift``), and its plan ``entry`` (plan.json's cluster entry)."""
        b, seq, now = self._batch, self.seq, At(self.seq, stamp(at))
        key = {"project_id": target.project_id, "cluster_id": target.cluster_id}
        for s in drift.new:
            b.new.append({**key, **snapshot_row(s, seq)})
            b.events.append(now.event("seen", key, s.id, after=retained_fields(Retained.of(s))))
        outside = {c.snapshot_id: c for c in drift.outside if c.snapshot_id is not None}
        for moved in drift.observed:
            b.moved.append({**snapshot_key(key, moved.snapshot_id), **moved_row(moved.after, seq)})
            kind = "ours-seen" if moved.ours else "completed"
            before, after = retained_fields(moved.before), retained_fields(moved.after)
            b.events.append(now.event(kind, key, moved.snapshot_id, before, after))
        for change in drift.outside:
            if change.kind == "changed" and change.after is not None:
                b.moved.append(
                    {**snapshot_key(key, change.snapshot_id), **moved_row(change.after, seq)}
                )
            b.events.append(outside_event(now, key, change))
        for snapshot_id in drift.vanished:
            b.gone.append({**snapshot_key(key, snapshot_id), "g_run": seq})
            if snapshot_id not in outside:
                kind = "expired" if snapshot_id in drift.expired else "vanished"
                b.events.append(now.event(kind, key, snapshot_id))
        self._target_seen(target, b, attention=bool(drift.outside), drift=drift)
        b.clusters.append(cluster_row(seq, target, entry))
        if len(b) >= BATCH_ROWS:
            self.flush()

    def gone_targets(self, changes: Iterable[OutsideChange], at: datetime) -> None:
        """Record clusters that discovery no longer finds (core.outside.gone)."""
        for change in changes:
            key = {"project_id": change.project_id, "cluster_id": change.cluster_id}
            self._batch.events.append(outside_event(At(self.seq, stamp(at)), key, change))
            self._batch.targets_seen.append(
                {
                    **target_key(key),
                    "t_run": self.seq,
                    "t_gone": self.seq,
                    "t_name": change.cluster_name,
                    "t_attention": None,
                    "t_digest": None,
                    "t_version": None,
                }
            )
            self._batch.gone_clusters.append({**target_key(key), "g_run": self.seq})
            kind, name, _ = self._targets.get(
                (change.project_id, change.cluster_id), ("", "", True)
            )
            self._targets[change.project_id, change.cluster_id] = (kind, name, True)

    def carry(self, at: datetime) -> list[OutsideChange]:
        """The changes made outside retention that killed runs of this shard found: a run
        writes what its walk found as it goes, so what the ledger knows moved on and no
        later walk finds them again. Recorded again as this run's (``foundBy``: the run
        that found each), so that a finished record, its reports and its notice name them."""
        now = At(self.seq, stamp(at))
        for change, found_by in self._carried:
            key = {"project_id": change.project_id, "cluster_id": change.cluster_id}
            self._batch.events.append(outside_event(now, key, change, found_by=found_by))
        carried, self._carried = [c for c, _ in self._carried], []
        return carried

    def known_targets(self) -> list[Target]:
        """The targets the ledger knows and has not seen go, as it last named them."""
        return [
            Target(p, c, name, "config-server" if kind == "config-server" else "cluster")
            for (p, c), (kind, name, gone) in sorted(self._targets.items())
            if not gone
        ]

    def attention(self, target: Target) -> Attention | None:
        """The first change made outside retention an earlier run found of ``target`` that
        nobody has acknowledged (``retention ledger ack``), or None."""
        return self._attention.get((target.project_id, target.cluster_id))

    def acknowledge(
        self, chosen: Sequence[Target], note: str | None, at: datetime
    ) -> list[tuple[Target, Attention]]:
        """A person looked at ``chosen``'s outside changes: each one that had any gets an
        ``acknowledged`` event of this run and no longer holds; what was acknowledged."""
        done = [(t, a) for t in chosen if (a := self.attention(t)) is not None]
        if not done:
            return []
        now = At(self.seq, stamp(at))
        with self.ledger.writing(
            f"recording the acknowledgement of run {self.start.run_id}"
        ) as conn:
            for target, attention in done:
                key = {"project_id": target.project_id, "cluster_id": target.cluster_id}
                detail = {"name": target.name, "sinceRun": attention.run}
                detail |= {"since": stamp(attention.since)} if attention.since else {}
                detail |= {"note": note} if note else {}
                conn.execute(
                    insert(events).values(now.event("acknowledged", key, None, detail=detail))
                )
                conn.execute(
                    update(targets)
                    .where(
                        (targets.c.project_id == target.project_id)
                        & (targets.c.cluster_id == target.cluster_id)
                    )
                    .values(attention_run=None)
                )
                del self._attention[target.project_id, target.cluster_id]
        return done

    def _target_seen(
        self,
        target: Target,
        b: Batch,
        *,
        attention: bool = False,
        drift: ClusterDrift | None = None,
    ) -> None:
        digest, version = (drift.digest, drift.version) if drift is not None else (None, None)
        key = (target.project_id, target.cluster_id)
        row = {"project_id": target.project_id, "cluster_id": target.cluster_id}
        if key not in self._targets:
            b.targets_new.append(
                {
                    **row,
                    "kind": target.kind,
                    "name": target.name,
                    "first_run": self.seq,
                    "last_run": self.seq,
                    # No digest from a target's first walk: a plan beside this one may be
                    # inserting it too, and only one insert is kept.
                    "walk_digest": None,
                }
            )
        else:
            b.targets_seen.append(
                {
                    **target_key(row),
                    "t_run": self.seq,
                    "t_gone": None,
                    "t_name": target.name,
                    "t_attention": self.seq if attention else None,
                    "t_digest": digest,
                    "t_version": version,
                }
            )
        self._targets[key] = (target.kind, target.name, False)

    def flush(self) -> None:
        """Write what the batch gathered, in one transaction."""
        b, self._batch = self._batch, Batch()
        if not (len(b) or b.targets_new or b.targets_seen or b.gone_clusters):
            return
        with self.ledger.writing(f"recording run {self.start.run_id}") as conn:
            write_batch(conn, b)

    # -- what an apply sends -------------------------------------------------------------

    def intend(self, changes: Sequence[Sent], at: datetime) -> None:
        """The changes about to be sent, committed before the first is: each snapshot's
        pending fields are what it asks."""
        self.flush()
        if not changes:
            return
        with self.ledger.writing(f"recording the changes run {self.start.run_id} sends") as conn:
            conn.execute(
                update(snapshots)
                .where(snapshot_where())
                .values(
                    pending=True,
                    pending_expires=bindparam("p_expires"),
                    pending_do_not_delete=bindparam("p_dnd"),
                ),
                [_asked(c) for c in changes],
            )
            conn.execute(
                insert(events),
                [_sent_event(self.seq, stamp(at), "intent", c) for c in changes],
            )
            _known_changed(conn, changes)

    def outcomes(self, changes: Sequence[Sent], at: datetime) -> None:
        """How the changes ended: a sent one is what the snapshot now has, a refused one
        is no longer pending, an unknown one stays pending (the next walk tells)."""
        if not changes:
            return
        with self.ledger.writing(f"recording what run {self.start.run_id} sent") as conn:
            sent = [c for c in changes if c.outcome == "sent"]
            if sent:
                conn.execute(
                    update(snapshots)
                    .where(snapshot_where())
                    .values(
                        expires=bindparam("p_expires"),
                        do_not_delete=bindparam("p_dnd"),
                        pending=False,
                        pending_expires=None,
                        pending_do_not_delete=None,
                        changed_run=self.seq,
                    ),
                    [_asked(c) for c in sent],
                )
            refused = [c for c in changes if c.outcome == "refused"]
            if refused:
                conn.execute(
                    update(snapshots)
                    .where(snapshot_where())
                    .values(pending=False, pending_expires=None, pending_do_not_delete=None),
                    [_bind_key(c) for c in refused],
                )
            conn.execute(
                insert(events),
                [_sent_event(self.seq, stamp(at), c.outcome or "unknown", c) for c in changes],
            )
            _known_changed(conn, changes)

    # -- the end -----------------------------------------------------------------------

    def finish(self, end: RunEnd) -> str:
        """Complete the run's row and append it to its shard's chain; the new head hash."""
        self.flush()
        shard = self.start.shard
        with self.ledger.writing(f"recording the end of run {self.start.run_id}") as conn:
            conn.execute(
                update(runs)
                .where(runs.c.seq == self.seq)
                .values(
                    ended=stamp(end.ended),
                    exit_code=end.exit_code,
                    signal=end.signal,
                    service_version=end.service_version,
                    plan_digest=end.plan_digest,
                    approvals=canonical(self._approvals(end)),
                    summary=canonical(dict(end.summary)),
                )
            )
            head = lock_head(conn, shard)
            position, prev = head.position + 1, head.hash
            row = conn.execute(select(runs).where(runs.c.seq == self.seq)).one()
            content = content_sha256(conn, row)
            new_hash = link(prev, content)
            conn.execute(
                update(runs)
                .where(runs.c.seq == self.seq)
                .values(position=position, content_sha256=content, prev_hash=prev, hash=new_hash)
            )
            conn.execute(
                update(heads).where(heads.c.shard == shard).values(position=position, hash=new_hash)
            )
        self.head = new_hash
        return new_hash

    def note_pruned(self, shard: str, position: int, hash_: str, count: int, at: datetime) -> None:
        """Record that ledger.keep removed ``shard``'s records up to ``position`` (its hash
        now the shard's anchor): an event of this run, so that the chain covers it."""
        detail = {"shard": shard, "through": position, "hash": hash_, "runs": count}
        key = {"project_id": "", "cluster_id": ""}
        self._batch.events.append(
            At(self.seq, stamp(at)).event("pruned", key, None, None, None, detail)
        )

    def _approvals(self, end: RunEnd) -> dict[str, Any]:
        """The approvals, by the run's actor unless the end says who."""
        approvals = dict(end.approvals)
        if approvals.get("clusters") and not approvals.get("by"):
            approvals["by"] = self.start.actor
        return approvals


def _bind_key(c: Sent) -> dict[str, Any]:
    return {"k_project": c.project_id, "k_cluster": c.cluster_id, "k_snapshot": c.snapshot_id}


def _asked(c: Sent) -> dict[str, Any]:
    """The parameters of a statement that writes what ``c`` asks of its snapshot."""
    return {**_bind_key(c), "p_expires": stamp(c.after.expires), "p_dnd": c.after.do_not_delete}


def _sent_event(seq: int, at: str | None, kind: str, c: Sent) -> dict[str, Any]:
    """An events row of a change of ours: its intent, or how it ended."""
    detail: dict[str, Any] = {"action": c.action}
    if c.approval:
        detail["approval"] = c.approval
    if c.status is not None:
        detail["status"] = c.status
    if c.policy:
        detail["policy"] = c.policy
    if c.why:
        detail["why"] = c.why
    key = {"project_id": c.project_id, "cluster_id": c.cluster_id}
    before, after = retained_fields(c.before), retained_fields(c.after)
    return At(seq, at).event(kind, key, c.snapshot_id, before, after, detail)


def _known_changed(conn: Connection, changes: Sequence[Sent]) -> None:
    """Drop the walk digest of each target of ``changes`` and move its known_version on:
    what the ledger knows of its snapshots may no longer be what the last walk listed, and
    a plan that read the target before this keeps no digest of its own walk either."""
    clusters = sorted({(c.project_id, c.cluster_id) for c in changes})
    conn.execute(
        update(targets)
        .where(
            (targets.c.project_id == bindparam("k_project"))
            & (targets.c.cluster_id == bindparam("k_cluster"))
        )
        .values(walk_digest=None, known_version=targets.c.known_version + 1),
        [{"k_project": p, "k_cluster": c} for p, c in clusters],
    )


def _unfinished_outside(
    conn: Connection,
    shard: str,
    seq: int,
    known: Mapping[tuple[str, str], tuple[str, str, bool]],
) -> list[tuple[OutsideChange, str]]:
    """The changes made outside retention written by the runs of ``shard`` begun after
    its last finished run and never finished themselves (but ``seq``, this one), each with
    the id of the run that found it (the first, when two killed runs carried one)."""
    finished = (
        select(func.max(runs.c.seq))
        .where(runs.c.shard == shard, runs.c.position.is_not(None))
        .scalar_subquery()
    )
    chosen = (
        select(events, runs.c.run_id)
        .join(runs, runs.c.seq == events.c.run_seq)
        .where(
            runs.c.shard == shard,
            runs.c.position.is_(None),
            runs.c.seq != seq,
            runs.c.seq > func.coalesce(finished, 0),
            events.c.kind.in_(OUTSIDE_KINDS),
        )
        .order_by(events.c.seq)
    )
    found: dict[tuple[str, str, str, str | None], tuple[OutsideChange, str]] = {}
    for e in conn.execute(chosen):
        key = (e.kind, e.project_id, e.cluster_id, e.snapshot_id)
        if key in found:
            continue
        detail = json.loads(e.detail) if e.detail else {}
        name = known.get((e.project_id, e.cluster_id), ("", detail.get("name", ""), False))[1]
        change = OutsideChange(
            e.kind,
            e.project_id,
            e.cluster_id,
            name or detail.get("name", e.cluster_id),
            e.snapshot_id,
            _retained(e.before),
            _retained(e.after),
            restore_points=int(detail.get("restorePoints", 0)),
            newest=read_time(detail.get("newest")),
            alert_id=detail.get("alertId"),
        )
        found[key] = (change, detail.get("foundBy") or e.run_id)
    return list(found.values())


def _retained(text: str | None) -> Retained | None:
    """A snapshot's fields as an event wrote them (rows.retained_fields)."""
    if text is None:
        return None
    value = json.loads(text)
    return Retained(
        bool(value["complete"]), read_time(value["expires"]), bool(value["doNotDelete"])
    )
