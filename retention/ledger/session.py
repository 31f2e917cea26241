"""A job's ledger while it runs: opened by the lifecycle, the run begun by the step that
makes the run folder (it knows the run's id), finished by whoever ends first: the step (a
plan, whose reports print the head hash) or the lifecycle (every other job, and every job
that raised)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from retention.ledger.database import Ledger
from retention.ledger.recorder import PolicyText, RunEnd, RunRecord, RunStart


@dataclass
class Recording:
    """One job's recording: what every run of it says (``start``, its id and time still
    to come), and the run once begun."""

    ledger: Ledger
    start: RunStart
    record: RunRecord | None = None
    head: str | None = None  # the shard's chain head once the run is finished

    def begin(
        self,
        run_id: str,
        started: datetime,
        policies: Sequence[Mapping[str, str]] = (),
        texts: Sequence[PolicyText] = (),
    ) -> RunRecord:
        """Begin the run (once: a second call gives the same record)."""
        if self.record is None:
            start = replace(
                self.start,
                run_id=run_id,
                started=started,
                policies=tuple(policies),
                policy_texts=tuple(texts),
            )
            self.record = RunRecord.begin(self.ledger, start)
        return self.record

    @property
    def finished(self) -> bool:
        """Whether the run was begun and finished."""
        return self.head is not None

    def finish(self, end: RunEnd) -> str | None:
        """Finish the run (once); the chain's head, None when no run was begun."""
        if self.record is None:
            return None
        if self.head is None:
            self.head = self.record.finish(end)
        return self.head
