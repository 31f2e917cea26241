"""Runs a throw-away PostgreSQL for the tests and ends it when the tests' process ends, however
it ends: ``python pgguard.py FOLDER -- COMMAND...`` starts COMMAND (the postmaster) with its
output in FOLDER/postgres.log and reads its own stdin, a pipe from the process that started it.
At the end of that pipe (the tests closed it, or their process died, even by SIGKILL or
pytest-timeout's os._exit, which run no teardown) it stops the server the way
``pg_ctl stop -m immediate`` does, with SIGQUIT, and removes FOLDER.

A script of the standard library alone, started by path: it imports nothing of the package or
the tests, so the folder the tests run in does not matter.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

# SIGQUIT's immediate shutdown ends the postmaster and its backends in well under a second; a
# server that has not ended by then is killed.
STOP_WITHIN = 10.0
ENDED_ITSELF = 3


def main(argv: list[str]) -> int:
    """Run the server until stdin ends or the server does: 0 when it was stopped and FOLDER
    removed, ENDED_ITSELF when it ended first (FOLDER left, its log says why)."""
    folder, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write("usage: pgguard.py FOLDER -- COMMAND...\n")
        return 2
    # A Ctrl-C at the terminal ends the tests, whose teardown then closes the pipe; the guard
    # (in a session of its own, so it should not see it anyway) waits for that.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with (Path(folder) / "postgres.log").open("ab") as log:
        server = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=folder
        )
    ended = threading.Event()
    threading.Thread(target=_wait_for_eof, args=(ended,), daemon=True).start()
    while not ended.wait(0.2):
        if server.poll() is not None:
            return ENDED_ITSELF
    server.send_signal(signal.SIGQUIT)
    try:
        server.wait(STOP_WITHIN)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    shutil.rmtree(folder, ignore_errors=True)
    return 0


def _wait_for_eof(ended: threading.Event) -> None:
    """Read stdin to its end, then say so."""
    while sys.stdin.buffer.read(4096):
        pass
    ended.set()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
