"""What evidence reads of the ledger: the runs (every one, to place a snapshot's first
sight and its going), the clusters in scope with their rows of the period and their
complete snapshots, the period's changes made outside retention and acknowledgements,
the policy texts, and the chain as ``ledger verify`` finds it. The period's changes of
ours, which a year of a fleet counts by the hundred thousand, are summed as they are read
(``ours``) and streamed again only to write the JSON and the CSV (``change_log``), never
held. All on one connection in one read-only transaction (on PostgreSQL one snapshot, so
a run finished meanwhile cannot show half): nothing written, no API asked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Any

from sqlalchemy import Connection, select

from retention.config.ledgerplace import LedgerPlace
from retention.errors import ChainBrokenError, UsageError
from retention.evidence.coverage import Span
from retention.evidence.log import ChangeLog, Ours
from retention.ledger.chain import ChainReport, verify
from retention.ledger.database import open_to_read, stream_rows
from retention.ledger.rows import read_time
from retention.ledger.tables import cluster_runs, events, policies, runs, snapshots, targets

# The kinds of the changes made outside retention that a plan catches.
OUTSIDE = ("changed", "deleted-early", "gone")
_STREAM = {"yield_per": 5000}


@dataclass(frozen=True)
class Period(Span):
    """The days asked for, both included (UTC days)."""

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
    def dates(self) -> list[date]:
        """Each of its days."""
        return [self.first + timedelta(days=i) for i in range(self.days)]


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


@dataclass(frozen=True, slots=True)
class ClusterRunFact:
    """A cluster in one run: its freshness check (``stale`` None: nothing expected or a
    run recorded before expectations were), whether its walk failed, its policies and
    its holds."""

    run_seq: int
    stale: bool | None
    error: bool
    policies: tuple[str, ...]
    holds: tuple[tuple[str, str], ...]  # (kind, reason)


@dataclass(frozen=True, slots=True)
class SnapshotFact:
    """A complete snapshot the ledger knows of a cluster: made ``created``, seen gone by
    run ``gone_run`` (None: still there)."""

    snapshot_id: str
    created: datetime
    gone_run: int | None


@dataclass(frozen=True)
class EventFact:
    """An event the evidence lists whole (an outside change, an acknowledgement, the
    events of a snapshot whose promised point went)."""

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
    """What evidence reads, for one period."""

    period: Period
    runs: dict[int, RunFact]  # every run of the ledger, by seq
    clusters: list[ClusterFacts]
    events: list[EventFact]  # outside changes and acknowledgements of the period
    texts: dict[str, tuple[str, str]]  # sha256: (path, text)
    # The chain's verification, asked for when the document comes to the chain: a large
    # ledger's is made in another process meanwhile (gather), and only waited for then.
    verification: Callable[[], Verified]
    ours: Ours = field(default_factory=Ours)
    altered: dict[str, str] = field(default_factory=dict)  # sha256: path of edited texts

    @cached_property
    def verified(self) -> Verified:
        """The chain's report, or why it does not hold and where (waited for once)."""
        return self.verification()

    @property
    def chain(self) -> ChainReport | None:
        """The chain's report (None: it does not hold)."""
        return self.verified[0]

    @property
    def broken(self) -> str | None:
        """Why the chain does not hold (None: it holds)."""
        return self.verified[1]

    @property
    def broken_at(self) -> str | None:
        """The record where it stopped holding."""
        return self.verified[2]

    @cached_property
    def oldest(self) -> datetime | None:
        """When the oldest run the ledger still has started (ledger.keep removed those
        before it)."""
        return min((r.started for r in self.runs.values()), default=None)

    def started(self, seq: int | None) -> datetime | None:
        """When run ``seq`` started (None: no run, or one ledger.keep removed)."""
        run = None if seq is None else self.runs.get(seq)
        return None if run is None else run.started

    def in_period(self) -> list[RunFact]:
        """The runs that started in the period, oldest first."""
        p = self.period
        return [r for r in self.runs.values() if p.start <= r.started < p.end]


# What verifying the chain found: its report, or why it does not hold and where.
Verified = tuple[ChainReport | None, str | None, str | None]


def verified_on(conn: Connection, heard: Callable[[], None] = lambda: None) -> Verified:
    """Verify every chain of the ledger on ``conn`` (``heard``: before each record)."""
    try:
        return verify(conn, heard), None, None
    except ChainBrokenError as exc:
        return None, str(exc), exc.record


def verified(place: LedgerPlace) -> Verified:
    """Verify the ledger at ``place`` on a connection of its own, read-only: run in a
    process beside the one that reads the period (a year of a fleet's chain is two
    million lines to hash, as long as the rest of the evidence)."""
    with open_to_read(place) as ledger, ledger.reading("verifying its chain") as conn:
        return verified_on(conn)


class Reading:
    """The ledger as the evidence of one period reads it, on one connection."""

    def __init__(
        self,
        conn: Connection,
        period: Period,
        clusters: Sequence[str] = (),
        projects: Sequence[str] = (),
    ) -> None:
        self.conn, self.period = conn, period
        self.clusters, self.projects = clusters, projects
        self.seqs = (0, -1)
        self.names: dict[tuple[str, str], str] = {}
        self.runs: dict[int, RunFact] = {}
        self.log: ChangeLog | None = None

    def gather(self, chain: Callable[[], Verified]) -> Facts:
        """Read the period's facts; UsageError for an empty ledger, a period with no run,
        or arguments that choose nothing. ``chain`` gives the chain's verification (here,
        ``verified_on``, or in another process beside this reading), asked for only when
        the document comes to the chain (``Facts.verified``)."""
        conn, period = self.conn, self.period
        self.runs = {r.seq: r for r in _runs(conn)}
        if not any(r.ended is not None for r in self.runs.values()):
            raise UsageError("the ledger holds no finished run: nothing to give evidence of")
        in_period = [r for r in self.runs.values() if period.start <= r.started < period.end]
        if not in_period:
            times = sorted(r.started for r in self.runs.values())
            raise UsageError(
                f"no run in {period.first} .. {period.last}: the ledger's runs go from "
                f"{times[0]:%Y-%m-%d} to {times[-1]:%Y-%m-%d}"
            )
        chosen, unmatched = _chosen(_targets(conn), self.clusters, self.projects)
        if unmatched:
            raise UsageError(
                "nothing in the ledger matches "
                + ", ".join(unmatched)
                + " (--clusters takes names, globs of names or cluster ids; --projects "
                "project ids)"
            )
        self.seqs = (min(r.seq for r in in_period), max(r.seq for r in in_period))
        scoped = [c for c in chosen if self._in_period(c)]
        if not scoped:
            raise UsageError(
                f"no cluster in scope in {period.first} .. {period.last}: every cluster "
                "chosen was first seen after it or gone before it"
            )
        by_key = {(c.project_id, c.cluster_id): c for c in scoped}
        self.names = {k: c.name for k, c in by_key.items()}
        self._rows(by_key)
        self._snapshots(by_key)
        texts: dict[str, tuple[str, str]] = {}
        altered: dict[str, str] = {}
        for p in conn.execute(select(policies.c.sha256, policies.c.path, policies.c.text)):
            # The runs' records (in the chain) name each file by the sha256 of its bytes:
            # a text that does not hash to it was edited, and is not read as a policy.
            if hashlib.sha256(p.text.encode()).hexdigest() == p.sha256:
                texts[p.sha256] = (p.path, p.text)
            else:
                altered[p.sha256] = p.path
        listed = self._listed((*OUTSIDE, "acknowledged"))
        self.log = ChangeLog(conn, self.seqs, self.names, self.runs)
        ours = self.log.ours()
        return Facts(period, self.runs, scoped, listed, texts, chain, ours, altered)

    # -- scope -------------------------------------------------------------------------

    def _in_period(self, c: ClusterFacts) -> bool:
        first = self.runs.get(c.first_run)
        if first is not None and first.started >= self.period.end:
            return False  # first seen after the period
        if c.gone_run is None:
            return True
        gone = self.runs.get(c.gone_run)
        return gone is not None and gone.started >= self.period.start

    def _rows(self, by_key: dict[tuple[str, str], ClusterFacts]) -> None:
        chosen = select(
            cluster_runs.c.run_seq,
            cluster_runs.c.project_id,
            cluster_runs.c.cluster_id,
            cluster_runs.c.holds,
            cluster_runs.c.walk_error,
            cluster_runs.c.expected,
        ).where(cluster_runs.c.run_seq.between(*self.seqs))
        interned: dict[tuple[str, ...], tuple[str, ...]] = {}
        for r in self.conn.execute(
            chosen.order_by(cluster_runs.c.run_seq), execution_options=_STREAM
        ):
            c = by_key.get((r.project_id, r.cluster_id))
            if c is None:
                continue
            expected = json.loads(r.expected) if r.expected else {}
            names = tuple(expected.get("policies", ()))
            stale = expected.get("stale")
            holds = () if r.holds == "[]" else tuple(
                (h.get("kind", ""), h.get("reason", "")) for h in json.loads(r.holds)
            )  # fmt: skip
            c.rows.append(
                ClusterRunFact(
                    int(r.run_seq),
                    None if stale is None else bool(stale),
                    r.walk_error is not None,
                    interned.setdefault(names, names),
                    holds,
                )
            )

    def _snapshots(self, by_key: dict[tuple[str, str], ClusterFacts]) -> None:
        chosen = select(
            snapshots.c.project_id,
            snapshots.c.cluster_id,
            snapshots.c.snapshot_id,
            snapshots.c.created,
            snapshots.c.gone_run,
        ).where(snapshots.c.complete.is_(True))
        # The driver's rows, past SQLAlchemy's per-row work: a year of a fleet knows
        # hundreds of thousands of snapshots.
        for project_id, cluster_id, snapshot_id, created, gone_run in stream_rows(
            self.conn, "evidence snapshots", chosen, {}
        ):
            c = by_key.get((project_id, cluster_id))
            if c is not None:
                c.snapshots.append(SnapshotFact(snapshot_id, _time(created), gone_run))

    # -- events ------------------------------------------------------------------------

    def _listed(self, kinds: tuple[str, ...]) -> list[EventFact]:
        chosen = (
            select(events)
            .where(events.c.run_seq.between(*self.seqs), events.c.kind.in_(kinds))
            .order_by(events.c.seq)
        )
        return [
            _event(e)
            for e in self.conn.execute(chosen)
            if (e.project_id, e.cluster_id) in self.names
        ]

    def events_of(self, project_id: str, cluster_id: str, snapshot_id: str) -> list[EventFact]:
        """Every event of one snapshot, oldest first (why a promised point went)."""
        chosen = (
            select(events)
            .where(
                events.c.project_id == project_id,
                events.c.cluster_id == cluster_id,
                events.c.snapshot_id == snapshot_id,
            )
            .order_by(events.c.seq)
        )
        return [_event(e) for e in self.conn.execute(chosen)]

    def expires_of(self, project_id: str, cluster_id: str, snapshot_id: str) -> datetime | None:
        """A snapshot's last known expiry."""
        found = self.conn.execute(
            select(snapshots.c.expires).where(
                snapshots.c.project_id == project_id,
                snapshots.c.cluster_id == cluster_id,
                snapshots.c.snapshot_id == snapshot_id,
            )
        ).scalar()
        return read_time(found)

    def change_log(
        self, runs: Sequence[int] | None = None
    ) -> Generator[dict[str, Any], None, None]:
        """Every change of ours in the period (log.ChangeLog.change_log), once gathered."""
        if self.log is None:
            raise AssertionError("Reading.gather comes first")
        return self.log.change_log(runs)


def _event(e: Any) -> EventFact:
    return EventFact(
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


def _runs(conn: Connection) -> Iterator[RunFact]:
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

    def named(t: ClusterFacts, g: str) -> bool:
        return fnmatchcase(t.name, g) or t.cluster_id == g

    unmatched = [f"--clusters {g!r}" for g in clusters if not any(named(t, g) for t in known)]
    unmatched += [
        f"--projects {g!r}"
        for g in projects
        if not any(fnmatchcase(t.project_id, g) for t in known)
    ]
    chosen = [
        t
        for t in known
        if (not clusters or any(named(t, g) for g in clusters))
        and (not projects or any(fnmatchcase(t.project_id, g) for g in projects))
    ]
    return chosen, unmatched
