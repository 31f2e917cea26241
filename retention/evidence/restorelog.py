"""A team's own record of restore tests (``retention evidence --restore-log FILE``): a CSV
with a header ``date,cluster,result`` and, if they like, ``snapshot,by,note``. retention
runs no restore test; it only carries the team's record into the evidence, checked."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from retention.errors import UsageError

REQUIRED = ("date", "cluster", "result")
OPTIONAL = ("snapshot", "by", "note")


@dataclass(frozen=True)
class RestoreTest:
    """One restore test the team recorded."""

    day: date
    cluster: str
    result: str
    snapshot: str | None = None
    by: str | None = None
    note: str | None = None

    def document(self) -> dict[str, Any]:
        """As the evidence's JSON has it."""
        return {
            "date": self.day.isoformat(),
            "cluster": self.cluster,
            "result": self.result,
            "snapshotId": self.snapshot,
            "by": self.by,
            "note": self.note,
        }


def read_restore_log(path: Path) -> list[RestoreTest]:
    """The tests in ``path``; UsageError naming the file, line and column of a problem."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's CSV may start with a BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--restore-log {path}: cannot read it ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise UsageError(
            f"--restore-log {path}: line 1: the header lacks {', '.join(missing)} "
            f"(expected {','.join(REQUIRED + OPTIONAL)})"
        )
    unknown = [h for h in header if h not in REQUIRED + OPTIONAL]
    if unknown:
        raise UsageError(f"--restore-log {path}: line 1: unknown columns {', '.join(unknown)}")
    found = []
    for row in reader:
        line = reader.line_num
        values = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
        try:
            day = date.fromisoformat(values["date"])
        except ValueError:
            raise UsageError(
                f"--restore-log {path}: line {line}: date {values['date']!r} is not YYYY-MM-DD"
            ) from None
        for column in ("cluster", "result"):
            if not values.get(column):
                raise UsageError(f"--restore-log {path}: line {line}: {column} is empty")
        found.append(
            RestoreTest(
                day,
                values["cluster"],
                values["result"],
                values.get("snapshot") or None,
                values.get("by") or None,
                values.get("note") or None,
            )
        )
    return found
