"""A run folder, ``reports/<UTC time>-<run id>/``, and the names of its files: the one place
they are spelled (docs/plan-file.md, "What a run folder holds").

A run or an apply writes plan.json, decisions.jsonl.zst, results.jsonl and the reports; an undo
writes undo.json, results.jsonl (its own journal) and the reports; a command a signal
stopped also writes interrupted.json. The reports folder's locks are not part of any run
folder (retention.ops.lock names them).
"""

from __future__ import annotations

import re
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from retention.core.runfiles import (
    INTERRUPTED_DOCUMENT,
    INTERRUPTED_FORMAT,
    UNDO_DOCUMENT,
    InterruptedDocument,
    Mode,
    UndoDocument,
)
from retention.core.timestamps import format_timestamp
from retention.errors import SIGNAL_EXITS, PlanFileError
from retention.runfolder.planwrite import encode_line

PLAN = "plan.json"
# A plan's decisions, one zstd frame of JSON lines per cluster.
DECISIONS = "decisions.jsonl.zst"
RESULTS = "results.jsonl"
UNDO = "undo.json"
INTERRUPTED = "interrupted.json"
# The held clusters an apply may let through, a line each (runfolder.approvelist).
APPROVE = "approve.txt"
# The reports by format (reports.formats).
REPORTS = {"html": "report.html", "markdown": "report.md"}
# A file is written under this suffix and renamed when whole, so a reader never meets half.
PARTIAL = ".partial"
# A run folder's name: its UTC start time, then a run id of 8 hex digits.
_TIME = "%Y%m%dT%H%M%SZ"
_NAME = re.compile(r"(\d{8}T\d{6}Z)-[0-9a-f]{8}")


def made_at(name: str) -> datetime | None:
    """The UTC time in a run folder's name, or None when the name is not a run folder's."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    try:
        return datetime.strptime(match.group(1), _TIME).replace(tzinfo=UTC)
    except ValueError:
        return None


def partial_path(path: Path) -> Path:
    """Where ``path`` is written before it is whole."""
    return path.with_name(path.name + PARTIAL)


def decisions_path(plan_path: Path) -> Path:
    """Where a plan's decisions are: decisions.jsonl.zst beside plan.json, and
    NAME.decisions.jsonl.zst beside any other NAME.json, so two plans in one folder keep
    their own."""
    return _beside(plan_path, DECISIONS)


def approve_list_path(plan_path: Path) -> Path:
    """Where a plan's list of approvable clusters is: approve.txt beside plan.json, and
    NAME.approve.txt beside any other NAME.json (as decisions_path)."""
    return _beside(plan_path, APPROVE)


def plan_report_path(plan_path: Path, output: str) -> Path:
    """Where a plan's report of format ``output`` ("html" or "markdown") is: report.html
    beside plan.json (its run folder's), NAME.report.html beside any other NAME.json."""
    return _beside(plan_path, REPORTS[output])


def _beside(plan_path: Path, name: str) -> Path:
    """A file of the plan at ``plan_path``: ``name`` beside plan.json, NAME.``name`` beside
    any other NAME.json."""
    prefix = "" if plan_path.name == PLAN else plan_path.stem + "."
    return plan_path.with_name(prefix + name)


@dataclass(frozen=True)
class RunFolder:
    """A run folder: where each of its files is, and undo.json and interrupted.json read and
    written through their models (retention.core.runfiles). Nothing is touched until asked."""

    path: Path

    @classmethod
    def new(cls, reports: Path, now: datetime) -> RunFolder:
        """A fresh run folder under ``reports``, ``<UTC time>-<run id>`` (not yet made)."""
        return cls(reports / f"{now.strftime(_TIME)}-{secrets.token_hex(4)}")

    @property
    def run_id(self) -> str:
        """The run id: the last part of the folder's name."""
        return self.path.name.rpartition("-")[2]

    @property
    def plan(self) -> Path:
        """plan.json."""
        return self.path / PLAN

    @property
    def decisions(self) -> Path:
        """decisions.jsonl.zst, the plan's decisions."""
        return decisions_path(self.plan)

    @property
    def results(self) -> Path:
        """results.jsonl: the journal of an apply, or of an undo in an undo's folder."""
        return self.path / RESULTS

    @property
    def undo(self) -> Path:
        """undo.json, in the folder of an undo."""
        return self.path / UNDO

    @property
    def interrupted(self) -> Path:
        """interrupted.json, in the folder of a command a signal stopped."""
        return self.path / INTERRUPTED

    def report(self, output: str) -> Path:
        """The report of format ``output`` ("html" or "markdown")."""
        return self.path / REPORTS[output]

    def write_undo(self, document: UndoDocument) -> Path:
        """Write undo.json, under its partial name first; return its path."""
        partial = partial_path(self.undo)
        partial.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
        partial.replace(self.undo)
        return self.undo

    def read_undo(self) -> UndoDocument:
        """undo.json, validated (pydantic's ValidationError when it is not one)."""
        return UNDO_DOCUMENT.validate_json(self.undo.read_bytes())

    def copy_plan(self, source: Path) -> Path:
        """Make the folder, and copy into it the plan at ``source`` (any name) and its
        decisions (when there are any) as plan.json and decisions.jsonl.zst; the copy's
        path. What an apply checks and sends is this copy, never the source. PlanFileError
        names ``source`` when there is none, or it cannot be read."""
        if not source.is_file():
            raise PlanFileError(str(source), "no such plan file")
        try:
            self.path.mkdir(parents=True)
            shutil.copyfile(source, self.plan)
            if (decisions := decisions_path(source)).is_file():
                shutil.copyfile(decisions, self.decisions)
        except OSError as exc:
            raise PlanFileError(
                str(source), f"cannot read the plan: {exc.strerror or exc}"
            ) from None
        return self.plan

    def mark_interrupted(
        self,
        mode: Mode,
        signal_name: str,
        started: datetime,
        stopped: datetime,
        outcomes: Mapping[str, int] | None = None,
        *,
        sent: bool = False,
    ) -> Path:
        """Write interrupted.json: which signal stopped which command when, in which step
        (apply once ``outcomes`` are journalled, the outcomes so far; plan before), and
        whether a PATCH went out."""
        document: InterruptedDocument = {
            "format": INTERRUPTED_FORMAT,
            "mode": mode,
            "signal": signal_name,
            "exitCode": SIGNAL_EXITS[signal_name],
            "startedAt": format_timestamp(started),
            "stoppedAt": format_timestamp(stopped),
            "step": "apply" if outcomes is not None else "plan",
            "sent": sent,
            "outcomes": dict(sorted(outcomes.items())) if outcomes is not None else None,
        }
        return self.write_interrupted(document)

    def write_interrupted(self, document: InterruptedDocument) -> Path:
        """Write interrupted.json (one line), making the folder if planning made none yet."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.interrupted.write_bytes(encode_line(document))
        return self.interrupted

    def read_interrupted(self) -> InterruptedDocument:
        """interrupted.json, validated (pydantic's ValidationError when it is not one)."""
        return INTERRUPTED_DOCUMENT.validate_json(self.interrupted.read_bytes())
