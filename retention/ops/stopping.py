"""Stopping a command on SIGINT or SIGTERM: one flag, checked before every request.

A person who presses Ctrl-C during an apply has just seen something wrong, and Kubernetes
sends SIGTERM at ``activeDeadlineSeconds``, on eviction and on ``kubectl delete job``. Both
set the command's ``Stop``; nothing raises in the middle of a request. The client checks it
before each request (and while it waits to retry or for the rate limit), the executor
before each PATCH, the walk before each page. A PATCH already on the wire finishes, with
its own timeout, and is journalled; what was not sent is journalled ``not-sent``; the
reports, the metrics and the failure notice are written; the command exits 130 (SIGINT)
or 143 (SIGTERM). A Ctrl-C while stopping exits at once: the journal is written ahead of
every PATCH, so even then the run folder says what may have been sent. A repeated SIGTERM
changes nothing (supervisors repeat it; the kubelet's SIGKILL is the escalation).

The handler itself only records the signal: a Python signal handler runs on the main
thread between two bytecodes, where taking a lock (an Event's, the logging's) can deadlock
with the very code it interrupted. A watcher thread, woken through a pipe, sets the event
that waits end on and says what is happening.

Only the command line installs the handlers (``on_signals``); the rest of the package sees
a ``Stop`` it is handed, and tests set one by hand.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from retention.errors import SIGNAL_EXITS, StopRequestedError

log = logging.getLogger("retention.stop")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stop:
    """The stop flag of one command: which signal asked for it, and a wait that ends early."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._local = threading.local()
        self.signum: int | None = None

    def request(self, signum: int = signal.SIGINT) -> None:
        """Ask everything to stop (the first signal's number is kept). Not from a signal
        handler: it takes the event's lock (``on_signals`` takes care of that)."""
        self.note(signum)
        self._event.set()

    def note(self, signum: int) -> None:
        """Record the stop without waking the waits: one assignment, safe in a handler."""
        if self.signum is None:
            self.signum = signum

    @property
    def requested(self) -> bool:
        """True once a stop was asked for."""
        return self.signum is not None

    @property
    def name(self) -> str:
        """The signal's name, ``SIGINT`` or ``SIGTERM``."""
        return signal.Signals(self.signum or signal.SIGINT).name

    @property
    def exit_code(self) -> int:
        """130 for SIGINT, 143 for SIGTERM: 128 + the signal's number, as shells say it."""
        return SIGNAL_EXITS[self.name]

    @property
    def shielded(self) -> bool:
        """True inside ``shield()`` on this thread."""
        return bool(getattr(self._local, "shielded", False))

    def check(self, before: str) -> None:
        """Raise StopRequestedError when a stop was asked for (outside ``shield()``);
        ``before`` says what would have run."""
        if self.requested and not self.shielded:
            raise self.error(before)

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
        return self._event.wait(seconds) or self.requested

    def error(self, before: str, *, in_doubt: bool = False) -> StopRequestedError:
        """The StopRequestedError for this stop (``in_doubt``: a try went out already)."""
        return StopRequestedError(self.name, before, in_doubt=in_doubt)


@contextmanager
def on_signals(stop: Stop, *, exit_now: Callable[[int], object] = os._exit) -> Iterator[Stop]:
    """SIGINT and SIGTERM request ``stop`` for the block; a Ctrl-C while stopping exits at
    once through ``exit_now``.

    A SIGINT the process was started with ignored (a job started in the background by a
    non-interactive shell, or under nohup) stays ignored, as Python itself leaves it. The
    handlers in place before are put back when the block ends. Only the main thread may
    install handlers: elsewhere (a test calling the command line from a thread) the block
    runs without them.
    """
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    wake_read, wake_write = os.pipe()
    watcher = threading.Thread(
        target=_watch, args=(stop, wake_read), name="stop-watcher", daemon=True
    )
    watcher.start()
    before = _install(_handler(stop, wake_write, exit_now))
    try:
        yield stop
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
        with contextlib.suppress(OSError):
            os.write(wake_write, b"\0")
        watcher.join(timeout=5)
        os.close(wake_read)
        os.close(wake_write)


def _handler(
    stop: Stop, wake_write: int, exit_now: Callable[[int], object]
) -> Callable[[int, FrameType | None], None]:
    """The signal handler: it notes the first signal and wakes the watcher through the
    pipe; a Ctrl-C while stopping exits at once."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        if stop.requested:
            if signum == signal.SIGINT:
                # Written straight to the file descriptor: no lock, no buffer.
                os.write(2, b"\nCtrl-C while stopping: exiting at once (exit 130)\n")
                exit_now(SIGNAL_EXITS["SIGINT"])
            return
        stop.note(signum)
        os.write(wake_write, bytes([signum]))

    return handle


def _watch(stop: Stop, wake_read: int) -> None:
    """The watcher thread: woken by the handler, it requests the stop (which takes locks a
    handler must not) and says so; a zero byte means the block ended without a signal."""
    woke = os.read(wake_read, 1)
    if not woke or woke == b"\0":
        return
    stop.request(woke[0])
    name = stop.name
    again = "Ctrl-C" if stop.signum == signal.SIGINT else "Ctrl-C (SIGINT)"
    text = (
        f"\n{name}: stopping: no new request starts; what is on the wire finishes and "
        f"is journalled ({again} again exits at once)"
    )
    log.warning(
        "%s: stopping: no new request starts; requests on the wire finish and are journalled",
        name,
        extra={"text": text, "fields": {"event": "stop-requested", "signal": name}},
    )


def _install(
    handle: Callable[[int, FrameType | None], None],
) -> dict[int, signal.Handlers | Callable[..., object] | int]:
    """Install ``handle`` for SIGINT and SIGTERM (a SIGINT ignored from the start stays
    ignored); the handlers it replaced, to put back."""
    before: dict[int, signal.Handlers | Callable[..., object] | int] = {}
    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if signum == signal.SIGINT and current is signal.SIG_IGN:
            continue
        # None: a handler not installed from Python; the default is the closest to it.
        before[signum] = signal.SIG_DFL if current is None else current
        signal.signal(signum, handle)
    return before


def early_stop(signum: int, _frame: FrameType | None) -> None:
    """The SIGTERM handler from the first instruction (retention.entry) until a command
    installs its own: as PID 1 of a container a process ignores a SIGTERM it has no handler
    for, and loading the command line takes a second on a small pod. No request has been
    made yet, so the process ends at once, 143."""
    os.write(2, f"{signal.Signals(signum).name}: stopped before the command began\n".encode())
    raise SystemExit(SIGNAL_EXITS["SIGTERM"])
