"""Deciding clusters as their walks come in: in this process, or on worker processes.

Deciding and encoding a cluster (retention.core.decide, planwrite.encode_cluster) is pure
CPU, and a plan does it for every snapshot of the fleet while the walk threads wait on the
network. One process runs all of it on one core; with ``workers`` above 1 a pool of worker
processes decides clusters side by side while this process walks and writes:

- a walk's snapshots go out as one msgpack blob (msgspec encodes a 300-snapshot cluster in
  about 50 us; pickling the structs took over ten times as long), the worker sends back the
  encoded cluster: the bytes to write and the summary;
- results come back in the order the clusters went out, with at most ``2 * workers`` in
  flight, so memory stays bounded and the files are byte for byte what one process writes;
- what every cluster shares (policies, alerts, ``now``) goes to each worker once, at start.

Workers are spawned: never forked, since the walk threads are running and a forked child
can inherit a lock one of them held. (A fork server would start them faster, but its
workers are not children of this process, so their CPU would escape its rusage, which is
how benchmarks/fleet.py measures a plan.) They ignore SIGINT and SIGTERM: a Ctrl-C, or
a SIGTERM sent to the whole process group (systemd, timeout(1), kill -- -PGID), is this
process's stop (retention.ops.stopping), which takes the pool down; a worker killed by it
would read as a crash.

No wait on the pool is unbounded. A worker killed while it writes an answer larger than
the pipe holds (the out-of-memory killer, mid-write) leaves CPython's result reader thread
in recv() for bytes that never come: the pool never learns of the death and its futures
never end. So answers are awaited in short polls, between which the workers' sentinels
are checked; a dead worker, or no answer within ``ANSWER_WITHIN``, ends the plan, and the
pool is taken down without waiting for its thread (``_abandon``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from multiprocessing import connection, get_context
from typing import Any, Generic, Protocol, TypeVar, cast

import msgspec

from retention.core.decide import decide
from retention.core.model import AlertView, ClusterPlan, ClusterView, SnapshotView, Target
from retention.core.outage import LastRun, exposed
from retention.core.policy.loader import PolicySet
from retention.core.restorable import describe_restore_points
from retention.errors import RetentionError
from retention.ops.children import leave_stops_to, stop_signals_blocked
from retention.runfolder.planwrite import EncodedCluster, encode_cluster
from retention.walk.inventory import Walk

log = logging.getLogger("retention.planner")

# Below this many clusters a plan decides in this process whatever ``workers`` says:
# starting a worker costs about half a second of CPU (imports), what deciding some 25,000
# snapshots costs, and small plans (most tests, most audits) would only wait for it.
POOL_FROM = 50

# How often a wait for an answer stops to see whether every worker still lives: a dead one
# is noticed within this. Free when all is well: a wait ends as soon as its answer is in.
POLL = 0.5
# The longest a plan waits for one cluster's answer before it gives up on the pool. A worker
# decides and encodes some 100,000 snapshots a second and a cluster has hundreds (a million
# would take 10 s); ten minutes leave room for a pod throttled to a sliver of a CPU and a
# worker's start, and still end a stuck plan with our message long before the CronJob's
# activeDeadlineSeconds (two hours) kills it holding the lock.
ANSWER_WITHIN = 600.0
# Taking a pool down: how long to wait for its killed workers and then for its thread.
_REAP_WITHIN = 10.0

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[SnapshotView])


def pack_snapshots(snapshots: Sequence[SnapshotView]) -> bytes:
    """Snapshots as they cross between a plan and its workers: one msgpack blob."""
    return _ENCODER.encode(snapshots)


def unpack_snapshots(blob: bytes) -> list[SnapshotView]:
    """The snapshots of a ``pack_snapshots`` blob."""
    return _DECODER.decode(blob)


Answer_co = TypeVar("Answer_co", covariant=True)
Answer = TypeVar("Answer")


class Decides(Protocol[Answer_co]):
    """What a pool's workers share and how they answer for one walk: a plan's clusters
    decided and encoded (Shared), a forecast's run forward (forecasting.job). Picklable:
    each worker gets it once, at its start."""

    def decide_walk(self, walk: Walk) -> Answer_co:
        """The answer for one walked target."""
        ...


@dataclass(frozen=True)
class Shared:
    """What every decision of a plan shares: the policies, each project's open alerts and
    why its alerts could not be read (the cluster is then held), ``now`` and the lease."""

    policies: PolicySet
    alerts: Mapping[str, Sequence[AlertView]]
    unread: Mapping[str, str]
    now: datetime
    lease_for: timedelta
    # The job's last scheduled run, for the outage warning (core.outage.exposed); None: no
    # warning (no schedule, or a review of two policy sets).
    last_run: LastRun | None = None

    def plan(
        self,
        target: Target,
        snapshots: Sequence[SnapshotView],
        walk_error: str | None,
        outside: str | None = None,
    ) -> ClusterPlan:
        """Decide one cluster with the policies that match it, and describe its restore
        points; a project whose alerts could not be read holds it as a failed walk would."""
        cluster = ClusterView(
            target,
            snapshots,
            self.alerts.get(target.project_id, ()),
            walk_error,
            self.unread.get(target.project_id),
            outside,
        )
        decided = decide(
            cluster,
            self.policies.matching(target.project_id, target.name, target.kind),
            now=self.now,
            lease_for=self.lease_for,
        )
        return ClusterPlan(decided, describe_restore_points(decided, self.now))

    def decide(
        self,
        target: Target,
        snapshots: Sequence[SnapshotView],
        walk_error: str | None,
        outside: str | None = None,
    ) -> EncodedCluster:
        """Decide one cluster and encode it for the plan's files, with a warning when its
        newest kept snapshot would not outlast the lease (core.outage)."""
        plan = self.plan(target, snapshots, walk_error, outside)
        last = self.last_run
        warning = None if last is None else exposed(plan.decided, last)
        return replace(encode_cluster(plan), warning=warning)

    def decide_walk(self, walk: Walk) -> EncodedCluster:
        """Decide and encode the walked cluster."""
        return self.decide(walk.target, walk.snapshots, walk.error)


class Deciders(Generic[Answer]):
    """Decides walked clusters in their order, here (``workers`` 1) or on a pool of
    ``workers`` processes. A context manager: leaving it stops the pool."""

    def __init__(self, shared: Decides[Answer], workers: int, *, job: str = "plan") -> None:
        self.shared = shared
        self.workers = workers
        # What the messages call the work and what a failure leaves: "planning", "a plan".
        self._doing, self._job = ("planning", job) if job == "plan" else (job, job)
        self._pool: ProcessPoolExecutor | None = None
        self._started: list[Future[None]] = []
        # Sent to the pool, not yet answered: leaving with any, nothing waits for the pool.
        self._pending: deque[tuple[Walk, Future[Answer]]] = deque()
        if workers > 1:
            self._start_pool(workers)

    def _start_pool(self, workers: int) -> None:
        try:
            self._pool = ProcessPoolExecutor(
                workers,
                mp_context=get_context("spawn"),
                initializer=_start,
                initargs=(self.shared, os.getpid()),
            )
            # A pool spawns a worker for a task no idle worker takes: one task each.
            with stop_signals_blocked():
                self._started = [self._pool.submit(_ready) for _ in range(workers)]
        except (OSError, NotImplementedError) as exc:
            # A sandbox without /dev/shm (no semaphores) or a process limit: the plan is
            # the same from one process, only slower.
            self._one_process(f"cannot start {self._doing} workers ({exc})")
        except BaseException:
            self._stop()
            raise

    def _one_process(self, why: str) -> None:
        log.warning("%s: deciding in one process", why)
        self._stop()
        self.workers = 1

    def _stop(self, *, wait: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if wait:
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            _abandon(pool)

    def __enter__(self) -> Deciders[Answer]:
        return self

    def __exit__(self, *exc: object) -> None:
        # An idle pool stops cleanly. One with answers outstanding (the plan failed or was
        # interrupted meanwhile) could keep us waiting on a worker that died mid-answer.
        self._stop(wait=not self._pending)

    def decide_all(self, walks: Iterable[Walk]) -> Iterator[Answer]:
        """Each walk's answer (a plan's: its cluster decided and encoded), in the order of
        ``walks``."""
        walks = iter(walks)
        if self._pool is not None:
            yield from self._on_pool(walks)
        for walk in walks:  # all of them, or what the pool left when it could not start
            yield self.shared.decide_walk(walk)

    def _on_pool(self, walks: Iterator[Walk]) -> Iterator[Answer]:
        assert self._pool is not None  # noqa: S101 - decide_all asks first
        pending = self._pending
        in_hand: Walk | None = None  # the walk being sent, until it is pending
        try:
            for walk in walks:
                in_hand = walk
                blob = pack_snapshots(walk.snapshots)
                bare = replace(walk, snapshots=[])  # the snapshots go as the blob
                # Blocked for each task too: a task can make the pool spawn a worker.
                with stop_signals_blocked():
                    # What _decide returns is what self.shared's decide_walk does.
                    future = cast("Future[Answer]", self._pool.submit(_decide, bare, blob))
                pending.append((walk, future))
                in_hand = None
                if len(pending) >= 2 * self.workers:
                    done = self._answer(*pending[0])
                    pending.popleft()  # only once answered: a broken pool leaves it here
                    yield done
            while pending:
                done = self._answer(*pending[0])
                pending.popleft()
                yield done
        except BrokenProcessPool:
            if any(f.done() and not f.cancelled() and f.exception() is None for f in self._started):
                self._stop()
                pending.clear()
                raise RetentionError(
                    f"a {self._doing} worker process ended without an answer (killed by a "
                    f"signal, perhaps by the out-of-memory killer): no {self._job} was "
                    "written. Give the job "
                    "more memory, or set api.workers: 1 to decide in one process"
                ) from None
            # No worker ever came up (it could not import or start): decide the clusters
            # in hand, then the rest, here.
            self._one_process(f"{self._doing} workers did not start")
            for walk in [w for w, _ in pending] + ([in_hand] if in_hand else []):
                yield self.shared.decide_walk(walk)
            pending.clear()

    def _answer(self, walk: Walk, future: Future[Answer]) -> Answer:
        """The future's answer, awaited in polls that look at the workers between them:
        BrokenProcessPool once one has ended (what the pool raises when it notices by
        itself), a RetentionError when none has come within ``ANSWER_WITHIN``."""
        assert self._pool is not None  # noqa: S101 - only _on_pool asks, with a pool
        give_up = time.monotonic() + ANSWER_WITHIN
        while not futures_wait([future], timeout=POLL).done:
            if _ended(self._pool):
                raise BrokenProcessPool("a planning worker ended")
            if time.monotonic() > give_up:
                self._stop()
                self._pending.clear()
                t = walk.target
                raise RetentionError(
                    f"no {self._doing} worker answered for {t.kind} {t.cluster_id} of project "
                    f"{t.project_id} within {ANSWER_WITHIN:.0f} s: no {self._job} was "
                    "written. Set "
                    "api.workers: 1 to decide in one process"
                )
        return future.result()


def _ended(pool: ProcessPoolExecutor) -> bool:
    """Whether a worker of the pool has ended: its sentinel is ready. A worker only ends
    when the pool stops, so while answers are awaited any end is a death. Sentinels, not
    exit codes: they are read without reaping, which the pool's own thread does."""
    processes = pool._processes or {}
    return bool(connection.wait([p.sentinel for p in list(processes.values())], timeout=0))


def _all_ended(sentinels: list[int], within: float) -> bool:
    """Whether every process of ``sentinels`` ends within ``within`` seconds. Sentinels,
    not join(): the pool's thread may be reaping them meanwhile, and a join racing it can
    return while the process is still taken for alive."""
    left = set(sentinels)
    give_up = time.monotonic() + within
    while left and (remaining := give_up - time.monotonic()) > 0:
        left.difference_update(connection.wait(list(left), timeout=remaining))
    return not left


def _abandon(pool: ProcessPoolExecutor) -> None:
    """Take the pool down without waiting on it: its thread may be stuck reading a
    half-written answer, and CPython joins that thread (with no timeout) at interpreter
    exit, so it must be freed, not left.

    The workers are killed: nothing of theirs is needed, and a live one may wait forever
    on the result pipe's lock its dead peer held (SIGKILL, not SIGTERM: it ends a stopped
    worker too, and a worker has nothing to clean up). Once they are gone this process holds
    the pipe's only write end; closing it gives the reader end-of-file, and the pool's
    thread takes the pool down as for any broken pool and ends. ``ProcessPoolExecutor``
    has no public way to do any of this, hence its private attributes, read with getattr
    so that another CPython's lack of one only skips its step."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    results: Any = getattr(pool, "_result_queue", None)
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.kill()
    if not _all_ended([worker.sentinel for worker in workers], _REAP_WITHIN):
        log.warning("planning workers did not end when killed; the pool is left as it is")
        return
    writer = getattr(results, "_writer", None)
    if writer is not None:
        writer.close()
    if manager is not None:
        manager.join(_REAP_WITHIN)
        if manager.is_alive():
            log.warning("the planning pool's thread did not end; exit may wait for it")
            return
    if results is not None:
        results.close()  # the read end too, now that no thread reads it


def _ready() -> None:
    """Nothing: the task that makes the pool spawn its workers."""


# The worker's share of the plan, set once by _start when the pool spawns it.
_shared: Decides[object] | None = None


def _start(shared: Decides[object], parent: int) -> None:
    global _shared  # noqa: PLW0603 - one value per worker process, set at its start
    _shared = shared
    # The plan's queue never tells a waiting worker that the plan was killed, since each
    # worker holds its write end too: the parent watch ends it.
    leave_stops_to(parent)


def _decide(bare: Walk, blob: bytes) -> object:
    assert _shared is not None  # noqa: S101 - _start runs first in every worker
    return _shared.decide_walk(replace(bare, snapshots=unpack_snapshots(blob)))
