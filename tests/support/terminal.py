"""A `retention` process whose stderr (and, when asked, stdout) is a real terminal: a
pseudo-terminal of 150 columns, read to the end, with what a person would read on it
(the escape sequences taken out) beside the raw bytes."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path

COLUMNS, ROWS = 150, 40
# CSI sequences (colours, cursor moves, erasing), OSC ones, and the bare ESC of others.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")


@dataclass(frozen=True)
class Ended:
    """A process that ran: its exit code, stdout (a pipe, unless it was the terminal too)
    and what its terminal received, raw and as text."""

    code: int
    out: str
    raw: str  # the bytes of the terminal, decoded

    @property
    def seen(self) -> str:
        """The terminal's bytes without their escape sequences."""
        return plain(self.raw)


def plain(text: str) -> str:
    """``text`` without terminal escape sequences."""
    return _ESCAPES.sub("", text)


def run_on_terminal(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdout_too: bool = False,
    term: str = "xterm-256color",
    timeout: float = 120,
) -> Ended:
    """`python -m retention ARGS` with stderr on a pseudo-terminal of type ``term``
    (``stdout_too``: stdout as well, as in a person's shell), stdin from /dev/null."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "retention", *args],
        cwd=cwd,
        env={**env, "TERM": term, "COLUMNS": str(COLUMNS), "LINES": str(ROWS)},
        stdin=subprocess.DEVNULL,
        stdout=follower if stdout_too else subprocess.PIPE,
        stderr=follower,
        text=False,
    )
    os.close(follower)
    received, out = bytearray(), bytearray()
    # stdout read on a thread of its own: a full pipe would stop the child, and the
    # terminal would never end.
    reader = threading.Thread(
        target=lambda: out.extend(proc.stdout.read() if proc.stdout is not None else b""),
        daemon=True,
    )
    reader.start()
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every holder of the terminal's other end closed it
                break
            if not chunk:
                break
            received += chunk
        code = proc.wait(timeout=timeout)
        reader.join(timeout=timeout)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    return Ended(code, bytes(out).decode(), received.decode(errors="replace"))


def run_on_pipes(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 120) -> Ended:
    """`python -m retention ARGS` with stdout and stderr on pipes (cron, a pod's log);
    ``raw`` is stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "retention", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Ended(done.returncode, done.stdout, done.stderr)
