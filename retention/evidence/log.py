"""The period's changes of ours, which a year of a fleet counts by the hundred thousand:
summed in the database, the first ones and the undos read whole, and every one streamed
again only to write the JSON and the CSV, never held (``change_log``)."""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
from sqlalchemy import Connection, bindparam, func, or_, select

from retention.ledger.database import stream_rows
from retention.ledger.tables import events


class RunFact(Protocol):
    """What the log says of a change's run (gather.RunFact has it)."""

    @property
    def run_id(self) -> str:
        """Its id."""
        ...

    @property
    def mode(self) -> str:
        """Its command."""
        ...

    @property
    def actor(self) -> str:
        """Who ran it."""
        ...


# The outcomes of a change of ours, as the ledger records them.
OUTCOMES = ("sent", "refused", "unknown")

# Changes listed in the HTML and the Markdown; the JSON and the CSV have every one.
PREVIEW = 200
# The columns of the change log: what its sums need first, then the rest of an entry.
_SUMMED = (
    events.c.run_seq,
    events.c.kind,
    events.c.project_id,
    events.c.cluster_id,
    events.c.snapshot_id,
    events.c.detail,
)
_LOGGED = (*_SUMMED, events.c.at, events.c.before, events.c.after)
# The kinds of the events of a change of ours: what it was about to send, how it ended.
_KINDS = or_(*(events.c.kind == k for k in (*OUTCOMES, "intent")))
# Distinct details kept parsed at once (a few hundred a day's changes have, at most).
_DETAILS = 10_000
# The ledger's JSON texts, read several times faster than by json.loads (a year's log
# has two million of them to read).
_decode = msgspec.json.decode
# Each distinct detail parsed once: a day's changes of a policy say the same (the action,
# the policy, the status, why).
_parsed: Callable[[str], dict[str, Any]] = functools.lru_cache(maxsize=_DETAILS)(_decode)


@dataclass
class Ours:
    """The period's changes of ours, summed as they were read."""

    total: int = 0  # changes in the log: each outcome, and each intent that has none
    sent: int = 0
    by_action: Counter[str] = field(default_factory=Counter)  # sent ones
    # By (project id, cluster id): a name can be another project's cluster's too.
    by_cluster: dict[tuple[str, str], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    sent_by_run: Counter[int] = field(default_factory=Counter)
    preview: list[dict[str, Any]] = field(default_factory=list)  # the first PREVIEW
    undos: list[dict[str, Any]] = field(default_factory=list)


class ChangeLog:
    """The period's changes of ours on one connection: its runs (``seqs``, the first and
    last), the clusters in scope (``names``) and every run of the ledger."""

    def __init__(
        self,
        conn: Connection,
        seqs: tuple[int, int],
        names: Mapping[tuple[str, str], str],
        runs: Mapping[int, RunFact],
    ) -> None:
        self.conn, self.seqs, self.names, self.runs = conn, seqs, names, runs
        self._bounds: tuple[int, int] | None = None
        self._killed: list[int] = []  # runs with intents no outcome followed (``ours``)

    def ours(self) -> Ours:
        """Sum the period's changes of ours in the database, in two reads of the period's
        events (by cluster and detail for the actions; by run, kind and cluster for the
        rest: a few hundred thousand groups for a year's millions of events); keep the
        first PREVIEW and the undos whole."""
        ours = Ours()
        period = self._period_events()
        summed = (
            select(events.c.project_id, events.c.cluster_id, events.c.detail, func.count())
            .where(*period, events.c.kind == "sent")
            .group_by(events.c.project_id, events.c.cluster_id, events.c.detail)
        )
        for project_id, cluster_id, detail, count in self.conn.execute(summed):
            if (project_id, cluster_id) not in self.names:
                continue
            action = self._detail(detail).get("action") or "?"
            ours.sent += count
            ours.by_action[action] += count
            ours.by_cluster[project_id, cluster_id][action] += count
        counted = (
            select(
                events.c.run_seq,
                events.c.kind,
                events.c.project_id,
                events.c.cluster_id,
                func.count(),
            )
            .where(*period, _KINDS)
            .group_by(events.c.run_seq, events.c.kind, events.c.project_id, events.c.cluster_id)
        )
        more: Counter[int] = Counter()  # a run's intents less its outcomes
        for run_seq, kind, project_id, cluster_id, count in self.conn.execute(counted):
            more[run_seq] += count if kind == "intent" else -count
            if (project_id, cluster_id) not in self.names:
                continue
            if kind == "sent":
                ours.sent_by_run[run_seq] += count
            elif kind != "intent":
                ours.total += count  # refused, unknown
        self._killed = sorted(seq for seq, n in more.items() if n > 0)
        ours.total += ours.sent + sum(1 for _ in self._pending(_SUMMED))
        for entry in self.change_log():
            ours.preview.append(plain(entry))
            if len(ours.preview) >= PREVIEW:
                break
        undo = [s for s, r in self.runs.items() if r.mode == "undo" and self._in_seqs(s)]
        ours.undos = [plain(e) for e in self.change_log(undo)] if undo else []
        return ours

    def _in_seqs(self, seq: int) -> bool:
        return self.seqs[0] <= seq <= self.seqs[1]

    def _period_events(self) -> tuple[Any, ...]:
        """The conditions of the period's events: the range of their seqs (so that they
        are read by the primary key, in the order written) and of their runs'."""
        if self._bounds is None:
            low, high = self.conn.execute(
                select(func.min(events.c.seq), func.max(events.c.seq)).where(
                    events.c.run_seq.between(*self.seqs)
                )
            ).one()
            self._bounds = (int(low), int(high)) if low is not None else (0, -1)
        return (events.c.seq.between(*self._bounds), events.c.run_seq.between(*self.seqs))

    def _log_rows(
        self, columns: Sequence[Any], runs: Sequence[int] | None = None
    ) -> Iterator[Sequence[Any]]:
        """The rows of the period's changes of ours (of ``runs`` only, when given;
        ``columns``: run_seq, kind, project_id, cluster_id, snapshot_id first): each
        outcome in the order written, then each intent no outcome followed (``_pending``)."""
        self._period_events()
        chosen = (
            select(*columns)
            .where(
                events.c.seq.between(bindparam("k_low"), bindparam("k_high")),
                events.c.run_seq.between(bindparam("k_first"), bindparam("k_last")),
                # Not IN (...): an expanding list is bound at execution, and the driver's
                # statement is compiled once, before.
                or_(*(events.c.kind == kind for kind in OUTCOMES)),
            )
            .order_by(events.c.seq)
        )
        low, high = self._bounds or (0, -1)
        names = self.names
        spans = [self.seqs] if runs is None else [(r, r) for r in runs]
        for first, last in spans:
            values = {"k_low": low, "k_high": high, "k_first": first, "k_last": last}
            for row in stream_rows(self.conn, f"evidence log {len(columns)}", chosen, values):
                if (row[2], row[3]) in names:
                    yield row
        yield from self._pending(columns, runs)

    def _pending(
        self, columns: Sequence[Any], runs: Sequence[int] | None = None
    ) -> Iterator[Sequence[Any]]:
        """Each intent of the period no outcome followed: a run killed between writing
        what it was about to send and how it ended. Only the runs with more intents than
        outcomes (``ours`` found them) are read again: none, unless one was killed."""
        for run_seq in self._killed:
            if runs is not None and run_seq not in runs:
                continue
            chosen = select(*columns).where(events.c.run_seq == run_seq, _KINDS)
            rows = self.conn.execute(chosen.order_by(events.c.seq)).all()
            ended = {(r[2], r[3], r[4]) for r in rows if r[1] != "intent"}
            for r in rows:
                key = (r[2], r[3], r[4])
                if r[1] == "intent" and key not in ended and (r[2], r[3]) in self.names:
                    yield tuple(r)

    def change_log(
        self, runs: Sequence[int] | None = None
    ) -> Generator[dict[str, Any], None, None]:
        """Every change of ours in the period (of ``runs`` only, when given), as the
        document lists it (``_log_rows``'s order)."""
        entry = self._entry
        for row in self._log_rows(_LOGGED, runs):
            yield entry(row)

    def _entry(self, row: Sequence[Any]) -> dict[str, Any]:
        run_seq, kind, project_id, cluster_id, snapshot_id, detail, at, before, after = row
        run = self.runs.get(run_seq)
        said = self._detail(detail)
        return {
            "at": at,
            "runId": run.run_id if run else None,
            "mode": run.mode if run else None,
            "actor": run.actor if run else None,
            "projectId": project_id,
            "clusterId": cluster_id,
            "cluster": self.names[project_id, cluster_id],
            "snapshotId": snapshot_id,
            "action": said.get("action"),
            "outcome": "pending" if kind == "intent" else kind,
            "status": said.get("status"),
            "before": _fields(before),
            "after": _fields(after),
            "approval": said.get("approval"),
            "policy": said.get("policy"),
            "why": said.get("why"),
        }

    def _detail(self, text: str | None) -> dict[str, Any]:
        """An event's detail (read, not changed: parsed once for each distinct text)."""
        return _parsed(text) if text else {}


class Fields(msgspec.Struct):
    """A snapshot's retention fields as a change log entry has them (the ledger's JSON
    also says ``complete``: not read)."""

    expires: str | None = None
    doNotDelete: bool | None = None  # noqa: N815 - the document's name


_FIELDS = msgspec.json.Decoder(Fields)
_NO_FIELDS = Fields()


def _fields(text: str | None) -> Fields:
    return _FIELDS.decode(text) if text else _NO_FIELDS


def plain(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry as plain data (its fields as mappings): what a template or json reads."""
    found: dict[str, Any] = msgspec.to_builtins(entry)
    return found
