"""Tests of retention.lock: shards run side by side, never beside a whole-fleet run or apply."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retention.errors import LockHeldError
from retention.lock import LOCK_NAME, run_lock, shard_lock_name

ONE, TWO = shard_lock_name(1, 4), shard_lock_name(2, 4)


def test_shards_of_one_fleet_hold_their_locks_side_by_side(tmp_path: Path) -> None:
    """Two different shards run at once, each signing its own lock file."""
    with run_lock(tmp_path, ONE) as first, run_lock(tmp_path, TWO) as second:
        assert (first.name, second.name) == (ONE, TWO)
        assert first.read_text().startswith(f"pid {os.getpid()} since ")


def test_the_same_shard_twice_is_refused(tmp_path: Path) -> None:
    """A second run of one shard gets LockHeldError naming the shard's file and holder."""
    with run_lock(tmp_path, ONE), pytest.raises(LockHeldError) as caught:
        run_lock(tmp_path, ONE).__enter__()

    assert f"holds {tmp_path / ONE} (pid {os.getpid()} since " in str(caught.value)
    assert caught.value.exit_code == 4


def test_a_whole_fleet_run_is_refused_while_a_shard_runs(tmp_path: Path) -> None:
    """An unsharded run or an apply cannot start beside a shard, and is told which shards
    hold the fleet (not the stale text a past whole-fleet run left in the file)."""
    with run_lock(tmp_path):
        pass  # leaves its signature in the fleet's file
    with run_lock(tmp_path, TWO), pytest.raises(LockHeldError) as caught:
        run_lock(tmp_path).__enter__()

    message = str(caught.value)
    assert f"holds {tmp_path / LOCK_NAME} (shards 2-of-4: pid {os.getpid()} since " in message
    assert message.count("pid ") == 1


def test_a_shard_is_refused_while_a_whole_fleet_run_holds_the_lock(tmp_path: Path) -> None:
    """A shard cannot start beside an unsharded run or an apply, and takes no shard lock."""
    with run_lock(tmp_path), pytest.raises(LockHeldError, match="another retention run"):
        run_lock(tmp_path, ONE).__enter__()

    with run_lock(tmp_path, ONE):  # the refused shard left nothing held
        pass


def test_every_lock_is_released_when_its_holder_lets_go(tmp_path: Path) -> None:
    """After the shards finish, a whole-fleet run takes the lock, and after it, a shard."""
    with run_lock(tmp_path, ONE), run_lock(tmp_path, TWO):
        pass
    with run_lock(tmp_path) as held:
        assert held == tmp_path / LOCK_NAME
    with run_lock(tmp_path, ONE):
        pass
