"""Tests of retention.ops.lock: shards of one count run side by side, never beside a whole-fleet
run or an apply, and never beside shards of another count, even when both start at once.
Other holders are real processes or, within this one, other open files (flock locks belong
to the open file, so two opens in one process conflict as two processes would)."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from retention import cli
from retention.errors import EXIT_LOCKED, LockHeldError
from retention.ops import lock
from retention.ops.lock import LOCK_NAME, SETUP_NAME, run_lock, shard_lock_name
from retention.ops.sharding import Shard
from tests.support.client import fixed_clock
from tests.support.wire_server import closed_port

ONE, TWO = Shard(1, 4), Shard(2, 4)
SINCE = r"since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"
# Takes the locks named on its command line (INDEX/COUNT, or "fleet"), says "held", and
# keeps them until its standard input closes.
HOLDER = """
import sys
from contextlib import ExitStack
from pathlib import Path
from retention.ops.lock import run_lock
from retention.ops.sharding import Shard
from tests.support.client import fixed_clock

with ExitStack() as stack:
    for spec in sys.argv[2:]:
        shard = None if spec == "fleet" else Shard.parse(spec)
        stack.enter_context(run_lock(Path(sys.argv[1]), shard, clock=fixed_clock))
    print("held", flush=True)
    sys.stdin.read()
"""


@contextmanager
def holder(folder: Path, *specs: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the locks of ``specs`` in ``folder`` until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), *specs],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stdin is not None
        try:
            assert process.stdout.readline() == "held\n"
            yield process
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()  # not left holding locks for the tests after this one
                raise


def test_shards_of_one_fleet_hold_their_locks_side_by_side(tmp_path: Path) -> None:
    """Two different shards run at once, each signing its own lock file."""
    with (
        run_lock(tmp_path, ONE, clock=fixed_clock) as first,
        run_lock(tmp_path, TWO, clock=fixed_clock) as second,
    ):
        assert (first.name, second.name) == (shard_lock_name(1, 4), shard_lock_name(2, 4))
        assert first.read_text().startswith(f"pid {os.getpid()} since ")


def test_the_same_shard_twice_is_refused(tmp_path: Path) -> None:
    """A second run of one shard gets LockHeldError naming the shard's file and holder."""
    with run_lock(tmp_path, ONE, clock=fixed_clock), pytest.raises(LockHeldError) as caught:
        run_lock(tmp_path, ONE, clock=fixed_clock).__enter__()

    assert f"holds {tmp_path / shard_lock_name(1, 4)} (pid {os.getpid()} since " in str(
        caught.value
    )
    assert caught.value.exit_code == EXIT_LOCKED


def test_a_whole_fleet_run_is_refused_while_a_shard_runs(tmp_path: Path) -> None:
    """An unsharded run or an apply cannot start beside a shard, and is told which shards
    hold the fleet (not the stale text a past whole-fleet run left in the file)."""
    with run_lock(tmp_path, clock=fixed_clock):
        pass  # leaves its signature in the fleet's file
    with run_lock(tmp_path, TWO, clock=fixed_clock), pytest.raises(LockHeldError) as caught:
        run_lock(tmp_path, clock=fixed_clock).__enter__()

    message = str(caught.value)
    assert f"holds {tmp_path / LOCK_NAME} (shard 2/4, pid {os.getpid()} since " in message
    assert message.count("pid ") == 1


def test_a_shard_is_refused_while_a_whole_fleet_run_holds_the_lock(tmp_path: Path) -> None:
    """A shard cannot start beside an unsharded run or an apply, and takes no shard lock."""
    with (
        run_lock(tmp_path, clock=fixed_clock),
        pytest.raises(LockHeldError, match="another retention run"),
    ):
        run_lock(tmp_path, ONE, clock=fixed_clock).__enter__()

    with run_lock(tmp_path, ONE, clock=fixed_clock):  # the refused shard left nothing held
        pass


def test_every_lock_is_released_when_its_holder_lets_go(tmp_path: Path) -> None:
    """After the shards finish, a whole-fleet run takes the lock, and after it, a shard."""
    with run_lock(tmp_path, ONE, clock=fixed_clock), run_lock(tmp_path, TWO, clock=fixed_clock):
        pass
    with run_lock(tmp_path, clock=fixed_clock) as held:
        assert held == tmp_path / LOCK_NAME
    with run_lock(tmp_path, ONE, clock=fixed_clock):
        pass


def test_a_shard_of_another_count_is_refused_naming_the_running_shards(tmp_path: Path) -> None:
    """While shards 0/4 and 3/4 run in another process, shard 1/8 exits 4 with a message
    naming each running shard (its index and count, pid and start) and what to do; it holds
    nothing afterwards, and shards of the running count can still join."""
    with holder(tmp_path, "0/4", "3/4") as other, pytest.raises(LockHeldError) as caught:
        run_lock(tmp_path, Shard(1, 8), clock=fixed_clock).__enter__()

    message = str(caught.value)
    assert caught.value.exit_code == EXIT_LOCKED
    assert re.fullmatch(
        rf"shards of another --shard-count hold the fleet in {re.escape(str(tmp_path))} "
        rf"\(shard 0/4, pid {other.pid} {SINCE}; shard 3/4, pid {other.pid} {SINCE}\), and "
        r"this run is shard 1/8: shards of different counts would plan and change some "
        r"clusters twice\. Let the running shards finish \(the lock is released when that "
        r"process ends\), or stop them, then start every shard of the fleet with the same "
        r"--shard-count \(running now: 4\)",
        message,
    ), message
    with run_lock(
        tmp_path, Shard(1, 8), clock=fixed_clock
    ) as mine:  # the other process has ended: free again
        assert mine.read_text().startswith(f"pid {os.getpid()} since ")


def test_shards_of_the_running_count_start_beside_it(tmp_path: Path) -> None:
    """Another process's shard 0/4 lets this one's shard 2/4 start; only other counts are
    refused, and a shard file of another count that nobody holds (a past run's) is no bar."""
    with run_lock(tmp_path, Shard(0, 8), clock=fixed_clock):
        pass  # leaves .retention-shard-0-of-8.lock behind, unheld
    with holder(tmp_path, "0/4"), run_lock(tmp_path, TWO, clock=fixed_clock) as mine:
        assert mine.name == shard_lock_name(2, 4)


def test_a_whole_fleet_run_in_another_process_keeps_out_shards_of_any_count(
    tmp_path: Path,
) -> None:
    """While another process runs the whole fleet, a shard of any count exits 4."""
    with holder(tmp_path, "fleet") as other:
        for shard in (Shard(0, 4), Shard(0, 8)):
            with pytest.raises(LockHeldError, match=f"pid {other.pid} since"):
                run_lock(tmp_path, shard, clock=fixed_clock).__enter__()


def test_two_counts_starting_at_the_same_instant_do_not_both_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shards 0/4 and 0/8 start together, each made to pause after it looked for shards of
    other counts until the other has looked too (for at most two seconds): the set-up lock
    lets only one look at a time, so the second sees the first's lock and exactly one runs.
    Without it both would look, find nothing, and both run."""
    looked = threading.Barrier(2, timeout=2)
    look = lock._refuse_other_counts

    def look_then_wait(folder: Path, shard: Shard) -> None:
        look(folder, shard)
        # Broken when the other could not look meanwhile: what the set-up lock is for.
        with suppress(threading.BrokenBarrierError):
            looked.wait()

    monkeypatch.setattr(lock, "_refuse_other_counts", look_then_wait)
    outcomes: dict[int, str] = {}
    done = threading.Event()

    def start(shard: Shard) -> None:
        try:
            with run_lock(tmp_path, shard, clock=fixed_clock):
                outcomes[shard.count] = "running"
                done.wait(timeout=30)
        except LockHeldError as exc:
            outcomes[shard.count] = str(exc)

    threads = [threading.Thread(target=start, args=(Shard(0, n),)) for n in (4, 8)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(outcomes) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    done.set()
    for thread in threads:
        thread.join(timeout=30)

    [winner] = [count for count, text in outcomes.items() if text == "running"]
    [(refused, message)] = [(n, text) for n, text in outcomes.items() if text != "running"]
    assert message.startswith("shards of another --shard-count hold the fleet")
    assert f"(shard 0/{winner}, pid {os.getpid()} since " in message
    assert f"this run is shard 0/{refused}:" in message


def test_a_run_waits_for_the_set_up_lock_then_gives_up_naming_its_holder(
    tmp_path: Path,
) -> None:
    """Locks are taken under a short exclusive set-up lock: a run waits while another
    process holds it, and past the wait exits 4 naming that process."""
    with holder(tmp_path, "0/4") as other:
        pass  # signs the set-up file with its pid on the way
    with (tmp_path / SETUP_NAME).open("a+") as setup:
        fcntl.flock(setup.fileno(), fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(LockHeldError) as caught:
            run_lock(tmp_path, ONE, setup_wait=0.3, clock=fixed_clock).__enter__()
        waited = time.monotonic() - started

    assert waited >= 0.3
    assert str(caught.value).startswith(
        f"another retention run has held {tmp_path / SETUP_NAME} for more than 0.3 s while "
        f"taking its locks (pid {other.pid} since "
    )
    with run_lock(tmp_path, ONE, clock=fixed_clock):  # released: the next run gets on at once
        pass


def test_run_with_a_mismatched_shard_count_exits_4_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`retention run --shard 1/8` beside a running shard 0/4 exits 4 with the message on
    stderr; the API's port is closed, so a request would have ended in exit 5 instead."""
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", "p")
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "k")
    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_NOTIFY_URLS"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text("name: p\nkeep: {last: 3}\n")
    config = tmp_path / "retention.yaml"
    config.write_text(
        f"api:\n  base_url: http://127.0.0.1:{closed_port()}/api/public/v1.0\n"
        'targets:\n  - project: "p"\nreports:\n  dir: reports\n'
    )

    with holder(tmp_path / "reports", "0/4") as other:
        code = cli.main(["--config", str(config), "run", "--shard", "1/8"])

    err = capsys.readouterr().err
    assert code == EXIT_LOCKED
    assert f"(shard 0/4, pid {other.pid} since " in err
    assert "this run is shard 1/8" in err
    assert "Traceback" not in err
