"""Tests of retention.ops.window: ordered results, a bounded look-ahead, errors in place."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Generator, Iterator

import pytest

from retention.ops.window import ordered


def test_results_come_back_in_the_order_of_the_items_however_long_each_takes() -> None:
    """Items that finish out of order are still yielded in input order."""
    rng = random.Random(7)  # one generator: forty different delays, not one forty times
    delays = [rng.uniform(0, 0.01) for _ in range(40)]

    def work(n: int) -> int:
        time.sleep(delays[n])
        return n * n

    assert list(ordered(work, range(40), workers=4, name="t")) == [n * n for n in range(40)]


def test_the_items_are_read_at_most_a_window_ahead_of_the_results_taken() -> None:
    """With 3 workers no more than 6 items are taken before the first result is used, so a
    stream of a million clusters is never read into memory."""
    taken: list[int] = []

    def items() -> Iterator[int]:
        for n in range(1_000_000):
            taken.append(n)
            yield n

    results = ordered(lambda n: n, items(), workers=3, name="t")
    assert isinstance(results, Generator)
    first = next(results)
    assert first == 0
    assert len(taken) == 6
    results.close()


def test_work_runs_on_as_many_threads_as_asked_and_no_more() -> None:
    """At most ``workers`` items are worked on at once, and that many do run together."""
    running, most = 0, 0
    guard = threading.Lock()

    def work(n: int) -> int:
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
        time.sleep(0.005)
        with guard:
            running -= 1
        return n

    assert list(ordered(work, range(30), workers=3, name="t")) == list(range(30))
    assert most == 3


def test_an_error_is_raised_where_its_result_would_have_been() -> None:
    """The results before a failed item are yielded; its error comes in its place."""

    def work(n: int) -> int:
        if n == 5:
            raise ValueError("item 5")
        return n

    seen: list[int] = []
    with pytest.raises(ValueError, match="item 5"):
        seen.extend(ordered(work, range(10), workers=2, name="t"))
    assert seen == [0, 1, 2, 3, 4]
