"""Undo, the pure part: what a run's journal says it changed, and how to put each back.

A run journals every PATCH in results.jsonl with the state it observed before and the body
it sent. Undo takes each destructive change the API applied and, if the snapshot still has
exactly the state that run wrote (compare-and-swap, as apply does), puts back the observed
state: the old expiry; or no expiry, through ``doNotDelete: true`` (which the API answers by
dropping the expiry) then ``doNotDelete: false``; or the protection the run lifted. Anything
else is left alone and said: gone, changed since, already back, or past an expiry the API
no longer edits. Inside the grace window a bad run is fully reversible.

The journal is written ahead: an intent line before each PATCH, its outcome after. A PATCH
whose intent has no outcome (the run was killed while it was on the wire), or whose outcome
is a failure, may or may not have been applied (``in_doubt``): a failure can follow a try
that reached the service (a read timeout, then a 503 on the retry; a proxy's 504 in front
of a service that did the work). It gets the same compare-and-swap, so it is put back
exactly when the snapshot shows what that PATCH would have written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from retention.core.model import ChangeAction
from retention.core.planfile import Body
from retention.core.runfiles import ApplyIntent, ApplyOutcome, UndoOutcome
from retention.core.snapshot import (
    PatchText,
    SnapshotFacts,
    SnapshotPatch,
    StateText,
    state_document,
)
from retention.core.timestamps import format_timestamp, parse_timestamp

Verdict = Literal["restore", "unchanged", "protected", "stale", "gone", "expired", "lapsed"]
LeftAlone = Literal["unchanged", "protected", "stale", "gone", "expired", "lapsed"]
# Outcomes that leave the snapshot as the operator wants it, or safer (protected); any
# other needs a look.
SETTLED: frozenset[UndoOutcome] = frozenset({"restored", "would-restore", "unchanged", "protected"})
# Why each verdict other than restore leaves the snapshot alone, for the report and the CLI.
LEFT_ALONE: dict[LeftAlone, str] = {
    "unchanged": "already as before the run",
    "protected": "protected (doNotDelete) with no expiry: an undo stopped between its two "
    "PATCHes, or someone protected it since; it cannot be deleted, so it is left so. Lift "
    "the protection (doNotDelete: false) to have it as before the run, with no expiry",
    "stale": "changed since the run by someone or something else: left alone",
    "gone": "the snapshot is gone: nothing to restore",
    "expired": "the expiry that run wrote has passed: the API edits no past expiry",
    "lapsed": "its expiry from before the run has passed too: restoring it would let the "
    "service delete it at once; protect it by hand if it must stay",
}


@dataclass(frozen=True)
class State:
    """What undo compares and restores of a snapshot."""

    do_not_delete: bool
    expires: datetime | None

    @classmethod
    def of(cls, snapshot: SnapshotFacts) -> State:
        """A snapshot's state as the API answered it (an expiry beside doNotDelete is moot)."""
        protected = snapshot.do_not_delete
        return cls(protected, None if protected else snapshot.expires)

    @classmethod
    def from_document(cls, document: StateText) -> State:
        """The state ``document()`` wrote (undo.json, undo's results.jsonl)."""
        expires = document["expires"]
        return cls(document["doNotDelete"], parse_timestamp(expires) if expires else None)

    def text(self) -> str:
        """The state as a person reads it."""
        if self.do_not_delete:
            return "protected (doNotDelete)"
        if self.expires is None:
            return "no expiry"
        return f"expires {format_timestamp(self.expires)}"

    def document(self) -> StateText:
        """The state in the API's words, for JSON."""
        return state_document(self.do_not_delete, self.expires)


@dataclass(frozen=True)
class Restoration:
    """One destructive change a run applied, and the state to put back."""

    project_id: str
    cluster_id: str
    cluster_name: str
    snapshot_id: str
    action: ChangeAction
    before: State
    written: State
    in_doubt: bool = False  # the journal cannot say whether the service applied it

    def steps(self) -> list[SnapshotPatch]:
        """The PATCHes that take a snapshot from ``written`` back to ``before``."""
        if self.before.do_not_delete:
            return [SnapshotPatch.protect()]
        if self.before.expires is None:
            # doNotDelete: true is the only way to drop an expiry; the API removes it.
            return [SnapshotPatch.protect(), SnapshotPatch(do_not_delete=False)]
        return [SnapshotPatch.expire_at(self.before.expires)]


def state_after(before: State, body: Body | PatchText) -> State:
    """The state a PATCH with ``body`` leaves, as the API applies it: protecting drops the
    expiry; a body without a member leaves that member as it was."""
    if body.get("doNotDelete", before.do_not_delete):
        return State(True, None)
    expires = body.get("expires")
    if isinstance(expires, str):
        return State(False, parse_timestamp(expires))
    return State(False, expires if expires is not None else before.expires)


def in_doubt(intent: ApplyIntent | None, outcome: ApplyOutcome | None) -> bool:
    """Whether a PATCH may have been applied although its outcome line does not say so: it
    was journalled as about to be sent, and no outcome followed, or a failure did. The one
    rule for undo, the report and the summaries."""
    return intent is not None and (outcome is None or outcome["outcome"] == "failed")


def paired(
    lines: Iterable[ApplyIntent | ApplyOutcome],
) -> Iterator[tuple[ApplyIntent | None, ApplyOutcome | None]]:
    """A journal's lines as (intent, outcome): each outcome line with the intent line of
    its snapshot before it (None when the change was never about to be sent), in journal
    order; then each intent no outcome followed, with None."""
    waiting: dict[tuple[str, str], ApplyIntent] = {}
    for line in lines:
        key = (line["clusterId"], line["snapshotId"])
        if "intent" in line:
            waiting[key] = line
        else:
            yield waiting.pop(key, None), line
    for intent in waiting.values():
        yield intent, None


def restorations(lines: Iterable[ApplyIntent | ApplyOutcome]) -> list[Restoration]:
    """The destructive changes a journal says the API applied, or may have applied (see
    the module docstring), one per snapshot (the first observed state and the last written
    one, if an apply journalled a snapshot twice): in the order of their outcome lines,
    then the intents that have none."""
    found: dict[str, Restoration] = {}
    for intent, outcome in paired(line for line in lines if line["destructive"]):
        if outcome is not None and outcome["outcome"] == "applied":
            _found(found, outcome, outcome["body"], in_doubt=False)
        elif intent is not None and in_doubt(intent, outcome):
            _found(found, intent, intent["body"], in_doubt=True)
    return list(found.values())


def _found(
    found: dict[str, Restoration],
    line: ApplyIntent | ApplyOutcome,
    body: Body | None,
    *,
    in_doubt: bool,
) -> None:
    observed = line["observed"]
    before = State(observed["doNotDelete"], observed["expires"])
    sid = line["snapshotId"]
    first = found.get(sid)
    found[sid] = Restoration(
        line["projectId"],
        line["clusterId"],
        line["clusterName"] or line["clusterId"],
        sid,
        line["action"],
        first.before if first is not None else before,
        state_after(before, body or {}),
        in_doubt=in_doubt and (first is None or first.in_doubt),
    )


def verdict(  # noqa: PLR0911 - one return per verdict, in the order they are judged
    item: Restoration, current: State | None, now: datetime
) -> Verdict:
    """What undo does about ``item`` given the snapshot's state now (None: it is gone)."""
    if current is None:
        return "gone"
    if current == item.before:
        return "unchanged"
    if current == State(True, None) and item.before == State(False, None):
        # Half of the two-PATCH way back from an expiry to none: safe, and not ours to undo.
        return "protected"
    if current != item.written:
        return "stale"
    if current.expires is not None and current.expires <= now:
        return "expired"
    before = item.before
    if not before.do_not_delete and before.expires is not None and before.expires <= now:
        return "lapsed"
    return "restore"
