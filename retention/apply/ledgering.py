"""An apply's changes in the ledger: each one it is about to send, written before the
first is sent, and how each ended, written once the apply ends (retention.ledger.recorder
says why in that order)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from retention.apply.executor import Listener, Outcome
from retention.core.outside import Retained
from retention.core.planfile import Change
from retention.ledger.recorder import RunRecord, Sent
from retention.ledger.session import Recording
from retention.ops.clock import Clock

# What each outcome leaves the snapshot as, for the ledger: what the apply sent is now its
# state (sent), or it was not changed (refused), or nobody knows until the next walk looks
# (unknown: a PATCH that got no answer).
_LEDGER_OUTCOME = {
    "applied": "sent",
    "unchanged": "sent",
    "stale": "refused",
    "held": "refused",
    "refused": "refused",
    "not-sent": "refused",
}


def _after(change: Change, body: dict[str, object] | None) -> Retained:
    """The snapshot's fields once ``body`` (the planned one when None) is applied."""
    sent = body if body is not None else dict(change["body"])
    observed = change["observed"]
    dnd = bool(sent.get("doNotDelete", observed["doNotDelete"]))
    expires = sent.get("expires", observed["expires"])
    return Retained(True, None if dnd else expires, dnd)  # type: ignore[arg-type]


def _sent(change: Change, body: dict[str, object] | None, approval: str | None) -> Sent:
    observed = change["observed"]
    before = Retained(True, observed["expires"], observed["doNotDelete"])
    return Sent(
        change["projectId"],
        change["clusterId"],
        change["snapshotId"],
        change["action"],
        _after(change, body),
        approval=approval,
        before=before,
        policy=change["policy"] or None,
        why="; ".join(r["text"] for r in change["reasons"]) or None,
    )


@dataclass
class RecordedSends:
    """A listener that passes on what it hears and keeps each outcome for the ledger."""

    inner: Listener
    recording: Recording
    clock: Clock
    outcomes: list[Outcome] = field(default_factory=list)
    record: RunRecord | None = None

    def begin(self, run_id: str, started: datetime) -> None:
        """The run these changes belong to (begun in the ledger unless it is already)."""
        self.record = self.recording.begin(run_id, started)

    def intend(self, changes: Iterable[Change]) -> None:
        """Write every change about to be sent, before the first is."""
        if self.record is None:
            raise AssertionError("RecordedSends.begin comes first")
        self.record.intend([_sent(c, None, None) for c in changes], self.clock())

    def apply(self, total: int) -> None:
        """Applying starts."""
        self.inner.apply(total)

    def outcome(self, outcome: Outcome) -> None:
        """One change done."""
        self.outcomes.append(outcome)
        self.inner.outcome(outcome)

    def done(self) -> None:
        """Write how each change ended."""
        if self.record is None:
            return
        ended = []
        for o in self.outcomes:
            body = dict(o.sent) if o.sent is not None else None
            # Who let a held change through: the person who ran the apply with --approve.
            approval = self.recording.start.actor if o.approved else None
            sent = _sent(o.change, body, approval)
            if o.outcome == "unchanged" and o.found is not None:
                # Nothing sent: the snapshot holds what the re-read found (an earlier
                # apply's expiry, not the plan's), and the ledger knows it so.
                sent = replace(sent, after=Retained.of(o.found))
            name = _LEDGER_OUTCOME.get(o.outcome)
            if name is None:  # failed: no answer leaves it unknown, an answer refused it
                name = "unknown" if o.status is None else "refused"
            ended.append(replace(sent, outcome=name, status=o.status))
        self.record.outcomes(ended, self.clock())
