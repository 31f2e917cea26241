"""Applying a plan: the PATCHes of its ``changes``, compare-and-swap, with a journal.

For each cluster (concurrently, ``api.concurrency`` at a time):

1. Re-read the current state of the snapshots to change: one list walk when the cluster has
   many changes, GETs when it has a few.
2. Skip as ``stale`` any change whose snapshot no longer shows the ``observed`` state the
   plan was made from, whose expiry has meanwhile passed, or that is gone.
3. Send protect and extend first, releases next, shorten and delete last; a cluster the
   plan holds gets no destructive change, whatever its ``changes`` list says.
4. Append every outcome to ``results.jsonl`` and flush it before the next PATCH.

Killed at any point, running again converges: outcomes already journalled as applied or
stale are not sent again, and a PATCH that was sent but not journalled shows up in step 2
as a state that no longer matches ``observed``, so it is skipped, never repeated.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from pathlib import Path
from typing import Any, TextIO

from retention.api import OpsManagerClient
from retention.api.models import SnapshotPatch, SnapshotState
from retention.errors import ApiError, InconsistentListError, NotFoundError
from retention.plan.model import SnapshotView
from retention.timestamps import format_timestamp

log = logging.getLogger("retention.executor")

ORDER = {"protect": 0, "extend": 1, "release": 2, "shorten": 3, "delete": 4}
DESTRUCTIVE = frozenset({"shorten", "delete", "release"})
# Up to this many changes a cluster is re-read with GETs; above it, with one list walk.
GET_THRESHOLD = 10

Change = dict[str, Any]


def change_key(change: Change) -> str:
    """What identifies one decision of a plan: the snapshot, the action and the body."""
    body = json.dumps(change["body"], sort_keys=True)
    where = f"{change['projectId']}/{change['clusterId']}/{change['snapshotId']}"
    return f"{where}/{change['action']}/{body}"


@dataclass(frozen=True)
class Outcome:
    """What happened to one change."""

    change: Change
    outcome: str  # applied | stale | failed | held
    status: int | None = None
    error: str | None = None


class Journal:
    """results.jsonl: one line per outcome, flushed before the next PATCH.

    Flushed, not fsynced: a killed process keeps what it flushed (the operating system has
    it), and the rarer machine crash that loses a line is caught by compare-and-swap on the
    next apply. An fsync per PATCH cost ~40 ms each on an ordinary disk.
    """

    def __init__(self, path: Path, now: Callable[[], datetime]) -> None:
        self.path = path
        self._now = now
        self._lock = threading.Lock()
        self.finished: set[str] = set()
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill: that PATCH is re-checked by CAS
                if record.get("outcome") in ("applied", "stale") and "key" in record:
                    self.finished.add(record["key"])
        self._out: TextIO = path.open("a", encoding="utf-8")

    def record(self, outcome: Outcome) -> None:
        """Append an outcome and push it to disk."""
        c = outcome.change
        line = {
            "at": format_timestamp(self._now()),
            "projectId": c["projectId"],
            "clusterId": c["clusterId"],
            "clusterName": c.get("clusterName", ""),
            "snapshotId": c["snapshotId"],
            "action": c["action"],
            "body": c["body"],
            "outcome": outcome.outcome,
            "status": outcome.status,
            "error": outcome.error,
            "key": change_key(c),
        }
        with self._lock:
            self._out.write(json.dumps(line) + "\n")
            self._out.flush()

    def close(self) -> None:
        """Close the file."""
        self._out.close()


@dataclass
class ApplyResult:
    """Counts of outcomes, and the ones that failed."""

    counts: dict[str, int] = field(default_factory=dict)
    failures: list[Outcome] = field(default_factory=list)
    changed_clusters: set[tuple[str, str, str]] = field(default_factory=set)

    def add(self, outcome: Outcome) -> None:
        """Count one outcome."""
        self.counts[outcome.outcome] = self.counts.get(outcome.outcome, 0) + 1
        if outcome.outcome == "failed":
            self.failures.append(outcome)
        if outcome.outcome == "applied":
            c = outcome.change
            self.changed_clusters.add((c["projectId"], c["clusterId"], c.get("clusterName", "")))


def apply_plan(
    client: OpsManagerClient,
    changes: Iterable[Change],
    held_clusters: set[tuple[str, str]],
    journal: Journal,
    *,
    now: Callable[[], datetime],
    concurrency: int,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> ApplyResult:
    """Apply a plan's changes (in plan order, grouped by cluster); see the module docstring.

    ``changes`` may be a stream: clusters are taken one after another with at most a few
    in flight, so memory holds a few clusters' changes, never the plan's.
    """
    result = ApplyResult()
    lock = threading.Lock()

    def report(outcome: Outcome) -> None:
        journal.record(outcome)
        with lock:
            result.add(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    def run(cluster: tuple[str, str], items: list[Change]) -> None:
        _apply_cluster(
            client,
            items,
            held=cluster in held_clusters,
            journal=journal,
            now=now,
            report=report,
        )

    window = max(1, 2 * concurrency)
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="apply") as pool:
        pending: deque[Future[None]] = deque()
        grouped = groupby(changes, key=lambda c: (c["projectId"], c["clusterId"]))
        for cluster, items in grouped:
            pending.append(pool.submit(run, cluster, list(items)))
            if len(pending) >= window:
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    return result


def held_clusters_of(document: dict[str, Any]) -> set[tuple[str, str]]:
    """The clusters a plan holds: none of their destructive changes may be sent."""
    return {(c["projectId"], c["clusterId"]) for c in document["clusters"] if c["holds"]}


def _apply_cluster(
    client: OpsManagerClient,
    changes: list[Change],
    *,
    held: bool,
    journal: Journal,
    now: Callable[[], datetime],
    report: Callable[[Outcome], None],
) -> None:
    todo = [c for c in changes if change_key(c) not in journal.finished]
    todo.sort(key=lambda c: (ORDER[c["action"]], c["snapshotId"]))
    if held:
        for change in [c for c in todo if c["action"] in DESTRUCTIVE]:
            report(Outcome(change, "held", error="the plan holds this cluster"))
        todo = [c for c in todo if c["action"] not in DESTRUCTIVE]
    if not todo:
        return
    try:
        current = _current_state(client, todo)
    except ApiError as exc:
        for change in todo:
            report(Outcome(change, "failed", exc.status, f"cannot re-read the cluster: {exc}"))
        return
    for change in todo:
        report(_apply_one(client, change, current.get(change["snapshotId"]), now()))


def _current_state(client: OpsManagerClient, changes: list[Change]) -> dict[str, SnapshotState]:
    project, cluster = changes[0]["projectId"], changes[0]["clusterId"]
    if len(changes) > GET_THRESHOLD:
        try:
            return {s.id: s for s in client.list_snapshot_states(project, cluster)}
        except InconsistentListError:
            # The list moved while we read it; the snapshots we need, one by one, are exact.
            log.info("cluster %s changed while re-read; reading its snapshots one by one", cluster)
    found: dict[str, SnapshotState] = {}
    for change in changes:
        try:
            found[change["snapshotId"]] = client.get_snapshot(
                project, cluster, change["snapshotId"]
            )
        except NotFoundError:
            continue
    return found


def _apply_one(
    client: OpsManagerClient, change: Change, snapshot: SnapshotState | None, now: datetime
) -> Outcome:
    if snapshot is None:
        return Outcome(change, "stale", error="the snapshot is gone")
    # The same view of the state the planner wrote into `observed`.
    view = SnapshotView.of(snapshot)
    seen = view.observed()
    if seen != change["observed"]:
        return Outcome(change, "stale", error=f"state changed since the plan: now {seen}")
    if view.expires is not None and view.expires <= now:
        return Outcome(change, "stale", error="its expiry has passed since the plan")
    try:
        patch = SnapshotPatch.model_validate(change["body"])
        client.patch_snapshot(change["projectId"], change["clusterId"], change["snapshotId"], patch)
    except ApiError as exc:
        return Outcome(change, "failed", exc.status, str(exc))
    except ValueError as exc:  # a body the plan file should never have held
        return Outcome(change, "failed", None, f"refused to send: {exc}")
    return Outcome(change, "applied", 200)
