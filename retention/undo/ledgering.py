"""An undo's restores in the ledger, as an apply's changes are (retention.apply.ledgering):
each written before the first is sent, and how each ended once the undo ends, so that the
next plan takes what the undo put back for ours, not for a change made outside retention."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from retention.core.outside import Retained
from retention.core.restore import Restoration
from retention.core.runfiles import UndoOutcome
from retention.ledger.recorder import RunRecord, Sent
from retention.ledger.session import Recording
from retention.ops.clock import Clock

# What each outcome leaves the snapshot as, for the ledger (as apply.ledgering says).
_LEDGER_OUTCOME: dict[str, str] = {"restored": "sent", "unchanged": "sent"}


def _sent(r: Restoration, outcome: str | None = None, status: int | None = None) -> Sent:
    dnd = r.before.do_not_delete
    after = Retained(True, None if dnd else r.before.expires, dnd)
    written = Retained(
        True, None if r.written.do_not_delete else r.written.expires, r.written.do_not_delete
    )
    return Sent(
        r.project_id,
        r.cluster_id,
        r.snapshot_id,
        "restore",
        after,
        None,
        outcome,
        status,
        before=written,
        why=f"undo of a {r.action}",
    )


@dataclass
class RecordedUndo:
    """The ledger's side of one undo (not of a dry run: it sends nothing)."""

    recording: Recording
    clock: Clock
    record: RunRecord | None = None

    def begin(self, run_id: str, started: datetime) -> None:
        """The undo's run, begun in the ledger."""
        self.record = self.recording.begin(run_id, started)

    def intend(self, restorations: Sequence[Restoration]) -> None:
        """Every restore about to be sent, before the first is."""
        if self.record is not None:
            self.record.intend([_sent(r) for r in restorations], self.clock())

    def done(self, ended: Sequence[tuple[Restoration, UndoOutcome, int | None]]) -> None:
        """How each restore ended: put back, refused, or unknown (no answer)."""
        if self.record is None:
            return
        outcomes = []
        for r, outcome, status in ended:
            name = _LEDGER_OUTCOME.get(outcome)
            if name is None:
                name = "unknown" if outcome == "failed" and status is None else "refused"
            outcomes.append(_sent(r, name, status))
        self.record.outcomes(outcomes, self.clock())
