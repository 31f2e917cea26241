"""A bounded, ordered window of work on threads: walk and apply both stream through one.

Results come back in the order of the inputs, and at most ``2 * workers`` items are in
flight or waiting, so memory holds a few clusters whatever the size of the fleet, and a
slow item holds back the stream instead of letting finished ones pile up.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered(work: Callable[[T], R], items: Iterable[T], *, workers: int, name: str) -> Iterator[R]:
    """``work(item)`` for each item on ``workers`` threads (named ``name``), in item order.

    ``items`` is consumed lazily, a window ahead of the results taken. An exception of
    ``work`` is raised where its result would have been yielded. When the stream ends
    early (an exception, a consumer that stops reading), the items not yet started are
    cancelled and only those already running are waited for: a stop must not wait for
    a whole window of clusters to be worked through.
    """
    workers = max(1, workers)
    window = 2 * workers
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    try:
        pending: deque[Future[R]] = deque()
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
