"""The planner's vocabulary: what it reads of a snapshot, what it decides, what it sends.

A ``Decision`` exists for every snapshot (it streams to decisions.jsonl); a ``Change`` only
for the PATCHes a plan will send. ``state`` says what the snapshot is to the policy, and
``action`` what the plan does about it (docs/glossary.md defines each word).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, NotRequired

import msgspec
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from retention.core.freshness import Freshness
from retention.core.ids import id_problem
from retention.core.policy.holdrecords import HoldRecordTerms
from retention.core.restorepoints import Ladder
from retention.core.snapshot import (
    Kind,
    SnapshotFacts,
    SnapshotPatch,
    StateText,
    state_document,
)
from retention.core.timestamps import AwareUtcDatetime, format_timestamp

State = Literal[
    "incomplete",  # still being created: never counted, never touched
    "awaiting-deletion",  # expiry passed: the API forbids editing it
    "inconsistent",  # possibly inconsistent or missing shards: not counted
    "unmatched",  # no policy matches its cluster: never changed
    "protected",  # a protect rule holds it (doNotDelete)
    "manual-hold",  # doNotDelete set by someone else, no protect rule for it
    "kept",  # a keep rule (or a safety gate) keeps it
    "unkept",  # no rule keeps it: it expires after the grace period
]
Action = Literal["none", "protect", "extend", "shorten", "delete", "release"]
ChangeAction = Literal["protect", "extend", "release", "shorten", "delete"]
# The actions that send a PATCH, in the order summaries and reports list them.
CHANGE_ACTIONS: tuple[ChangeAction, ...] = ("protect", "extend", "shorten", "delete", "release")
# The order the executor sends a cluster's changes in: what keeps a snapshot first, what
# takes a hold away next, what shortens last.
SEND_ORDER: dict[str, int] = {"protect": 0, "extend": 1, "release": 2, "shorten": 3, "delete": 4}


def is_destructive(action: str, kept: bool) -> bool:
    """The one definition of a destructive change: it shortens or deletes, or it lifts a
    hold from a snapshot no rule keeps. A release of a kept snapshot writes an expiry at or
    beyond its horizon: it takes nothing away, so a safety gate does not hold it."""
    return action in ("shorten", "delete") or (action == "release" and not kept)


@with_config(ConfigDict(extra="forbid"))
class HoldRecordNote(TypedDict):
    """The hold record of ``protect.ids`` behind a reason: why the snapshot is held, the
    ticket, and the end as the policy writes it (``until``) and as an instant (``ends``)."""

    reason: str
    ticket: str | None
    until: str | None
    ends: AwareUtcDatetime | None


@with_config(ConfigDict(extra="forbid"))
class Reason(TypedDict):
    """Why a snapshot got its decision, structured: "production: daily #3 of 7, until ...".

    A keep or protect rule names its policy, the rule, which of the rule's snapshots this
    is (``counter``, newest first), the rule's count (``of``, -1 unlimited) and until when
    the rule keeps it (``horizon``). The planner's own reasons (safety gates, states) have
    no policy, and a rule that says what they are. A hold record of ``protect.ids`` (in
    force, rule ``ids``; or ended, rule ``hold-ended``) comes with its ``hold``; plans
    written before hold records lack the key, as do all other reasons.
    """

    policy: str | None
    rule: str
    counter: int | None
    of: int | None
    horizon: AwareUtcDatetime | None
    text: str
    hold: NotRequired[HoldRecordNote]


# The rule of the reason a snapshot gets when a hold record of its policy has ended.
HOLD_RECORD_ENDED = "hold-ended"


def note(rule: str, text: str, policy: str | None = None) -> Reason:
    """A reason that is not a counted rule: a state, a safety gate, a setting."""
    return Reason(policy=policy, rule=rule, counter=None, of=None, horizon=None, text=text)


def hold_record_note(record: HoldRecordTerms) -> HoldRecordNote:
    """The plan's record of a hold record."""
    return HoldRecordNote(
        reason=record.reason, ticket=record.ticket, until=record.until, ends=record.ends
    )


def ended_reason(policy: str, record: HoldRecordTerms) -> Reason:
    """The reason a snapshot gets when a hold record of ``policy`` on it has ended: it says
    so, since the snapshot may still carry the doNotDelete the record gave it."""
    reason = note(HOLD_RECORD_ENDED, f"protect: {record.ended_words}", policy)
    reason["hold"] = hold_record_note(record)
    return reason


def describe(reason: Reason) -> str:
    """A reason in one line of words, e.g. ``production: daily #3 of 7, until 2026-12-01``."""
    words = reason["text"]
    if reason["counter"]:
        of = reason["of"]
        total = "" if of is None or of == 0 else " of unlimited" if of == -1 else f" of {of}"
        words = f"{reason['rule']} #{reason['counter']}{total} ({reason['text']})"
    if reason["horizon"] is not None:
        words += f", until {format_timestamp(reason['horizon'])}"
    return f"{reason['policy']}: {words}" if reason["policy"] else words


class SnapshotView(msgspec.Struct, frozen=True, gc=False):
    """The fields of a snapshot the planner reads (cluster or config-server)."""

    # A msgspec struct, not a dataclass: a plan makes one per snapshot of the fleet, and a
    # frozen dataclass takes twelve times as long to build (benchmarks/core.py).

    id: str
    created: datetime
    complete: bool
    do_not_delete: bool
    expires: datetime | None
    consistent: bool = True
    storage_bytes: int | None = None  # the parts' storageSizeBytes, when they say

    @classmethod
    def of(cls, snapshot: SnapshotFacts) -> SnapshotView:
        """The view of an API snapshot (walked, or read alone)."""
        return cls(
            snapshot.id,
            snapshot.created_at,
            snapshot.complete,
            snapshot.do_not_delete,
            None if snapshot.do_not_delete else snapshot.expires,
            snapshot.is_consistent,
            snapshot.storage_bytes,
        )

    def observed(self) -> StateText:
        """doNotDelete and expires as observed, for compare-and-swap at apply time."""
        return state_document(self.do_not_delete, self.expires)


@dataclass(frozen=True)
class Member:
    """A row of the clusters list that belongs to a sharded cluster and is not walked on
    its own: a shard, or the config-server replica set. Its snapshots are the cluster's."""

    cluster_id: str
    type_name: str | None
    shard_name: str | None = None
    replica_set_name: str | None = None


@dataclass(frozen=True)
class Target:
    """A cluster or a legacy config server of a project, with the names alerts may use."""

    project_id: str
    cluster_id: str
    name: str
    kind: Kind = "cluster"
    replica_set_name: str | None = None
    type_name: str | None = None
    members: tuple[Member, ...] = ()

    def id_problem(self) -> str | None:
        """Why a plan cannot carry this target's id (retention.core.ids), in a sentence that
        names the id; None when it can. Such a target is not walked and is held."""
        problem = id_problem(self.cluster_id)
        if problem is None:
            return None
        what = "cluster" if self.kind == "cluster" else "config server"
        return (
            f"{what} id {self.cluster_id!r} cannot be carried by a plan ({problem}): "
            "not walked, nothing of it is changed"
        )


@dataclass(frozen=True)
class AlertView:
    """An OPEN alert that may hold a cluster's destructive changes."""

    id: str
    event_type: str
    cluster_id: str | None = None
    cluster_name: str | None = None
    replica_set_name: str | None = None

    def names(self, target: Target) -> bool:
        """True when the alert names the target by id, cluster name or replica-set name, or
        names one of its members: an alert on a shard's replica set holds the sharded
        cluster, whose snapshots hold that shard's data."""
        ids = {target.cluster_id, *(m.cluster_id for m in target.members)}
        sets = {target.replica_set_name, target.name, *(m.replica_set_name for m in target.members)}
        return (
            (self.cluster_id is not None and self.cluster_id in ids)
            or (self.cluster_name is not None and self.cluster_name == target.name)
            or (self.replica_set_name is not None and self.replica_set_name in sets)
        )


@dataclass(frozen=True)
class Hold:
    """Why a cluster's destructive changes are held for a human."""

    kind: Literal["alert", "max_expire_fraction", "walk", "id", "outside"]
    reason: str
    alert_id: str | None = None
    setting: str | None = None  # where the setting that holds is written (None: walk, id)


class Decision(msgspec.Struct, frozen=True):
    """What the plan decided for one snapshot, and why (a struct, as SnapshotView is, for
    the same reason). Frozen: a gate that changes a decision makes a new one, so what decide
    returned stays as it was. Its reasons and policies are lists, as the plan file's records
    take them, and are never changed either."""

    snapshot: SnapshotView
    state: State
    action: Action = "none"
    reasons: list[Reason] = msgspec.field(default_factory=list)
    policies: list[str] = msgspec.field(default_factory=list)
    expires_after: datetime | None = None
    patch: SnapshotPatch | None = None
    held: str | None = None
    advisory: bool = False

    @property
    def destructive(self) -> bool:
        """Shortening, deleting, or lifting a hold from a snapshot no rule keeps."""
        return is_destructive(self.action, kept=self.state != "unkept")

    @property
    def sends(self) -> bool:
        """True when a PATCH goes to the API for this decision."""
        return self.patch is not None and self.held is None and not self.advisory

    @property
    def listed_as(self) -> str | None:
        """How the plan counts and lists the change: its action when it is sent, "advisory"
        for a config server's (never sent, held or not), "held" when a gate holds it, None
        when there is no change."""
        if self.action == "none":
            return None
        return "advisory" if self.advisory else "held" if self.held else self.action


@dataclass(frozen=True)
class HoldRecordView:
    """A hold record (an entry of ``protect.ids`` written as a mapping) of a policy that
    matches the cluster, and what became of it here: whether it is in force at the plan's
    time, and the state of its snapshot (None when the cluster has no snapshot of that id)."""

    policy: str
    index: int  # its place in the policy's protect.ids
    record: HoldRecordTerms
    setting: str  # where it is written, FILE:LINE
    in_force: bool
    state: State | None = None


@dataclass(frozen=True)
class ClusterView:
    """What the planner reads of one cluster (or config server): its snapshots, its
    project's OPEN alerts, and why part of that could not be read: its walk failed
    (``walk_error``: some snapshots may be missing) or its project's alerts could not be
    read (``alerts_unread``: every snapshot is there). Either holds its destructive changes."""

    target: Target
    snapshots: Sequence[SnapshotView] = ()
    alerts: Sequence[AlertView] = ()
    walk_error: str | None = None
    alerts_unread: str | None = None
    # Why the ledger says it changed outside retention since the last run (None: it did
    # not, or no ledger was asked): a hold when a policy says safety.hold_on_outside_change.
    outside: str | None = None


@dataclass(frozen=True)
class ClusterDecisions:
    """What ``decide`` made of one cluster or config server: a decision per snapshot (newest
    first), its holds and errors, and what its merged policies say."""

    target: Target
    decisions: tuple[Decision, ...] = ()
    holds: tuple[Hold, ...] = ()
    errors: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    # The merged policies' grace in seconds (every destructive change of the cluster gets at
    # least this much at send time) and whether they all allow lifting doNotDelete.
    grace_seconds: int = 0
    release_protection: bool = False
    # The hold records of the cluster's policies (every one, found here or not).
    hold_records: tuple[HoldRecordView, ...] = ()
    # What the policies expect of its newest restorable snapshot (None: its own cadence).
    newest_within: timedelta | None = None
    # Every snapshot was read: neither a failed walk nor an id a plan cannot carry left
    # some out. Only then are its restore points described.
    walked: bool = True


@dataclass(frozen=True)
class Restorable:
    """What a cluster can be restored to once its plan is applied as it stands (held
    changes not sent): the ladder of its restore points, and how fresh its newest
    restorable snapshot is (None when not checked). A cluster with held changes also has
    its ladder ``today`` and ``if_approved`` (held changes sent), for the person deciding."""

    ladder: Ladder
    freshness: Freshness | None
    today: Ladder | None = None
    if_approved: Ladder | None = None


@dataclass(frozen=True)
class ClusterPlan:
    """One cluster's plan as the plan file holds it: its decisions and what it can be
    restored to (None when its snapshots were not all read)."""

    decided: ClusterDecisions
    restorable: Restorable | None = None
