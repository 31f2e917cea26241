"""What a policy change does to one cluster: its plan under the base policies against its
plan under the new ones, made from the same walk at the same ``now``. Pure.

A snapshot's fate under a plan is one of three:

- ``kept``: the plan leaves it in place as a restore point (kept, protected, held by hand);
- ``let go``: the plan expires it, or leaves it to an expiry already due within the grace
  period (an unkept snapshot, or a possibly inconsistent one under ``inconsistent: expire``),
  whether or not a safety gate holds the change today;
- ``untouched``: the plan does not count it and changes nothing (incomplete, awaiting
  deletion, possibly inconsistent, or no policy matches its cluster), or it is a config
  server's, whose decisions are advisory and never sent (as ``restorable.restore_points``
  reads them): the service keeps it as it would without the job, under either side.

The new policies keep less when a snapshot the base keeps is not kept under them, or when
they let go of a snapshot the base does not: either is a snapshot the review must see, and
makes ``retention diff`` exit 3. They keep more when a snapshot only they keep is kept.
A change of protection alone (protected under one side, kept under the other) is listed
apart: it changes how a snapshot is kept, not whether.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from retention.core.model import ClusterPlan, Decision, Hold, Target, describe
from retention.core.restorepoints import Ladder

Fate = Literal["kept", "let go", "untouched"]
Shift = Literal["stops keeping", "newly keeps", "newly protects", "stops protecting"]
# The order shifts are listed in: what makes `retention diff` exit 3 first.
SHIFTS: tuple[Shift, ...] = ("stops keeping", "newly keeps", "newly protects", "stops protecting")

_KEPT = frozenset({"kept", "protected", "manual-hold"})


def fate(decision: Decision, *, advisory: bool = False) -> Fate:
    """What a plan does to a snapshot, in the three words of the module docstring;
    ``advisory``: the plan is a config server's, which sends nothing."""
    if advisory:
        return "untouched"
    if decision.state in _KEPT and not decision.destructive:
        return "kept"
    if decision.state == "unkept" or decision.destructive:
        return "let go"
    return "untouched"


@dataclass(frozen=True)
class SnapshotShift:
    """One snapshot whose fate (or protection) the new policies change."""

    snapshot_id: str
    created: datetime
    storage_bytes: int | None
    shift: Shift
    before: Fate
    after: Fate
    # From when the service may delete it under the new policies (None: not let go, or
    # no expiry), and the gate that holds that change today, if one does.
    deletable_from: datetime | None
    held: str | None
    why_before: str
    why_after: str


@dataclass(frozen=True)
class ClusterDiff:
    """One cluster under the base and the new policies."""

    target: Target
    policies_before: list[str]
    policies_after: list[str]
    shifts: list[SnapshotShift] = field(default_factory=list)
    holds_added: list[Hold] = field(default_factory=list)
    holds_gone: list[Hold] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Every hold of the cluster under each side (a fraction hold's words give its side's
    # count, which differs between the sides while the hold is the same).
    holds_before: list[Hold] = field(default_factory=list)
    holds_after: list[Hold] = field(default_factory=list)
    ladder_before: Ladder | None = None
    ladder_after: Ladder | None = None

    def of(self, shift: Shift) -> list[SnapshotShift]:
        """The snapshots of one kind of shift."""
        return [s for s in self.shifts if s.shift == shift]

    @property
    def keeps_less(self) -> bool:
        """True when the new policies stop keeping a snapshot the base keeps."""
        return any(s.shift == "stops keeping" for s in self.shifts)

    @property
    def changed(self) -> bool:
        """True when anything differs: a snapshot, a hold, the policies that match it."""
        return bool(
            self.shifts
            or self.holds_added
            or self.holds_gone
            or self.policies_before != self.policies_after
        )

    @property
    def bytes_given_back(self) -> int:
        """Storage the new policies let go that the base keeps (unknown sizes count as 0)."""
        return sum(s.storage_bytes or 0 for s in self.of("stops keeping"))

    @property
    def bytes_newly_kept(self) -> int:
        """Storage the new policies keep that the base lets go."""
        return sum(s.storage_bytes or 0 for s in self.of("newly keeps"))

    @property
    def weight(self) -> tuple[int, int, int]:
        """How much changes, to list the largest first: snapshots no longer kept, bytes,
        then every shift."""
        return (len(self.of("stops keeping")), self.bytes_given_back, len(self.shifts))


def compare(before_plan: ClusterPlan, after_plan: ClusterPlan) -> ClusterDiff:
    """The difference the new policies (``after_plan``) make to one cluster planned under
    the base policies (``before_plan``), both from one walk and one ``now``."""
    before, after = before_plan.decided, after_plan.decided
    by_id = {d.snapshot.id: d for d in before.decisions}
    advisory = after.target.kind == "config-server"
    shifts = [
        shift
        for d in after.decisions
        if (was := by_id.get(d.snapshot.id)) is not None
        and (shift := _shift(was, d, advisory=advisory)) is not None
    ]
    shifts.sort(key=lambda s: (s.created, s.snapshot_id), reverse=True)
    shifts.sort(key=lambda s: SHIFTS.index(s.shift))  # stable: newest first within a shift
    return ClusterDiff(
        after.target,
        list(before.policies),
        list(after.policies),
        shifts,
        holds_added=[h for h in after.holds if not _has(before.holds, h)],
        holds_gone=[h for h in before.holds if not _has(after.holds, h)],
        errors=sorted(set(before.errors) | set(after.errors)),
        holds_before=list(before.holds),
        holds_after=list(after.holds),
        ladder_before=_ladder(before_plan),
        ladder_after=_ladder(after_plan),
    )


def _shift(before: Decision, after: Decision, *, advisory: bool) -> SnapshotShift | None:
    was, now = fate(before, advisory=advisory), fate(after, advisory=advisory)
    shift: Shift | None = None
    if (was == "kept" and now != "kept") or (now == "let go" and was != "let go"):
        shift = "stops keeping"
    elif now == "kept" and was != "kept":
        shift = "newly keeps"
    elif was == now == "kept" and (before.state == "protected") != (after.state == "protected"):
        shift = "newly protects" if after.state == "protected" else "stops protecting"
    if shift is None:
        return None
    s = after.snapshot
    return SnapshotShift(
        s.id,
        s.created,
        s.storage_bytes,
        shift,
        was,
        now,
        after.expires_after if now == "let go" else None,
        after.held,
        _why(before),
        _why(after),
    )


def _why(decision: Decision) -> str:
    """The first reason of a decision in words (the state when it has none)."""
    return describe(decision.reasons[0]) if decision.reasons else decision.state


def _ladder(plan: ClusterPlan) -> Ladder | None:
    # What the policies do, not what a gate lets through today: the held changes count as
    # sent, or a first run's held plan would show two policies keeping the same.
    r = plan.restorable
    if r is None:
        return None
    return r.ladder if r.if_approved is None else r.if_approved


def twin(holds: Sequence[Hold], hold: Hold) -> Hold | None:
    """The hold of ``holds`` that is ``hold`` on the other side, or None. By kind and alert,
    not by words: a fraction hold's reason says the fraction, which differs between the
    sides while the hold is the same."""
    return next((h for h in holds if (h.kind, h.alert_id) == (hold.kind, hold.alert_id)), None)


def _has(holds: Sequence[Hold], hold: Hold) -> bool:
    return twin(holds, hold) is not None
