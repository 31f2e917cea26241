"""Deciding on worker processes (retention.plan.workers): the same plan byte for byte as one
process, results in cluster order, a dead worker named, and the CPUs a pod may use."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retention.config.policyfiles import parse_policies
from retention.config.scope import ProjectTargets, Scope
from retention.config.settings import ApiSettings
from retention.core.model import SnapshotView, Target
from retention.core.policy.loader import PolicySet
from retention.errors import RetentionError
from retention.ops.children import PARENT_POLL
from retention.ops.cpus import available_cpus, planning_workers
from retention.plan.planner import make_plan
from retention.plan.workers import POOL_FROM, Deciders, Shared
from retention.simulator.server import Simulator, SimulatorConfig
from retention.walk.inventory import Walk
from tests.support.client import PUBLIC_KEY
from tests.support.dyingworker import DiesWriting
from tests.support.planfiles import decision_lines
from tests.support.simfleet import KEY, client_for

ROOT = Path(__file__).resolve().parent.parent

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
POLICY = """\
name: gfs
keep: {last: 4, daily: 7, weekly: 4, monthly: 6}
protect:
  ids:
    - {id: HOLD, reason: legal hold, ticket: LEGAL-7, until: "2027-01-31"}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""


def policies(record_id: str = "none") -> PolicySet:
    """The test policy, its hold record on snapshot ``record_id``."""
    data = POLICY.replace("HOLD", record_id).encode()
    return PolicySet(parse_policies([(Path("gfs.yaml"), data)]))


def walks(count: int, per: int = 40) -> list[Walk]:
    """``count`` clusters of ``per`` six-hourly snapshots, ids in the plan's order."""
    out = []
    for n in range(count):
        target = Target("p1", f"c{n:04d}", f"rs-{n:04d}")
        snapshots = [
            SnapshotView(
                f"c{n:04d}s{i:03d}",
                NOW - timedelta(hours=6 * i + n % 5),
                complete=i != 0,
                do_not_delete=i % 17 == 3,
                expires=NOW + timedelta(days=i % 9 - 2),
                consistent=i % 23 != 7,
                storage_bytes=i * 1000 or None,
            )
            for i in range(per)
        ]
        out.append(Walk(target, snapshots, error="timed out" if n == 3 else None))
    return out


def shared(record_id: str = "none") -> Shared:
    """What the clusters of the tests share."""
    return Shared(policies(record_id), {}, {}, NOW, timedelta(days=1))


def test_a_pool_decides_every_cluster_as_one_process_does_in_the_same_order() -> None:
    """Two worker processes give the encoded clusters one process gives, equal and in the
    order the walks came in, a walk error and a hold record included."""
    fleet = walks(30)
    with Deciders(shared("c0007s005"), 1) as alone:
        expected = list(alone.decide_all(fleet))
    with Deciders(shared("c0007s005"), 2) as pool:
        got = list(pool.decide_all(iter(fleet)))

    assert [c.key for c in got] == [("p1", "cluster", f"c{n:04d}") for n in range(30)]
    assert got == expected
    assert got[3].summary["errors"] == ["timed out"]
    assert [entry["state"] for _, entry in got[7].hold_records] == ["protected"]


def test_a_worker_that_dies_is_named_not_a_traceback() -> None:
    """A worker killed mid-plan (the OOM killer) ends the plan with a RetentionError that
    says so and how to decide in one process instead."""
    fleet = walks(40)

    def killing() -> Iterator[Walk]:
        for n, walk in enumerate(fleet):
            if n == 10:
                for pid in list(deciders._pool._processes):  # type: ignore[union-attr]
                    os.kill(pid, signal.SIGKILL)
            yield walk

    with Deciders(shared(), 2) as deciders, pytest.raises(RetentionError) as info:
        list(deciders.decide_all(killing()))

    assert "planning worker process ended without an answer" in str(info.value)
    assert "api.workers: 1" in str(info.value)


def test_a_worker_killed_while_writing_its_answer_fails_the_plan() -> None:
    """A worker SIGKILLed halfway through writing its answer (the pool's result reader then
    waits for bytes that never come) fails the plan with the RetentionError that names
    api.workers: 1, and leaves no worker and no pool thread running."""
    dying = DiesWriting(policies(), {}, {}, NOW, timedelta(days=1), victim="c0005")

    with Deciders(dying, 2) as deciders:
        assert deciders._pool is not None
        workers = list(deciders._pool._processes.values())
        manager: threading.Thread = deciders._pool._executor_manager_thread  # type: ignore[assignment]
        with pytest.raises(RetentionError) as info:
            list(deciders.decide_all(walks(20)))

    assert "planning worker process ended without an answer" in str(info.value)
    assert "api.workers: 1" in str(info.value)
    assert len(workers) == 2
    assert [w.is_alive() for w in workers] == [False, False]
    assert not manager.is_alive()


def test_a_worker_that_answers_nothing_fails_the_plan_at_the_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Workers that live but answer nothing (stopped, stuck) fail the plan once
    ANSWER_WITHIN has passed, with a RetentionError that names the cluster waited for and
    api.workers: 1, and are gone afterwards."""
    monkeypatch.setattr("retention.plan.workers.ANSWER_WITHIN", 1.0)
    monkeypatch.setattr("retention.plan.workers.POLL", 0.1)

    with Deciders(shared(), 2) as deciders:
        assert deciders._pool is not None
        workers = list(deciders._pool._processes.values())
        for worker in workers:
            os.kill(worker.pid, signal.SIGSTOP)  # type: ignore[arg-type]
        with pytest.raises(RetentionError) as info:
            list(deciders.decide_all(walks(20)))

    assert str(info.value).startswith(
        "no planning worker answered for cluster c0000 of project p1 within 1 s"
    )
    assert "api.workers: 1" in str(info.value)
    assert [w.is_alive() for w in workers] == [False, False]


STUCK_PLAN = """
from datetime import timedelta
from retention.plan.workers import Deciders
from retention.errors import RetentionError
from tests.support.dyingworker import DiesWriting
from tests.support.planfiles import decision_lines
from tests.test_deciding import NOW, policies, walks

dying = DiesWriting(policies(), {}, {}, NOW, timedelta(days=1), victim="c0005")
try:
    with Deciders(dying, 2) as deciders:
        list(deciders.decide_all(walks(20)))
except RetentionError as exc:
    print(exc)
"""


def test_a_process_whose_worker_died_mid_answer_still_exits() -> None:
    """A process whose worker died halfway through writing its answer gets the
    RetentionError and then exits: nothing of the pool (CPython joins its thread at exit)
    holds the interpreter up."""
    # A session of its own, so that a hang (the old code) leaves no worker behind.
    child = subprocess.Popen(
        [sys.executable, "-c", STUCK_PLAN],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail("the process did not exit within 120 s")

    assert (child.returncode, err) == (0, "")
    assert "planning worker process ended without an answer" in out


POOL_THEN_SLEEP = """
import sys, time
from tests.test_deciding import shared
from retention.plan.workers import Deciders
with Deciders(shared(), 2) as deciders:
    for started in deciders._started:
        started.result()
    print(*deciders._pool._processes, flush=True)
    time.sleep(600)
"""


def _ended(pid: int) -> bool:
    """Whether process ``pid`` is gone (or a zombie no one has reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_workers_end_when_the_plan_is_killed() -> None:
    """A plan killed with SIGKILL (the out-of-memory killer, kill -9) leaves no worker
    waiting for ever: each ends within a few seconds, its memory and any database
    connection with it."""
    child = subprocess.Popen(
        [sys.executable, "-c", POOL_THEN_SLEEP],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout is not None
    try:
        workers = [int(pid) for pid in child.stdout.readline().split()]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        deadline = time.monotonic() + 3 * PARENT_POLL + 10
        while not all(_ended(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in workers if not _ended(pid)]
    finally:
        with suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.stdout.close()

    assert len(workers) == 2
    assert left == []


def test_policies_travel_to_a_worker_intact() -> None:
    """A PolicySet pickles (its read-only mapping of names does not by itself) and comes
    back with the same policies, names and sources."""
    loaded = policies("s1")

    back = pickle.loads(pickle.dumps(loaded))  # noqa: S301 - our own bytes, just made

    assert [p.name for p in back] == ["gfs"]
    assert back.by_name["gfs"].sha256 == loaded.by_name["gfs"].sha256
    assert back.by_name["gfs"].policy == loaded.by_name["gfs"].policy


@pytest.fixture(scope="module")
def bench_sim() -> Iterator[Simulator]:
    """The bench fleet's shape at 60 clusters (18,000 snapshots), clock frozen at NOW."""
    config = SimulatorConfig(
        fleet=f"bench:{POOL_FROM + 10}",
        public_key=PUBLIC_KEY,
        private_key=KEY,
        now=NOW,
        frozen=True,
    )
    with Simulator(config) as sim:
        yield sim


def plan_files(sim: Simulator, folder: Path, workers: int) -> tuple[bytes, bytes]:
    """plan.json and decisions.jsonl.zst (as written) of a plan of the whole fleet made at
    NOW."""
    projects = [ProjectTargets(p["id"]) for p in sim.admin("fleet")["projects"]]
    with client_for(sim) as api:
        scope = Scope(policies(), projects, schedule="0 3 * * *", concurrency=4, workers=workers)
        made = make_plan(api, scope, plan_path=folder / "plan.json", now=NOW)
    return made.plan.path.read_bytes(), made.plan.decisions.read_bytes()


def test_a_plan_decided_on_two_workers_is_byte_identical(
    bench_sim: Simulator, tmp_path: Path
) -> None:
    """A plan of a fleet large enough for the pool writes plan.json and decisions.jsonl.zst
    byte for byte as a plan decided in one process, every snapshot in its decisions."""
    alone = plan_files(bench_sim, tmp_path / "one", workers=1)
    pooled = plan_files(bench_sim, tmp_path / "two", workers=2)

    assert pooled == alone
    snapshots = sum(
        c["snapshots"] for p in bench_sim.admin("fleet")["projects"] for c in p["clusters"]
    )
    assert len(decision_lines(tmp_path / "two" / "plan.json")) == snapshots > 15_000


def write(folder: Path, name: str, text: str) -> Path:
    """A file of a fake cgroup tree."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


AFFINITY = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "100000 100000\n"}, 1),
        ({"cpu.max": "50000 100000\n"}, 1),  # half a CPU: still one worker
        ({"cpu.max": "max 100000\n"}, AFFINITY),
        ({"cpu.max": "6400000 100000\n"}, AFFINITY),  # a limit above the CPUs there are
        ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, AFFINITY),
        ({"cpu.max": "garbage\n"}, AFFINITY),
        ({}, AFFINITY),
    ],
)
def test_available_cpus_honours_the_container_limit(
    tmp_path: Path, files: dict[str, str], expected: int
) -> None:
    """The CPUs a plan uses: those the process may run on, capped by the cgroup's CPU limit
    (v2 cpu.max or v1 cfs quota) rounded up; no limit or an unreadable one caps nothing."""
    for name, text in files.items():
        write(tmp_path, name, text)

    assert available_cpus(tmp_path) == expected


def test_api_workers_defaults_to_the_cpus_and_must_be_positive() -> None:
    """api.workers unset means the CPUs available; set, it is taken as it is; 0 is refused."""
    base = {"base_url": "https://om.example.com/api/public/v1.0"}

    unset = ApiSettings.model_validate(base).workers
    assert planning_workers(unset) == min(available_cpus(), 8)
    assert planning_workers(ApiSettings.model_validate({**base, "workers": 3}).workers) == 3
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        ApiSettings.model_validate({**base, "workers": 0})


def signal_mask(pid: int, kind: str) -> int:
    """The mask of signals process ``pid`` ignores ("SigIgn") or blocks ("SigBlk")."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{kind}:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no {kind} line for {pid}")


def ignoring_sigint(pid: int, seconds: float = 60) -> bool:
    """True once process ``pid`` ignores SIGINT; False if it still does not after
    ``seconds`` (a worker ignores it when its initializer has run)."""
    deadline = time.monotonic() + seconds
    while not signal_mask(pid, "SigIgn") & (1 << (signal.SIGINT - 1)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_workers_ignore_ctrl_c_from_their_start() -> None:
    """Every worker ignores SIGINT (Ctrl-C goes to the main process, which stops the pool)
    from the moment it starts, while this process keeps its own handler, unblocked."""
    sigint = 1 << (signal.SIGINT - 1)
    handler = signal.getsignal(signal.SIGINT)  # not always Python's: a shell may ignore it
    with Deciders(shared(), 2) as deciders:
        pids = list(deciders._pool._processes)  # type: ignore[union-attr]
        # Blocked from the start...
        blocked = [signal_mask(pid, "SigBlk") for pid in pids]
        # ...and ignored once the worker has run its initializer.
        ignored = [ignoring_sigint(pid) for pid in pids]

    assert len(pids) == 2
    assert all(mask & sigint for mask in blocked)
    assert ignored == [True, True]
    assert signal.getsignal(signal.SIGINT) is handler
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {signal.SIGINT}


def test_workers_that_cannot_start_leave_the_plan_to_one_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Where worker processes cannot start (no /dev/shm for their semaphores, a process
    limit), the clusters are decided in this process, with the same results and one
    warning that says why."""
    fleet = walks(8)
    with Deciders(shared(), 1) as alone:
        expected = list(alone.decide_all(fleet))

    def no_semaphores(*args: object, **kwargs: object) -> None:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr("retention.plan.workers.ProcessPoolExecutor", no_semaphores)
    with Deciders(shared(), 2) as deciders:
        got = list(deciders.decide_all(fleet))

    assert got == expected
    assert deciders.workers == 1
    assert [r.getMessage() for r in caplog.records] == [
        "cannot start planning workers ([Errno 38] Function not implemented): "
        "deciding in one process"
    ]


def fail_to_load() -> object:
    """Raises in the worker that unpickles it: a worker that cannot start."""
    raise RuntimeError("this worker cannot load its share of the plan")


class Unloadable:
    """Pickles here, cannot be unpickled in a worker."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (fail_to_load, ())


def test_workers_that_never_come_up_leave_the_plan_to_one_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Workers that die before their first answer (they cannot load: an embedding caller,
    a broken install) are no killed plan: the clusters in hand and the rest are decided
    in this process, equal to a one-process plan, with one warning."""
    fleet = walks(12)
    with Deciders(shared(), 1) as alone:
        expected = list(alone.decide_all(fleet))
    broken = Shared(policies(), {"elsewhere": [Unloadable()]}, {}, NOW, timedelta(days=1))  # type: ignore[list-item]

    with Deciders(broken, 2) as deciders:
        got = list(deciders.decide_all(fleet))

    assert got == expected
    assert deciders.workers == 1
    assert [r.getMessage() for r in caplog.records] == [
        "planning workers did not start: deciding in one process"
    ]


def test_an_error_inside_a_worker_is_the_error_one_process_raises() -> None:
    """A bug that raises while deciding a cluster raises the same exception from the pool
    as in one process (the CLI then reports it as an internal error)."""
    bad = Walk(
        Target("p1", "c0000", "rs-0000"),
        [SnapshotView("x", datetime(2026, 1, 1), True, False, None)],
    )

    with Deciders(shared(), 1) as alone, pytest.raises(TypeError) as here:
        list(alone.decide_all([bad]))
    with Deciders(shared(), 2) as pool, pytest.raises(TypeError) as there:
        list(pool.decide_all([bad]))

    assert str(there.value) == str(here.value)


def test_unread_alerts_hold_a_cluster_but_leave_its_restore_points_described() -> None:
    """A project whose alerts could not be read: its cluster carries the error and a walk
    hold on its destructive changes, as a failed walk would, but all its snapshots were
    walked, so its restore points and freshness are described (if approved, as an unheld
    cluster's; as planned, its held snapshots stay); a failed walk has neither."""
    walk = walks(1)[0]
    unread = Shared(policies(), {}, {"p1": "alerts unreadable: 403"}, NOW, timedelta(days=1))

    plan = unread.plan(walk.target, walk.snapshots, None)
    failed = shared().plan(walk.target, walk.snapshots, "page 2: 503")

    assert plan.decided.errors == ("alerts unreadable: 403",)
    assert [h.kind for h in plan.decided.holds] == ["walk"]
    assert plan.restorable is not None
    assert plan.restorable.freshness is not None
    unheld = shared().plan(walk.target, walk.snapshots, None).restorable
    assert unheld is not None
    assert plan.restorable.if_approved == unheld.ladder
    assert plan.restorable.freshness == unheld.freshness
    assert plan.restorable.today is not None
    assert plan.restorable.ladder.points > unheld.ladder.points
    assert failed.restorable is None
