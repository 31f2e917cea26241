"""Applying a plan: its changes checked whole, then their PATCHes, compare-and-swap, with a
journal.

Apply promises that nothing is sent from a plan with one entry it may not trust, so every
change is checked (core.guard.EntryCheck) before the first request (``checked_changes``).
The plan's changes are read once, in that check: each change that passes is kept, compact
(msgpack, which gives its datetimes back as they were), in a spool that stays in memory up
to a few megabytes and then goes to an unnamed file in the run folder; what is sent is read
from the spool. The bytes checked are the bytes sent, and memory stays flat whatever the
plan's size. Then, for each cluster (concurrently, ``api.concurrency`` at a time):

1. Re-read the current state of the snapshots to change: one list walk when the cluster has
   many changes, GETs when it has a few.
2. Hold each change to ``core.guard.check_send`` against that state and the clock: skip as
   ``unchanged`` a change whose snapshot already holds what it writes (the plan was applied
   before); skip as ``stale`` one whose snapshot no longer shows the ``observed`` state the
   plan was made from, whose expiry has meanwhile passed, or that is gone; refuse
   (``refused``) one that would break an invariant. A destructive expiry goes out as
   max(planned, now + grace).
3. Send protect and extend first, releases next, shorten and delete last; a cluster the
   plan holds gets no destructive change, whatever its ``changes`` list says.
4. Journal ahead: before each PATCH its intent (snapshot, observed state, body) is appended
   to ``results.jsonl`` and flushed; its outcome follows when the answer comes.

An error in one cluster's worker is that cluster's alone: its unfinished changes are
journalled as failed, and the other workers go on. A stop (SIGINT, SIGTERM: ``Stop``) is
checked before every PATCH: the PATCHes on the wire finish and are journalled, and every
change not sent is journalled ``not-sent``. Killed at any point, running again converges: a
PATCH that was sent but not journalled shows up in step 2 as a snapshot that already holds
what it wrote (``unchanged``), so it is skipped, never repeated; and its intent line lets
``undo`` check it.
"""

from __future__ import annotations

import logging
import struct
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import groupby
from pathlib import Path
from typing import IO, Protocol, cast

import msgspec

from retention.api.client import OpsManagerClient
from retention.api.models import SnapshotState
from retention.api.walked import WalkedSnapshot
from retention.core.guard import ClusterFacts, Trusted, check_send, to_send
from retention.core.model import SEND_ORDER, SnapshotView
from retention.core.planfile import Body, Change, ListName
from retention.core.runfiles import JournalEntry, OutcomeName
from retention.errors import (
    ApiError,
    InconsistentListError,
    NotFoundError,
    PlanFileError,
    StopRequestedError,
)
from retention.ops.clock import Clock
from retention.ops.stopping import Stop
from retention.ops.window import ordered
from retention.runfolder.journal import JournalFile
from retention.runfolder.planrecords import patch_body

log = logging.getLogger("retention.executor")

# The checked changes held in memory before the spool goes to a file.
SPOOL_IN_MEMORY = 4 << 20
_LENGTH = struct.Struct(">I")

# Up to this many changes a cluster is re-read with GETs; above it, with one list walk.
GET_THRESHOLD = 10


@contextmanager
def checked_changes(
    candidates: Iterable[tuple[ListName, Change]],
    trusted: Trusted,
    *,
    shown: Path,
    spool_dir: Path,
) -> Iterator[CheckedChanges]:
    """The changes apply sends of a plan (its ``candidates``: those of its changes, and the
    held changes of the clusters ``trusted`` approves, no longer held), each checked against
    the plan; PlanFileError names the first that fails (``shown``: the plan's file), before
    anything is sent. The spool in ``spool_dir`` is let go on leaving."""
    encoder = msgspec.msgpack.Encoder()
    with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY, dir=str(spool_dir)) as spool:
        count = 0
        for change in to_send(candidates, trusted.approval.clusters):
            if (problem := trusted.entries.problem(change)) is not None:
                where = f"{shown}: entry {count} to send (snapshot {change['snapshotId']})"
                raise PlanFileError(where, problem)
            record = encoder.encode(change)
            spool.write(_LENGTH.pack(len(record)) + record)
            count += 1
        yield CheckedChanges(cast("IO[bytes]", spool), count)


class CheckedChanges:
    """The checked changes of a plan, in plan order, to be read once (by apply_plan)."""

    def __init__(self, spool: IO[bytes], count: int) -> None:
        self._spool, self.count = spool, count

    def __iter__(self) -> Iterator[Change]:
        spool = self._spool
        spool.seek(0)
        decoder = msgspec.msgpack.Decoder()
        while header := spool.read(_LENGTH.size):
            (size,) = _LENGTH.unpack(header)
            yield cast("Change", decoder.decode(spool.read(size)))


class Listener(Protocol):
    """Who hears how applying goes (the command line's progress bar)."""

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` PATCHes to send."""

    def outcome(self, outcome: Outcome) -> None:
        """One change done."""


@dataclass(frozen=True)
class Outcome:
    """What happened to one change, and the body that was sent (or would have been)."""

    change: Change
    outcome: OutcomeName
    status: int | None = None
    error: str | None = None
    sent: Body | None = None
    approved: bool = False  # a held change an apply's --approve let through
    # unchanged: the snapshot as the re-read found it, already holding what the change
    # writes (its expiry may be an earlier apply's, re-anchored later than the plan's).
    found: SnapshotView | None = None


class Journal:
    """results.jsonl of an apply: an intent line before each PATCH and an outcome line
    after it (or instead of it, for a change not sent), each handed to the operating system
    at once (runfolder.journal.JournalFile says how, and why not fsynced).

    An intent line has ``"intent": true`` and no ``outcome``: the body about to be sent and
    the state it was checked against. A process killed between the two leaves the intent
    alone, and ``undo`` treats that snapshot as possibly changed.
    """

    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self._file = JournalFile(path)
        self._lock = threading.Lock()
        self.intents = 0  # intent lines written: PATCHes that may have gone out

    def intent(self, change: Change, body: Body, *, approved: bool) -> None:
        """Append the intent to send ``body`` for ``change``, before it is sent."""
        self._file.append(
            {**self._entry(change), "intent": True, "body": body, "approved": approved}
        )
        with self._lock:
            self.intents += 1

    def record(self, outcome: Outcome) -> None:
        """Append an outcome and push it to disk."""
        self._file.append(
            {
                **self._entry(outcome.change),
                "body": outcome.sent,
                "outcome": outcome.outcome,
                "approved": outcome.approved,
                "status": outcome.status,
                "error": outcome.error,
            }
        )

    def _entry(self, c: Change) -> JournalEntry:
        return {
            "at": self.clock(),
            "projectId": c["projectId"],
            "clusterId": c["clusterId"],
            "clusterName": c["clusterName"],
            "snapshotId": c["snapshotId"],
            "action": c["action"],
            "destructive": c["destructive"],
            "observed": c["observed"],
            "planned": c["body"],
        }

    def close(self) -> None:
        """Close the file."""
        self._file.close()


@dataclass
class ApplyResult:
    """Counts of outcomes, and the ones that failed or were refused."""

    counts: dict[str, int] = field(default_factory=dict)
    failures: list[Outcome] = field(default_factory=list)
    approved: int = 0  # held changes an --approve let through, applied
    changed_clusters: set[tuple[str, str, str]] = field(default_factory=set)
    interrupted: str | None = None  # the signal that stopped the apply (SIGINT, SIGTERM)
    sent: int = 0  # PATCHes that went out, or may have (intent lines)

    def add(self, outcome: Outcome) -> None:
        """Count one outcome."""
        self.counts[outcome.outcome] = self.counts.get(outcome.outcome, 0) + 1
        if outcome.outcome in ("failed", "refused"):
            self.failures.append(outcome)
        if outcome.outcome == "applied" and outcome.approved:
            self.approved += 1
        if outcome.outcome == "applied":
            c = outcome.change
            self.changed_clusters.add((c["projectId"], c["clusterId"], c["clusterName"]))


def apply_plan(
    client: OpsManagerClient,
    changes: Iterable[Change],
    trusted: Trusted,
    journal: Journal,
    *,
    concurrency: int,
    listener: Listener | None = None,
) -> ApplyResult:
    """Apply a plan's changes (in plan order, grouped by cluster); see the module docstring.

    ``trusted`` holds the plan's clusters by (project, cluster id) (their holds, kind and
    release_protection) and the clusters approved. ``changes`` may be a stream: clusters
    are taken one after another with at most a few in flight, so memory holds a few
    clusters' changes, never the plan's. The time of each check is the journal's clock.
    After the client's stop is requested no PATCH starts: every change left is journalled
    ``not-sent``, and the result's ``interrupted`` names the signal.
    """
    stop = client.stop or Stop()
    applier = _Applier(client, trusted, journal, listener, stop)
    clusters_of = groupby(changes, key=lambda c: (c["projectId"], c["clusterId"]))
    work = ((key, list(items)) for key, items in clusters_of)
    for _ in ordered(lambda pair: applier.cluster(*pair), work, workers=concurrency, name="apply"):
        pass
    result = applier.result
    result.sent = journal.intents
    if stop.requested:
        result.interrupted = stop.name
    return result


@dataclass
class _Applier:
    """What the workers of one apply share: the client, the plan's facts, the journal, the
    result, who hears the outcomes, and the stop."""

    client: OpsManagerClient
    trusted: Trusted
    journal: Journal
    listener: Listener | None
    stop: Stop
    result: ApplyResult = field(default_factory=ApplyResult)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def report(self, outcome: Outcome) -> None:
        """Journal an outcome, count it and pass it on, from any worker."""
        self.journal.record(outcome)
        with self._lock:
            self.result.add(outcome)
        if self.listener is not None:
            self.listener.outcome(outcome)

    def cluster(self, key: tuple[str, str], items: list[Change]) -> None:
        """Apply one cluster's changes; an error or a stop is journalled for each change
        left, and ends this cluster only."""
        reported: set[str] = set()
        let_through = key in self.trusted.approval.clusters

        def once(outcome: Outcome) -> None:
            reported.add(outcome.change["snapshotId"])
            if let_through and outcome.change["destructive"]:
                outcome = replace(outcome, approved=True)
            self.report(outcome)

        sending = _Sending(self, self.trusted.clusters.get(key), let_through, once)
        try:
            sending.all(items)
        except StopRequestedError as exc:
            for change in items:
                if change["snapshotId"] not in reported:
                    once(_not_sent(change, exc.signal_name))
        except Exception as exc:
            log.exception("applying cluster %s failed", key[1])
            for change in items:
                if change["snapshotId"] not in reported:
                    error = f"internal error while applying: {type(exc).__name__}: {exc}"
                    once(Outcome(change, "failed", None, error))


def _not_sent(change: Change, signal_name: str) -> Outcome:
    return Outcome(change, "not-sent", error=f"not sent: the apply was stopped ({signal_name})")


@dataclass(frozen=True)
class _Sending:
    """One cluster's changes being sent: its facts (None: not in the plan), whether an
    --approve let its held changes through, and where each outcome goes."""

    applier: _Applier
    cluster: ClusterFacts | None
    approved: bool
    report: Callable[[Outcome], None]

    def all(self, changes: list[Change]) -> None:
        """Send the cluster's changes in send order, each against the state re-read."""
        cluster, report = self.cluster, self.report
        todo = sorted(changes, key=lambda c: (SEND_ORDER[c["action"]], c["snapshotId"]))
        if cluster is not None and cluster["holds"] and not self.approved:
            for change in [c for c in todo if c["destructive"]]:
                report(Outcome(change, "held", error="the plan holds this cluster"))
            todo = [c for c in todo if not c["destructive"]]
        if not todo:
            return
        self.applier.stop.check("re-reading the cluster")
        try:
            current = _current_state(self.applier.client, todo)
        except ApiError as exc:
            for change in todo:
                report(Outcome(change, "failed", exc.status, f"cannot re-read the cluster: {exc}"))
            return
        changed: set[str] = set()
        for change in todo:
            sid = change["snapshotId"]
            if sid in changed:
                # The state re-read above is no longer the snapshot's: compare-and-swap fails.
                report(Outcome(change, "stale", error="changed by this apply already"))
                continue
            found = current.get(sid)
            outcome = self.one(change, SnapshotView.of(found) if found is not None else None)
            if outcome.sent is not None:
                changed.add(sid)
            report(outcome)

    def one(self, change: Change, current: SnapshotView | None) -> Outcome:
        """Check one change against the snapshot's state (``current``, None: gone) and the
        clock, then send it, its intent journalled first."""
        applier = self.applier
        verdict = check_send(change, current, cluster=self.cluster, now=applier.journal.clock())
        if verdict.outcome != "send" or verdict.body is None:
            # Only a send carries a body; a send without one is a bug in the guard: refused.
            outcome: OutcomeName = "refused" if verdict.outcome == "send" else verdict.outcome
            found = current if outcome == "unchanged" else None
            return Outcome(change, outcome, error=verdict.reason, found=found)
        if applier.stop.requested:
            return _not_sent(change, applier.stop.name)
        sent = patch_body(verdict.body)
        destructive = self.approved and change["destructive"]
        applier.journal.intent(change, sent, approved=destructive)
        try:
            applier.client.patch_snapshot(
                change["projectId"], change["clusterId"], change["snapshotId"], verdict.body
            )
        except StopRequestedError as exc:
            if not exc.in_doubt:
                return _not_sent(change, exc.signal_name)
            # A try reached the service before the stop ended the wait for the next one.
            error = f"stopped ({exc.signal_name}) while retrying: {exc}; the service may have it"
            return Outcome(change, "failed", None, error, sent)
        except ApiError as exc:
            return Outcome(change, "failed", exc.status, str(exc), sent)
        return Outcome(change, "applied", 200, sent=sent)


def _current_state(
    client: OpsManagerClient, changes: list[Change]
) -> dict[str, WalkedSnapshot | SnapshotState]:
    project, cluster = changes[0]["projectId"], changes[0]["clusterId"]
    if len(changes) > GET_THRESHOLD:
        try:
            return {s.id: s for s in client.list_snapshot_states(project, cluster)}
        except InconsistentListError:
            # The list moved while we read it; the snapshots we need, one by one, are exact.
            log.info("cluster %s changed while re-read; reading its snapshots one by one", cluster)
    found: dict[str, WalkedSnapshot | SnapshotState] = {}
    for change in changes:
        try:
            found[change["snapshotId"]] = client.get_snapshot(
                project, cluster, change["snapshotId"]
            )
        except NotFoundError:
            continue
    return found
