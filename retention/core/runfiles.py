"""The files of a run folder beside the plan (core/planfile.py models plan.json and
decisions.jsonl): ``results.jsonl``, ``undo.json`` and ``interrupted.json``.

``results.jsonl`` has two shapes. An apply's journal (``run``, ``apply``) has an intent line
before each PATCH and an outcome line per change; an undo's journal, under the same name in
the undo's own folder, has an intent line before each restore and an item line after it.
They are two models, each a union told apart by ``"intent": true``: the folder says which
one it holds (an undo's has undo.json), and the keys differ (``observed`` and ``planned``,
against ``before`` and ``written``), so a line of one never reads as the other.

Each line and document is a TypedDict validated by pydantic's TypeAdapter, like the plan's:
the writers build the records (mypy checks that every key is there), the readers in
retention.runfolder get them back checked, and every object is closed. An apply's journal
keeps its timestamps as datetimes, which encode_line writes as the API does; undo's files
and interrupted.json are written as text, the form undo's report and ``--format json`` show.
docs/plan-file.md describes the bytes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, final

from pydantic import ConfigDict, Discriminator, Tag, TypeAdapter, with_config
from typing_extensions import TypedDict

from retention.core.model import ChangeAction
from retention.core.planfile import Body, Id, Observed, Timestamp
from retention.core.snapshot import PatchText, StateText, TimestampText

# What apply did with one change (docs/plan-file.md, "results.jsonl").
OutcomeName = Literal["applied", "unchanged", "stale", "failed", "held", "refused", "not-sent"]
# What undo did with one snapshot: put back (or would, in a dry run), or why not.
UndoOutcome = Literal[
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
]
# The command a signal stopped, and the step it stopped in.
Mode = Literal["plan", "run", "dry-run", "apply"]
Step = Literal["plan", "apply"]

UNDO_FORMAT: Literal["retention-undo/v1"] = "retention-undo/v1"
INTERRUPTED_FORMAT: Literal["retention-interrupted/v1"] = "retention-interrupted/v1"

_STRICT = ConfigDict(extra="forbid")


def _intent_or_not(value: Any) -> str | None:
    """The tag of a journal line: an intent carries ``"intent": true``, the other shape
    has no such key. None (not an object) fails validation."""
    if not isinstance(value, dict):
        return None
    return "intent" if "intent" in value else "after"


# ---- results.jsonl of an apply ---------------------------------------------------------


@with_config(_STRICT)
class JournalEntry(TypedDict):
    """What both lines of an apply's journal say of the change: the plan's entry."""

    at: Timestamp
    projectId: Id
    clusterId: Id
    clusterName: str
    snapshotId: Id
    action: ChangeAction
    destructive: bool
    observed: Observed
    planned: Body


@final
@with_config(_STRICT)
class ApplyIntent(JournalEntry):
    """Written before a PATCH goes out: the body about to be sent."""

    intent: Literal[True]
    body: Body
    approved: bool


@final
@with_config(_STRICT)
class ApplyOutcome(JournalEntry):
    """What happened to the change; ``body`` is what was sent (None: nothing was)."""

    body: Body | None
    outcome: OutcomeName
    approved: bool
    status: int | None
    error: str | None


ApplyLine = Annotated[
    Annotated[ApplyIntent, Tag("intent")] | Annotated[ApplyOutcome, Tag("after")],
    Discriminator(_intent_or_not),
]
APPLY_LINE: TypeAdapter[ApplyIntent | ApplyOutcome] = TypeAdapter(ApplyLine)
APPLY_INTENT = TypeAdapter(ApplyIntent)
APPLY_OUTCOME = TypeAdapter(ApplyOutcome)


# ---- results.jsonl and undo.json of an undo --------------------------------------------


@with_config(_STRICT)
class _Restoration(TypedDict):
    """The snapshot a restore is about, what the run found and what it wrote."""

    projectId: Id
    clusterId: Id
    clusterName: str
    snapshotId: Id
    before: StateText
    written: StateText


@final
@with_config(_STRICT)
class UndoIntent(_Restoration):
    """Written before a restore's PATCHes go out: the bodies about to be sent."""

    at: TimestampText
    intent: Literal[True]
    steps: list[PatchText]


@with_config(_STRICT)
class UndoItem(_Restoration):
    """One snapshot of an undo (an item of undo.json): what the run did to it, its state
    when undo read it (None: gone), what undo did and why, and the PATCHes it sent."""

    action: ChangeAction
    current: StateText | None
    outcome: UndoOutcome
    reason: str
    sent: list[PatchText]
    status: int | None
    inDoubt: bool


@final
@with_config(_STRICT)
class UndoItemLine(UndoItem):
    """An item as undo's journal writes it, when it ends."""

    at: TimestampText


UndoLine = Annotated[
    Annotated[UndoIntent, Tag("intent")] | Annotated[UndoItemLine, Tag("after")],
    Discriminator(_intent_or_not),
]
UNDO_LINE: TypeAdapter[UndoIntent | UndoItemLine] = TypeAdapter(UndoLine)
UNDO_INTENT = TypeAdapter(UndoIntent)
UNDO_ITEM_LINE = TypeAdapter(UndoItemLine)


@with_config(_STRICT)
class EarlierUndo(TypedDict):
    """An undo of the same run made before this one (not a dry run): its folder, when it
    started, how many snapshots it put back, and the signal that stopped it (None: it ran
    to the end)."""

    runDir: str
    createdAt: TimestampText
    restored: int
    interrupted: str | None


@with_config(_STRICT)
class UndoDocument(TypedDict):
    """undo.json: which run was undone, when, the counts, and every item; the undos of that
    run before this one (undo.json of older versions has no such list)."""

    format: Literal["retention-undo/v1"]
    runId: str
    undoOf: str
    createdAt: TimestampText
    dryRun: bool
    counts: dict[str, int]  # items by outcome
    unreadableLines: int
    inDoubt: int
    interrupted: str | None
    undoneBefore: NotRequired[list[EarlierUndo]]  # oldest first
    items: list[UndoItem]


UNDO_DOCUMENT = TypeAdapter(UndoDocument)


# ---- interrupted.json ------------------------------------------------------------------


@with_config(_STRICT)
class InterruptedDocument(TypedDict):
    """interrupted.json: which signal stopped which command when, in which step, whether a
    PATCH went out, and the outcomes journalled so far (None while planning)."""

    format: Literal["retention-interrupted/v1"]
    mode: Mode
    signal: str
    exitCode: int
    startedAt: TimestampText
    stoppedAt: TimestampText
    step: Step
    sent: bool
    outcomes: dict[str, int] | None


INTERRUPTED_DOCUMENT = TypeAdapter(InterruptedDocument)
