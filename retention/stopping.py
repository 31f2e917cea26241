"""Stopping a command on SIGINT or SIGTERM: one flag, checked before every request.

A person who presses Ctrl-C during an apply has just seen something wrong, and Kubernetes
sends SIGTERM at ``activeDeadlineSeconds``, on eviction and on ``kubectl delete job``. Both
set the command's ``Stop``; nothing raises in the middle of a request. The client checks it
before each request (and while it waits to retry), the executor before each PATCH, the
walk before each page. A PATCH already on the wire finishes, with its own timeout, and is
journalled; what was not sent is journalled ``not-sent``; the reports, the metrics and the
failure notice are written; the command exits 130 (SIGINT) or 143 (SIGTERM). A second
signal exits at once: the journal is written ahead of every PATCH, so even then the run
folder says what may have been sent.

Only the command line installs the handlers (``on_signals``); the rest of the package sees
a ``Stop`` it is handed, and tests set one by hand.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from retention.errors import StopRequestedError

log = logging.getLogger("retention.stop")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stop:
    """The stop flag of one command: which signal asked for it, and a wait that ends early."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._local = threading.local()
        self.signum: int | None = None

    def request(self, signum: int = signal.SIGINT) -> None:
        """Ask everything to stop (the first signal's number is kept)."""
        if self.signum is None:
            self.signum = signum
        self._event.set()

    @property
    def requested(self) -> bool:
        """True once a stop was asked for."""
        return self._event.is_set()

    @property
    def name(self) -> str:
        """The signal's name, ``SIGINT`` or ``SIGTERM``."""
        return signal.Signals(self.signum or signal.SIGINT).name

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as shells report a process the signal ended."""
        return 128 + (self.signum or signal.SIGINT)

    @property
    def shielded(self) -> bool:
        """True inside ``shield()`` on this thread."""
        return bool(getattr(self._local, "shielded", False))

    def check(self, before: str) -> None:
        """Raise StopRequestedError when a stop was asked for (outside ``shield()``); ``before``
        says what would have run."""
        if self._event.is_set() and not self.shielded:
            raise StopRequestedError(self.name, self.exit_code, before)

    @contextmanager
    def shield(self) -> Iterator[None]:
        """Requests on this thread go on after a stop for the block: for the second PATCH
        of a change made of two, which would otherwise be left half done."""
        self._local.shielded = True
        try:
            yield
        finally:
            self._local.shielded = False

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``, or less if a stop comes; True when it came."""
        return self._event.wait(seconds)

    def error(self, before: str, *, in_doubt: bool = False) -> StopRequestedError:
        """The StopRequestedError error for this stop (``in_doubt``: a try went out already)."""
        return StopRequestedError(self.name, self.exit_code, before, in_doubt=in_doubt)


def not_stopping() -> Stop:
    """A Stop nobody will request: for library callers that handle no signals."""
    return Stop()


@contextmanager
def on_signals(stop: Stop, *, exit_now: Callable[[int], object] = os._exit) -> Iterator[Stop]:
    """SIGINT and SIGTERM request ``stop`` for the block; a second one exits at once.

    A SIGINT the process was started with ignored (a job started in the background by a
    non-interactive shell, or under nohup) stays ignored, as Python itself leaves it. The
    handlers in place before are put back when the block ends. Only the main thread may
    install handlers: elsewhere (a test calling the command line from a thread) the block
    runs without them.
    """
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    before: dict[int, object] = {}

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.requested:
            # Written straight to the file descriptor: the logging machinery may be in the
            # middle of a line on this very thread.
            os.write(2, f"\n{name} again: exiting at once (exit {stop.exit_code})\n".encode())
            exit_now(stop.exit_code)
            return
        stop.request(signum)
        key = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM or Ctrl-C"
        log.warning(
            "%s: stopping: no new request starts; requests on the wire finish and are "
            "journalled (%s again exits at once)",
            name,
            key,
            extra={
                "text": f"\n{name}: stopping: no new request starts; what is on the wire "
                f"finishes and is journalled ({key} again exits at once)",
                "fields": {"event": "stop-requested", "signal": name},
            },
        )

    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if signum == signal.SIGINT and current is signal.SIG_IGN:
            continue
        before[signum] = current
        signal.signal(signum, handle)
    try:
        yield stop
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)  # type: ignore[arg-type] # what getsignal gave
        sys.stderr.flush()
