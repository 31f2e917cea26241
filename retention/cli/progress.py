"""Progress on a terminal: what a person watching a long command sees on stderr while it
runs. It hears the library's Progress (retention.library.stages) and shows, stage by
stage, the clusters walked of the total and the snapshots read (plan, run, diff,
forecast), the changes applied and the snapshots put back of theirs with the outcomes so
far (run, apply, undo), the run folders read (prune), the evidence's steps, and the time
left once a rate has been measured. It is gone from the screen before the command prints
what it found.

Nothing of it is written when stderr is not a terminal, under ``--log-format json`` or
with ``--quiet``: a log or a pipe gets the same bytes as if there were no progress at
all. rich draws it (retention.cli.bars), imported only when it shows, so that a command
run by cron does not pay for loading it.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from retention.cli.common import is_terminal, json_logs

if TYPE_CHECKING:
    from retention.apply.executor import Outcome
    from retention.cli.bars import Bars
    from retention.core.runfiles import UndoOutcome
    from retention.walk.inventory import Walk

# Outcomes beside the applying bar from the start (the others once they happen), and the
# order of every outcome there: results.jsonl's words (core.runfiles.OutcomeName; spelled
# here because importing that module costs the command line 0.2 s at start, and
# tests/test_progress.py holds the two lists equal).
APPLY_SHOWN = ("applied", "unchanged", "stale", "failed")
APPLY_ORDER = (*APPLY_SHOWN, "held", "refused", "not-sent")
# Undo's words (core.runfiles.UndoOutcome): the first ones shown from the start, as apply's
# (restored, or would-restore in a dry run, once it happens), the others once they happen.
UNDO_SHOWN = ("unchanged", "stale", "failed")
UNDO_ORDER = (
    "restored",
    "would-restore",
    "unchanged",
    "protected",
    "stale",
    "gone",
    "expired",
    "lapsed",
    "failed",
    "not-sent",
)

F = TypeVar("F", bound=Callable[..., Any])


def quiet_option(command: F) -> F:
    """--quiet: no progress on the terminal (the command's output only)."""
    return click.option(
        "--quiet", is_flag=True, help="No progress on the terminal; the output only."
    )(command)


class TerminalProgress:
    """The library's Progress, drawn on stderr when ``on`` (see the module docstring);
    every call is free when it is not. Outcomes come from the workers' threads."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self._lock = threading.Lock()
        self._bars: Bars | None = None
        self._stage: str | None = None  # the stage on the screen, None: none
        self._snapshots = 0
        self._outcomes: Counter[str] = Counter()

    @classmethod
    def of(cls, ctx: click.Context, *, quiet: bool = False) -> TerminalProgress:
        """The progress of a command: on when stderr is a terminal, unless --quiet or
        --log-format json (where every stderr line must be JSON)."""
        return cls(not quiet and not json_logs(ctx) and is_terminal(sys.stderr))

    def walks(self, total: int) -> None:
        """The walk starts: ``total`` clusters to walk."""
        self._snapshots = 0
        self._start("walking", total, "clusters", _read(0))

    def walk(self, walk: Walk) -> None:
        """One more cluster walked, with its snapshots."""
        with self._lock:
            if self._showing("walking"):
                self._snapshots += len(walk.snapshots)
                self._advance(_read(self._snapshots))

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` changes to send."""
        self._outcomes = Counter(dict.fromkeys(APPLY_SHOWN, 0))
        self._start("applying", total, "changes", _counts(self._outcomes, APPLY_ORDER))

    def outcome(self, outcome: Outcome) -> None:
        """One change done."""
        self._count("applying", outcome.outcome, APPLY_ORDER)

    def undo(self, total: int) -> None:
        """Undoing starts: ``total`` snapshots to look at."""
        self._outcomes = Counter(dict.fromkeys(UNDO_SHOWN, 0))
        self._start("undoing", total, "snapshots", _counts(self._outcomes, UNDO_ORDER))

    def undone(self, outcome: UndoOutcome) -> None:
        """One snapshot done."""
        self._count("undoing", outcome, UNDO_ORDER)

    def folders(self, total: int) -> None:
        """Reading the run folders starts: ``total`` of them."""
        self._start("reading", total, "run folders", "")

    def folder(self, name: str) -> None:
        """One more run folder read."""
        with self._lock:
            if self._showing("reading"):
                self._advance("")

    def sections(self, total: int) -> None:
        """The evidence starts: ``total`` steps, the first under way."""
        from retention.evidence.steps import STEPS

        self._start("evidence", total, "steps", STEPS[0])

    def section(self, under_way: str) -> None:
        """One more step of the evidence done; ``under_way`` next."""
        with self._lock:
            if self._showing("evidence"):
                self._advance(under_way)

    def close(self) -> None:
        """Clear the progress from the screen (what the command prints follows)."""
        with self._lock:
            bars, self._bars, self._stage = self._bars, None, None
        if bars is not None:
            bars.stop()

    def _start(self, stage: str, total: int, unit: str, detail: str) -> None:
        """A stage of ``total`` items begins; it shows when progress is on and it has any."""
        with self._lock:
            self._stage = None
            if not self.on or total <= 0:
                return
            if self._bars is None:
                from retention.cli.bars import Bars

                self._bars = Bars()
            self._bars.stage(stage, total, unit, detail)
            self._stage = stage

    def _showing(self, stage: str) -> bool:
        """Whether ``stage`` is the stage on the screen (under the lock)."""
        return self._stage == stage and self._bars is not None

    def _advance(self, detail: str) -> None:
        """One more item of the stage on the screen (under the lock)."""
        if self._bars is not None:
            self._bars.advance(detail)

    def _count(self, stage: str, outcome: str, order: Sequence[str]) -> None:
        with self._lock:
            if self._showing(stage):
                self._outcomes[outcome] += 1
                self._advance(_counts(self._outcomes, order))


def _read(snapshots: int) -> str:
    return f"{snapshots:,} snapshots read"


def _counts(outcomes: Counter[str], order: Sequence[str]) -> str:
    """``applied 12, unchanged 0, stale 1, failed 0``: the outcomes so far, in ``order``."""
    return ", ".join(f"{name} {outcomes[name]:,}" for name in order if name in outcomes)
