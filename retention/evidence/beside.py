"""A large ledger's chain verified in a process of its own while the evidence is read and
written (a year of a fleet is two million lines to hash, as long as the rest takes).

A plain process and a pipe rather than a pool: the wait for its answer hears the
command's stop, a process that died (killed for its memory, say) is an error rather than
a wait for ever, and leaving the block ends the process, whatever ended the block, so a
stopped evidence does not wait for a verification nobody will read.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing import get_context
from multiprocessing.connection import Connection

from retention.config.ledgerplace import LedgerPlace
from retention.errors import LedgerError
from retention.evidence.gather import Verified, verified
from retention.ops.children import leave_stops_to, stop_signals_blocked
from retention.ops.stopping import Stop

# How often the wait looks at the stop; how long an ended child is given to exit.
_POLL = 0.2
# The process's name (tests find it by it).
NAME = "retention-verify"


@contextmanager
def verifying(place: LedgerPlace, stop: Stop) -> Iterator[Callable[[], Verified]]:
    """Start verifying the chain at ``place`` in another process; yield what waits for
    its answer (StopRequestedError on a stop, LedgerError when the process failed)."""
    context = get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_verify_into, args=(place, send, os.getpid()), name=NAME, daemon=True
    )
    try:
        # Started with the stop signals blocked, and ignoring them from its first line: a
        # Ctrl-C reaches the whole process group, and stopping is the command's to decide.
        with stop_signals_blocked():
            process.start()
    finally:
        send.close()  # the child's end: a child that dies leaves the pipe at its end

    def answer() -> Verified:
        while True:
            stop.check("the chain's verification")
            if receive.poll(_POLL):
                break
        try:
            found, value = receive.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            stop.check("the chain's verification")
            process.join(_POLL)
            raise LedgerError(
                "verifying the ledger's chain: its process ended without an answer "
                f"(exit {process.exitcode})"
            ) from None
        if not found:
            raise LedgerError(f"verifying the ledger's chain: {value}")
        result: Verified = value
        return result

    try:
        yield answer
    finally:
        # Its end of the pipe first: a child writing a large answer nobody reads is then
        # not held by a full pipe. It ignores SIGTERM: killed if it does not end by itself.
        receive.close()
        process.join(_POLL)
        if process.is_alive():
            process.kill()
            process.join()
        process.close()


def _verify_into(place: LedgerPlace, send: Connection, parent: int) -> None:
    """The child: the verification, or what went wrong in words (an exception of any kind
    may not survive pickling)."""
    leave_stops_to(parent)
    try:
        send.send((True, verified(place)))
    except Exception as exc:  # noqa: BLE001 - any failure is told to the parent in words
        send.send((False, str(exc) or type(exc).__name__))
    finally:
        send.close()
