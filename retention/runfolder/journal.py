"""results.jsonl: writing a journal line by line, and reading it back through its model.

An apply's journal and an undo's have a model each (retention.core.runfiles). A line that
is not one of its model (cut short by a kill, or edited) reads as None: the readers count
it as unreadable and go on, since the lines after it still say what was sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TypeVar

from pydantic import TypeAdapter, ValidationError

from retention.core.runfiles import (
    APPLY_INTENT,
    APPLY_LINE,
    APPLY_OUTCOME,
    UNDO_INTENT,
    UNDO_ITEM_LINE,
    UNDO_LINE,
    ApplyIntent,
    ApplyOutcome,
    UndoIntent,
    UndoItemLine,
)
from retention.runfolder.planwrite import encode_line

IntentT = TypeVar("IntentT")
AfterT = TypeVar("AfterT")
_INTENT = b'"intent":true'


class JournalFile:
    """An append-only journal, each line handed to the operating system at once.

    Each line is one write to an unbuffered file, so it is with the operating system when
    write() returns, whatever ends the process next (os._exit included). Not fsynced: the
    rarer machine crash that loses a line is caught by compare-and-swap on the next apply;
    an fsync per PATCH cost ~40 ms each on an ordinary disk. Lines may come from any thread.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._out: IO[bytes] = path.open("ab", buffering=0)

    def append(self, line: ApplyIntent | ApplyOutcome | UndoIntent | UndoItemLine) -> None:
        """Append one line, from any thread."""
        rest = memoryview(encode_line(line))
        with self._lock:
            while rest:  # an unbuffered write may take part of it (a full disk, a signal)
                rest = rest[self._out.write(rest) or 0 :]

    def close(self) -> None:
        """Close the file."""
        self._out.close()


def _lines(
    path: Path,
    intent: TypeAdapter[IntentT],
    after: TypeAdapter[AfterT],
    either: TypeAdapter[IntentT | AfterT],
) -> Iterator[IntentT | AfterT | None]:
    # A line is validated as the shape its bytes say (encode_line writes "intent":true
    # without a space): that halves the cost of the tagged union, whose tag is taken from
    # the line parsed to Python first. A line spelled otherwise gets the union.
    with path.open("rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            likely = intent if _INTENT in line else after
            try:
                yield likely.validate_json(line)
                continue
            except ValidationError:
                pass
            try:
                yield either.validate_json(line)
            except ValidationError:
                yield None


def apply_lines(path: Path) -> Iterator[ApplyIntent | ApplyOutcome | None]:
    """The lines of an apply's journal, validated; None for a line that is not one."""
    return _lines(path, APPLY_INTENT, APPLY_OUTCOME, APPLY_LINE)


def undo_lines(path: Path) -> Iterator[UndoIntent | UndoItemLine | None]:
    """The lines of an undo's journal, validated; None for a line that is not one."""
    return _lines(path, UNDO_INTENT, UNDO_ITEM_LINE, UNDO_LINE)


def read_apply_journal(path: Path) -> tuple[list[ApplyIntent | ApplyOutcome], int]:
    """The lines of an apply's journal (none when there is no journal: a dry run), and how
    many could not be read (a killed run can leave its last line cut short)."""
    found = list(apply_lines(path)) if path.is_file() else []
    lines = [line for line in found if line is not None]
    return lines, len(found) - len(lines)
