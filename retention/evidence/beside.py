"""A large ledger's chain verified in a process of its own while the evidence is read and
written (a year of a fleet is two million lines to hash, as long as the rest takes).

A plain process and a pipe rather than a pool: the wait for its answer hears the
command's stop, a process that died (killed for its memory, say) is an error rather than
a wait for ever, and leaving the block ends the process, whatever ended the block, so a
stopped evidence does not wait for a verification nobody will read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing import get_context
from multiprocessing.connection import Connection

from retention.config.ledgerplace import LedgerPlace
from retention.errors import LedgerError
from retention.evidence.gather import Verified, verified
from retention.ops.stopping import Stop

# How often the wait looks at the stop and at the process.
_POLL = 0.2


@contextmanager
def verifying(place: LedgerPlace, stop: Stop) -> Iterator[Callable[[], Verified]]:
    """Start verifying the chain at ``place`` in another process; yield what waits for
    its answer (StopRequestedError on a stop, LedgerError when the process failed)."""
    context = get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_verify_into, args=(place, send), name="retention-verify", daemon=True
    )
    process.start()
    send.close()  # the child's end: a child that dies leaves the pipe at its end

    def answer() -> Verified:
        while not receive.poll(_POLL):
            stop.check("the chain's verification")
            if not process.is_alive() and not receive.poll():
                raise LedgerError(
                    f"verifying the ledger's chain: its process ended without an answer "
                    f"(exit {process.exitcode})"
                )
        try:
            found, value = receive.recv()
        except EOFError:
            raise LedgerError(
                "verifying the ledger's chain: its process ended without an answer"
            ) from None
        if not found:
            raise LedgerError(f"verifying the ledger's chain: {value}")
        result: Verified = value
        return result

    try:
        yield answer
    finally:
        if process.is_alive():
            process.terminate()
        process.join()
        receive.close()


def _verify_into(place: LedgerPlace, send: Connection) -> None:
    """The child: the verification, or what went wrong in words (an exception of any kind
    may not survive pickling)."""
    try:
        send.send((True, verified(place)))
    except Exception as exc:  # noqa: BLE001 - any failure is told to the parent in words
        send.send((False, str(exc) or type(exc).__name__))
    finally:
        send.close()
