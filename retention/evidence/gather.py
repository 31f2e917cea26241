"""What evidence reads of the ledger: the runs of the period (and the times of every run,
to place a snapshot's first sight and its going), the clusters in scope with their rows
per run, their snapshots, the events of the period, the policy texts, and the chain as
``ledger verify`` finds it. One read-only transaction (on PostgreSQL one snapshot, so
that a run finished meanwhile cannot show half), nothing written, no API asked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any

from sqlalchemy import Connection, select

from retention.errors import ChainBrokenError, UsageError
from retention.ledger.chain import ChainReport, verify
from retention.ledger.rows import read_time
from retention.ledger.tables import cluster_runs, events, policies, runs, snapshots, targets

# The events evidence lists: the changes of ours and how they ended, the changes made
# outside retention, and their acknowledgements.
OURS = ("intent", "sent", "refused", "unknown")
OUTSIDE = ("changed", "deleted-early", "gone")
LISTED = (*OURS, *OUTSIDE, "acknowledged")


@dataclass(frozen=True)
class Period:
    """The days asked for, both included (UTC days)."""

    first: date
    last: date

    @property
    def start(self) -> datetime:
        """Its first instant."""
        return datetime(self.first.year, self.first.month, self.first.day, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """The instant after it."""
        after = self.last + timedelta(days=1)
        return datetime(after.year, after.month, after.day, tzinfo=UTC)

    @property
    def days(self) -> list[date]:
        """Each of its days."""
        return [self.first + timedelta(days=i) for i in range((self.last - self.first).days + 1)]


@dataclass(frozen=True)
class RunFact:
    """A run as the ledger has it."""

    seq: int
    run_id: str
    shard: str
    mode: str
    started: datetime
    ended: datetime | None
    exit_code: int | None
    signal: str | None
    actor: str
    policies: tuple[dict[str, str], ...]
    approvals: dict[str, Any]
    position: int | None
    hash: str | None


@dataclass(frozen=True)
class ClusterRunFact:
    """A cluster in one run: what its plan made of it."""

    run_seq: int
    holds: tuple[dict[str, str], ...]
    newest_age_seconds: int | None
    walk_error: str | None
    expected: dict[str, Any] | None


@dataclass(frozen=True)
class SnapshotFact:
    """A snapshot the ledger knows of a cluster, gone or not."""

    snapshot_id: str
    created: datetime
    complete: bool
    expires: datetime | None
    do_not_delete: bool
    first_run: int
    gone_run: int | None


@dataclass(frozen=True)
class EventFact:
    """An event of the period."""

    seq: int
    run_seq: int
    at: datetime | None
    kind: str
    project_id: str
    cluster_id: str
    snapshot_id: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    detail: dict[str, Any]


@dataclass
class ClusterFacts:
    """One cluster in scope: who it is and what the ledger has of it."""

    project_id: str
    cluster_id: str
    kind: str
    name: str
    first_run: int
    gone_run: int | None
    rows: list[ClusterRunFact] = field(default_factory=list)
    snapshots: list[SnapshotFact] = field(default_factory=list)


@dataclass
class Facts:
    """Everything evidence reads, for one period."""

    period: Period
    runs: dict[int, RunFact]  # every run of the ledger, by seq
    clusters: list[ClusterFacts]
    events: list[EventFact]
    texts: dict[str, tuple[str, str]]  # sha256: (path, text)
    chain: ChainReport | None
    broken: str | None
    broken_at: str | None
    unmatched: list[str]  # --clusters and --projects arguments that matched nothing

    def started(self, seq: int | None) -> datetime | None:
        """When run ``seq`` started (None: no run, or one ledger.keep removed)."""
        run = None if seq is None else self.runs.get(seq)
        return None if run is None else run.started

    def in_period(self) -> list[RunFact]:
        """The runs that started in the period, oldest first."""
        p = self.period
        return [r for r in self.runs.values() if p.start <= r.started < p.end]


def gather(
    conn: Connection,
    period: Period,
    clusters: Sequence[str] = (),
    projects: Sequence[str] = (),
) -> Facts:
    """Read the period's facts on ``conn`` (one read-only transaction)."""
    all_runs = {r.seq: r for r in _runs(conn)}
    if not any(r.ended is not None for r in all_runs.values()):
        raise UsageError("the ledger holds no finished run: nothing to give evidence of")
    in_period = [r for r in all_runs.values() if period.start <= r.started < period.end]
    if not in_period:
        times = sorted(r.started for r in all_runs.values())
        raise UsageError(
            f"no run in {period.first} .. {period.last}: the ledger's runs go from "
            f"{times[0]:%Y-%m-%d} to {times[-1]:%Y-%m-%d}"
        )
    known = _targets(conn)
    chosen, unmatched = _chosen(known, clusters, projects)
    if unmatched:
        raise UsageError(
            "nothing in the ledger matches "
            + ", ".join(unmatched)
            + " (--clusters takes names, globs of names or cluster ids; --projects project ids)"
        )
    first_seq, last_seq = min(r.seq for r in in_period), max(r.seq for r in in_period)
    scoped = [
        c
        for c in chosen
        if _seen_by(all_runs, c.first_run, period.end) and not _gone_before(all_runs, c, period)
    ]
    by_key = {(c.project_id, c.cluster_id): c for c in scoped}
    _rows(conn, by_key, first_seq, last_seq)
    _snapshots(conn, by_key)
    found = _events(conn, by_key, first_seq, last_seq)
    texts = {
        p.sha256: (p.path, p.text)
        for p in conn.execute(select(policies.c.sha256, policies.c.path, policies.c.text))
    }
    try:
        chain, broken, broken_at = verify(conn), None, None
    except ChainBrokenError as exc:
        chain, broken, broken_at = None, str(exc), exc.record
    return Facts(period, all_runs, scoped, found, texts, chain, broken, broken_at, [])


def _runs(conn: Connection) -> Iterable[RunFact]:
    for r in conn.execute(select(runs).order_by(runs.c.seq)):
        yield RunFact(
            int(r.seq),
            r.run_id,
            r.shard,
            r.mode,
            _time(r.started),
            read_time(r.ended),
            r.exit_code,
            r.signal,
            r.actor,
            tuple(json.loads(r.policies)),
            json.loads(r.approvals),
            r.position,
            r.hash,
        )


def _time(text: str) -> datetime:
    value = read_time(text)
    if value is None:
        raise AssertionError("a time the ledger requires")
    return value


def _targets(conn: Connection) -> list[ClusterFacts]:
    return [
        ClusterFacts(t.project_id, t.cluster_id, t.kind, t.name, int(t.first_run), t.gone_run)
        for t in conn.execute(
            select(targets).order_by(targets.c.name, targets.c.project_id, targets.c.cluster_id)
        )
    ]


def _chosen(
    known: list[ClusterFacts], clusters: Sequence[str], projects: Sequence[str]
) -> tuple[list[ClusterFacts], list[str]]:
    """The targets the arguments choose, and each argument that chose none."""
    unmatched = [
        f"--clusters {g!r}"
        for g in clusters
        if not any(fnmatchcase(t.name, g) or t.cluster_id == g for t in known)
    ]
    unmatched += [
        f"--projects {g!r}"
        for g in projects
        if not any(fnmatchcase(t.project_id, g) for t in known)
    ]
    chosen = [
        t
        for t in known
        if (not clusters or any(fnmatchcase(t.name, g) or t.cluster_id == g for g in clusters))
        and (not projects or any(fnmatchcase(t.project_id, g) for g in projects))
    ]
    return chosen, unmatched


def _seen_by(all_runs: dict[int, RunFact], seq: int, end: datetime) -> bool:
    run = all_runs.get(seq)
    return run is None or run.started < end  # a run ledger.keep removed was long before


def _gone_before(all_runs: dict[int, RunFact], c: ClusterFacts, period: Period) -> bool:
    run = None if c.gone_run is None else all_runs.get(c.gone_run)
    return c.gone_run is not None and (run is None or run.started < period.start)


def _rows(
    conn: Connection, by_key: dict[tuple[str, str], ClusterFacts], first: int, last: int
) -> None:
    chosen = select(
        cluster_runs.c.run_seq,
        cluster_runs.c.project_id,
        cluster_runs.c.cluster_id,
        cluster_runs.c.holds,
        cluster_runs.c.newest_age_seconds,
        cluster_runs.c.walk_error,
        cluster_runs.c.expected,
    ).where(cluster_runs.c.run_seq.between(first, last))
    for r in conn.execute(chosen.order_by(cluster_runs.c.run_seq)):
        c = by_key.get((r.project_id, r.cluster_id))
        if c is not None:
            c.rows.append(
                ClusterRunFact(
                    int(r.run_seq),
                    tuple(json.loads(r.holds)),
                    r.newest_age_seconds,
                    r.walk_error,
                    None if r.expected is None else json.loads(r.expected),
                )
            )


def _snapshots(conn: Connection, by_key: dict[tuple[str, str], ClusterFacts]) -> None:
    chosen = select(
        snapshots.c.project_id,
        snapshots.c.cluster_id,
        snapshots.c.snapshot_id,
        snapshots.c.created,
        snapshots.c.complete,
        snapshots.c.expires,
        snapshots.c.do_not_delete,
        snapshots.c.first_run,
        snapshots.c.gone_run,
    )
    for s in conn.execute(chosen):
        c = by_key.get((s.project_id, s.cluster_id))
        if c is not None:
            c.snapshots.append(
                SnapshotFact(
                    s.snapshot_id,
                    _time(s.created),
                    bool(s.complete),
                    read_time(s.expires),
                    bool(s.do_not_delete),
                    int(s.first_run),
                    s.gone_run,
                )
            )
    for c in by_key.values():
        c.snapshots.sort(key=lambda s: (s.created, s.snapshot_id))


def _events(
    conn: Connection, by_key: dict[tuple[str, str], ClusterFacts], first: int, last: int
) -> list[EventFact]:
    chosen = (
        select(events)
        .where(events.c.run_seq.between(first, last), events.c.kind.in_(LISTED))
        .order_by(events.c.seq)
    )
    found = []
    for e in conn.execute(chosen):
        if (e.project_id, e.cluster_id) not in by_key:
            continue
        found.append(
            EventFact(
                int(e.seq),
                int(e.run_seq),
                read_time(e.at),
                e.kind,
                e.project_id,
                e.cluster_id,
                e.snapshot_id,
                None if e.before is None else json.loads(e.before),
                None if e.after is None else json.loads(e.after),
                json.loads(e.detail) if e.detail else {},
            )
        )
    return found
