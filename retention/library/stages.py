"""The progress of a job (``Progress``: who hears it, ``Quiet``: nobody), and one log line
a stage: what a job's progress says, told on to whoever draws it (the
command line's bars on a terminal) and, as each stage ends, logged once on the run logger
for a run nobody watches (``stage-ended``: with --log-format json a collector's line a
stage, beside run-finished; in text mode with --debug only, as run-finished is, so that
cron mails nothing more).

A stage is the walk (plan, run, diff, forecast), applying (run, apply), undoing (undo) or
reading the run folders (prune); it ends when the next begins or the job ends, however it
ends (a stopped walk says how far it got).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from retention.apply.executor import Listener as ApplyListener
from retention.core.wording import plural
from retention.evidence.steps import Listener as EvidenceListener
from retention.ops.logs import RUN_LOGGER
from retention.prune.folders import Listener as PruneListener
from retention.undo.restoring import Listener as UndoListener
from retention.walk.inventory import WalkListener

if TYPE_CHECKING:
    from retention.apply.executor import Outcome
    from retention.core.runfiles import UndoOutcome
    from retention.ops.clock import Clock
    from retention.walk.inventory import Walk

log = logging.getLogger(RUN_LOGGER)


class Progress(
    WalkListener, ApplyListener, UndoListener, PruneListener, EvidenceListener, Protocol
):
    """Who hears how a job goes (the command line's progress on a terminal). Each stage is
    said with its total, then item by item: the walk (``walks``, then ``walk`` for each
    cluster: plan, run, diff, forecast), applying (``apply``, then ``outcome`` for each
    change: run, apply), undoing (``undo``, then ``undone`` for each snapshot), reading run
    folders (``folders``, then ``folder``: prune), the evidence's steps (``sections``, then
    ``section``); and ``close`` at the end. The items of
    applying and undoing are heard from the workers' threads. To hear only some of it,
    subclass Quiet."""

    def close(self) -> None:
        """The job ended, however it ended."""


class Quiet:
    """The progress nobody hears: for a job called as a library."""

    def walks(self, total: int) -> None:
        """Nothing to say."""

    def walk(self, walk: Walk) -> None:
        """Nothing to say."""

    def apply(self, total: int) -> None:
        """Nothing to say."""

    def outcome(self, outcome: Outcome) -> None:
        """Nothing to say."""

    def undo(self, total: int) -> None:
        """Nothing to say."""

    def undone(self, outcome: UndoOutcome) -> None:
        """Nothing to say."""

    def folders(self, total: int) -> None:
        """Nothing to say."""

    def folder(self, name: str) -> None:
        """Nothing to say."""

    def sections(self, total: int) -> None:
        """Nothing to say."""

    def section(self, under_way: str) -> None:
        """Nothing to say."""

    def close(self) -> None:
        """Nothing to end."""


@dataclass
class _Stage:
    """A stage under way: its name, what its items are, how many, and what they did."""

    name: str
    unit: str
    total: int
    started: datetime
    done: int = 0
    snapshots: int | None = None  # the walk's: snapshots read
    outcomes: Counter[str] = field(default_factory=Counter)

    def words(self, seconds: float) -> str:
        """``walk: 13 of 13 clusters, 2,346 snapshots read in 21.3 s``."""
        said = f"{self.name}: {self.done:,} of {self.total:,} {plural(self.unit, self.total)}"
        if self.snapshots is not None:
            said += f", {self.snapshots:,} {plural('snapshot', self.snapshots)} read"
        if self.outcomes:
            said += " (" + ", ".join(f"{k} {v:,}" for k, v in sorted(self.outcomes.items())) + ")"
        return f"{said} in {seconds:.1f} s"

    def fields(self, seconds: float) -> dict[str, object]:
        """The structured fields of the line."""
        fields: dict[str, object] = {
            "event": "stage-ended",
            "stage": self.name,
            "done": self.done,
            "total": self.total,
            "unit": self.unit,
        }
        if self.snapshots is not None:
            fields["snapshots"] = self.snapshots
        if self.outcomes:
            fields["outcomes"] = dict(sorted(self.outcomes.items()))
        return {**fields, "durationSeconds": round(seconds, 3)}


class StageLog:
    """The Progress that tells ``inner`` all it
    hears and logs each stage as it ends. Items come from the workers' threads."""

    def __init__(self, inner: Progress, clock: Clock) -> None:
        self.inner = inner
        self._clock = clock
        self._lock = threading.Lock()
        self._stage: _Stage | None = None

    def walks(self, total: int) -> None:
        """The walk starts."""
        self._begin("walk", "cluster", total, snapshots=0)
        self.inner.walks(total)

    def walk(self, walk: Walk) -> None:
        """One more cluster walked."""
        with self._lock:
            stage = self._stage
            if stage is not None and stage.snapshots is not None:
                stage.done += 1
                stage.snapshots += len(walk.snapshots)
                if walk.error:
                    stage.outcomes["failed"] += 1
        self.inner.walk(walk)

    def apply(self, total: int) -> None:
        """Applying starts."""
        self._begin("apply", "change", total)
        self.inner.apply(total)

    def outcome(self, outcome: Outcome) -> None:
        """One change done."""
        self._count(outcome.outcome)
        self.inner.outcome(outcome)

    def undo(self, total: int) -> None:
        """Undoing starts."""
        self._begin("undo", "snapshot", total)
        self.inner.undo(total)

    def undone(self, outcome: UndoOutcome) -> None:
        """One snapshot done."""
        self._count(outcome)
        self.inner.undone(outcome)

    def folders(self, total: int) -> None:
        """Reading the run folders starts."""
        self._begin("read", "run folder", total)
        self.inner.folders(total)

    def folder(self, name: str) -> None:
        """One more run folder read."""
        with self._lock:
            if self._stage is not None:
                self._stage.done += 1
        self.inner.folder(name)

    def sections(self, total: int) -> None:
        """The evidence starts."""
        self._begin("evidence", "step", total)
        self.inner.sections(total)

    def section(self, under_way: str) -> None:
        """One more step of the evidence done."""
        with self._lock:
            if self._stage is not None:
                self._stage.done += 1
        self.inner.section(under_way)

    def close(self) -> None:
        """The job ended: the stage under way ends too."""
        self._end()
        self.inner.close()

    def _begin(self, name: str, unit: str, total: int, snapshots: int | None = None) -> None:
        self._end()
        with self._lock:
            self._stage = _Stage(name, unit, total, self._clock(), snapshots=snapshots)

    def _count(self, outcome: str) -> None:
        with self._lock:
            if self._stage is not None:
                self._stage.done += 1
                self._stage.outcomes[outcome] += 1

    def _end(self) -> None:
        with self._lock:
            stage, self._stage = self._stage, None
        if stage is not None:
            seconds = max((self._clock() - stage.started).total_seconds(), 0.0)
            log.info("%s", stage.words(seconds), extra={"fields": stage.fields(seconds)})
