"""Deciding clusters as their walks come in: in this process, or on worker processes.

Deciding and encoding a cluster (retention.plan.decide, planwrite.encode_cluster) is pure
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
how benchmarks/fleet.py measures a plan.) They ignore SIGINT:
Ctrl-C reaches this process, which stops the pool.
"""

from __future__ import annotations

import logging
import math
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from retention.errors import RetentionError
from retention.plan.decide import decide
from retention.plan.model import AlertView, SnapshotView, Target
from retention.plan.planwrite import EncodedCluster, encode_cluster
from retention.policy.loader import PolicySet

if TYPE_CHECKING:
    from retention.inventory import Walk

log = logging.getLogger("retention.planner")

# Below this many clusters a plan decides in this process whatever ``workers`` says:
# starting a worker costs about half a second of CPU (imports), what deciding some 25,000
# snapshots costs, and small plans (most tests, most audits) would only wait for it.
POOL_FROM = 50

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[SnapshotView])


@dataclass(frozen=True)
class Shared:
    """What every decision of a plan shares: the policies, each project's open alerts and
    why its alerts could not be read (the cluster is then held), ``now`` and the lease."""

    policies: PolicySet
    alerts: Mapping[str, Sequence[AlertView]]
    unread: Mapping[str, str]
    now: datetime
    lease_for: timedelta

    def decide(
        self, target: Target, snapshots: Sequence[SnapshotView], walk_error: str | None
    ) -> EncodedCluster:
        """Decide one cluster and encode it for the plan's files."""
        plan = decide(
            target,
            snapshots,
            self.policies.matching(target.project_id, target.name, target.kind),
            self.alerts.get(target.project_id, ()),
            now=self.now,
            lease_for=self.lease_for,
            walk_error=walk_error or self.unread.get(target.project_id),
        )
        return encode_cluster(plan)


class Deciders:
    """Decides walked clusters in their order, here (``workers`` 1) or on a pool of
    ``workers`` processes. A context manager: leaving it stops the pool."""

    def __init__(self, shared: Shared, workers: int) -> None:
        self.shared = shared
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        if workers > 1:
            try:
                self._pool = ProcessPoolExecutor(
                    workers, mp_context=get_context("spawn"), initializer=_start, initargs=(shared,)
                )
                _spawn_deaf_to_ctrl_c(self._pool, workers)
            except (OSError, NotImplementedError) as exc:
                # A sandbox without /dev/shm (no semaphores) or a process limit: the plan
                # is the same from one process, only slower.
                log.warning("cannot start planning workers (%s): deciding in one process", exc)
                if self._pool is not None:
                    self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
                self.workers = 1

    def __enter__(self) -> Deciders:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def decide_all(self, walks: Iterable[Walk]) -> Iterator[EncodedCluster]:
        """Each walk's cluster decided and encoded, in the order of ``walks``."""
        if self._pool is None:
            for walk in walks:
                yield self.shared.decide(walk.target, walk.snapshots, walk.error)
            return
        pending: deque[Future[EncodedCluster]] = deque()
        try:
            for walk in walks:
                blob = _ENCODER.encode(walk.snapshots)
                pending.append(self._pool.submit(_decide, walk.target, blob, walk.error))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool:
            raise RetentionError(
                "a planning worker process ended without an answer (killed, perhaps for "
                "memory): no plan was written. Give the job more memory, or set "
                "api.workers: 1 to decide in one process"
            ) from None


def _spawn_deaf_to_ctrl_c(pool: ProcessPoolExecutor, workers: int) -> None:
    """Start the pool's workers now with SIGINT blocked from their first instruction (a
    child inherits the signal mask of the thread that starts it), so a Ctrl-C while they
    import prints no traceback of theirs; their initializer then ignores it for good.
    Blocked, not ignored, here: a Ctrl-C meanwhile stays pending for this process instead
    of being lost. (A pool spawns a worker for a task no idle worker takes, so ``workers``
    tasks at once spawn them all.)"""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for _ in range(workers):
            pool.submit(_ready)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _ready() -> None:
    """Nothing: the task that makes the pool spawn its workers."""


# The worker's share of the plan, set once by _start when the pool spawns it.
_shared: Shared | None = None


def _start(shared: Shared) -> None:
    global _shared  # noqa: PLW0603 - one value per worker process, set at its start
    _shared = shared
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _decide(target: Target, blob: bytes, walk_error: str | None) -> EncodedCluster:
    assert _shared is not None  # noqa: S101 - _start runs first in every worker
    return _shared.decide(target, _DECODER.decode(blob), walk_error)


def available_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may use: those it may run on, capped by the container's CPU
    limit (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``) rounded up; at least 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = _cgroup_limit(cgroup)
    return max(1, min(cpus or 1, limit or cpus or 1))


def _cgroup_limit(cgroup: Path) -> int | None:
    """The CPU limit of the cgroup in whole CPUs (rounded up); None when there is none."""
    try:
        if (v2 := cgroup / "cpu.max").is_file():
            quota, _, period = v2.read_text().strip().partition(" ")
            if quota == "max":
                return None
            return math.ceil(int(quota) / int(period or "100000"))
        v1 = cgroup / "cpu"
        quota_us = int((v1 / "cpu.cfs_quota_us").read_text())
        period_us = int((v1 / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return math.ceil(quota_us / period_us) if quota_us > 0 and period_us > 0 else None
