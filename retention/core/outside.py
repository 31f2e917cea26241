"""What changed since the ledger last looked: one cluster's walk against what the ledger knew
of its snapshots, and the targets that are gone.

Pure: the ledger (retention.ledger) reads what it knew and writes what this finds; here the
two are compared. A change is ours when a run of ours sent it (its intent is pending in the
ledger until a walk sees it); anything else that changed ``expires`` or ``doNotDelete`` was
changed outside retention. A snapshot that is no longer listed expired when its last known
expiry had passed, and was deleted early when it had not (a kept snapshot with no expiry
counts as not passed). A cluster whose every snapshot went at once, or that discovery no
longer finds, is gone: one finding for the cluster, not one per snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal, NamedTuple

from retention.core.model import AlertView, SnapshotView, Target
from retention.core.planfile import OutsideChangeEntry, RetainedEntry
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted

OutsideKind = Literal["changed", "deleted-early", "gone"]

# The audit alerts the service opens for each kind (the spec's Backup event types): the
# replica-set type and the sharded-cluster type of the same event.
AUDIT_TYPES: Mapping[OutsideKind, tuple[str, ...]] = {
    "changed": ("SNAPSHOT_EXPIRY_UPDATED_AUDIT", "CLUSTERSHOT_EXPIRY_UPDATED_AUDIT"),
    "deleted-early": ("SNAPSHOT_DELETED_AUDIT", "CLUSTERSHOT_DELETED_AUDIT"),
    "gone": (
        "RS_STATE_CHANGED_AUDIT",
        "CLUSTER_STATE_CHANGED_AUDIT",
        "SNAPSHOT_DELETED_AUDIT",
        "CLUSTERSHOT_DELETED_AUDIT",
    ),
}


# Retained and Known are named tuples, not frozen dataclasses: a plan makes one or two of
# each for every snapshot the ledger knows (600,000 for the bench fleet), on its main
# process, and a tuple is built three times faster.
class Retained(NamedTuple):
    """A snapshot's retention fields, as the ledger keeps them."""

    complete: bool
    expires: datetime | None
    do_not_delete: bool

    @classmethod
    def of(cls, snapshot: SnapshotView) -> Retained:
        """The fields of a walked snapshot."""
        return cls(snapshot.complete, snapshot.expires, snapshot.do_not_delete)

    def same_retention(self, other: Retained) -> bool:
        """True when ``expires`` and ``doNotDelete`` agree (an expiry under doNotDelete does
        not count: the API ignores it)."""
        if self.do_not_delete or other.do_not_delete:
            return self.do_not_delete == other.do_not_delete
        return self.expires == other.expires


class Known(NamedTuple):
    """What the ledger knew of one snapshot: its fields when last seen, and what a run of
    ours sent and no walk has seen since (None: nothing pending)."""

    created: datetime
    last: Retained
    pending: Retained | None = None


@dataclass(frozen=True)
class OutsideChange:
    """One change made outside retention, as the plan and its reports name it."""

    kind: OutsideKind
    project_id: str
    cluster_id: str
    cluster_name: str
    snapshot_id: str | None  # None for a cluster that is gone
    before: Retained | None
    after: Retained | None
    # A gone cluster: how many restore points it had and the newest one's creation.
    restore_points: int = 0
    newest: datetime | None = None
    alert_id: str | None = None


@dataclass(frozen=True)
class Observed:
    """A snapshot whose retention fields moved and the move is not news: completed, or a
    change of ours now seen."""

    snapshot_id: str
    before: Retained
    after: Retained
    ours: bool


@dataclass
class ClusterDrift:
    """One walked cluster against the ledger: what is new, what moved, what went."""

    new: list[SnapshotView] = field(default_factory=list)
    observed: list[Observed] = field(default_factory=list)
    outside: list[OutsideChange] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)  # gone after their expiry: normal
    vanished: list[str] = field(default_factory=list)  # every id no longer listed
    # The walk's digest (retention.ledger.sight.walk_digest), kept for the next plan, and
    # the version of what the ledger knew that it was compared with (None: the walk failed,
    # or the ledger did not know the cluster).
    digest: str | None = None
    version: int | None = None

    @property
    def quiet(self) -> bool:
        """Nothing to write: no snapshot new, moved or gone."""
        return not (self.new or self.observed or self.outside or self.vanished)


def cluster_drift(
    target: Target,
    known: Mapping[str, Known],
    walked: Sequence[SnapshotView],
    now: datetime,
    *,
    unchanged: int = 0,
) -> ClusterDrift:
    """Compare a cluster's complete walk with what the ledger ``known`` of it at ``now``
    (the walk's time). With nothing known the cluster is new: every snapshot is new and
    nothing is drift (the baseline). A walk that failed must not come here: a snapshot it
    did not list is not gone.

    ``unchanged``: how many more snapshots the walk listed exactly as the ledger last knew
    them (the same ``complete``, ``expires`` and ``doNotDelete``), left out of both
    ``known`` and ``walked`` by a caller that compared them first: such a snapshot is
    neither new, moved nor gone, so the answer is the same as with them in."""
    drift = ClusterDrift()
    listed: set[str] = set()
    for snapshot in walked:
        listed.add(snapshot.id)
        was = known.get(snapshot.id)
        if was is None:
            drift.new.append(snapshot)
            continue
        now_fields = Retained.of(snapshot)
        if now_fields == was.last:
            continue
        ours = was.pending is not None and _as_sent(was.pending, now_fields)
        if ours or was.last.same_retention(now_fields):
            drift.observed.append(Observed(snapshot.id, was.last, now_fields, ours))
        else:
            drift.outside.append(
                OutsideChange(
                    "changed",
                    target.project_id,
                    target.cluster_id,
                    target.name,
                    snapshot.id,
                    was.last,
                    now_fields,
                )
            )
    drift.vanished = sorted(set(known) - listed)
    if not drift.vanished:
        return drift
    if not walked and not unchanged:
        # Every snapshot at once: a terminated backup or a removed cluster.
        drift.outside.append(gone(target, known, now))
        return drift
    for snapshot_id in drift.vanished:
        was = known[snapshot_id]
        if _early(was, now):
            drift.outside.append(
                OutsideChange(
                    "deleted-early",
                    target.project_id,
                    target.cluster_id,
                    target.name,
                    snapshot_id,
                    was.last,
                    None,
                )
            )
        else:
            drift.expired.append(snapshot_id)
    return drift


def _as_sent(pending: Retained, found: Retained) -> bool:
    """Whether ``found`` is what a change of ours that asked ``pending`` left: the same, or
    a later expiry (a destructive expiry goes out as the later of the planned one and the
    grace from the moment it is sent, so a change whose outcome was never recorded, its
    run killed, may have set a later one than it planned)."""
    if pending.same_retention(found):
        return True
    if pending.do_not_delete or found.do_not_delete:
        return False
    return (
        found.expires is not None
        and pending.expires is not None
        and found.expires >= pending.expires
    )


def gone(target: Target, known: Mapping[str, Known], now: datetime) -> OutsideChange:
    """The finding for a cluster whose snapshots all went: the restore points it had that
    had not expired, and its newest."""
    kept = [k for k in known.values() if k.last.complete and _early(k, now)]
    newest = max((k.created for k in kept), default=None)
    return OutsideChange(
        "gone",
        target.project_id,
        target.cluster_id,
        target.name,
        None,
        None,
        None,
        restore_points=len(kept),
        newest=newest,
    )


def _early(was: Known, now: datetime) -> bool:
    """Whether a snapshot that is gone went before its time: complete (a failed snapshot
    the service drops is not a restore point) and protected or not yet expired, as last
    known or as a run of ours set it."""
    if not was.last.complete:
        return False
    fields = [was.last] if was.pending is None else [was.last, was.pending]
    return all(f.do_not_delete or f.expires is None or f.expires > now for f in fields)


def with_alerts(
    changes: Iterable[OutsideChange], alerts: Sequence[AlertView], targets: Mapping[str, Target]
) -> list[OutsideChange]:
    """``changes`` with the id of the service's audit alert that names each one's cluster
    and event (the first by id, when there are several); ``targets`` by cluster id, for
    the names an alert may use."""
    named = []
    for change in changes:
        target = targets.get(change.cluster_id)
        types = AUDIT_TYPES[change.kind]
        match = sorted(
            (a.id for a in alerts if a.event_type in types and target and a.names(target)),
        )
        named.append(change if not match else replace(change, alert_id=match[0]))
    return named


def _expiry(fields: Retained) -> str:
    if fields.do_not_delete:
        return "doNotDelete"
    return "no expiry" if fields.expires is None else f"expires {format_timestamp(fields.expires)}"


def retained_text(entry: RetainedEntry) -> str:
    """A plan's before or after of an outside change, in words (the report's cells)."""
    return _expiry(Retained(entry["complete"], entry["expires"], entry["doNotDelete"]))


def describe(change: OutsideChange) -> str:
    """One change in words, for the terminal, the reports and the notice."""
    where = f"{change.cluster_name}" if change.kind == "gone" else (
        f"snapshot {change.snapshot_id} of {change.cluster_name}"
    )  # fmt: skip
    alert = f" (audit alert {change.alert_id})" if change.alert_id else ""
    if change.kind == "changed" and change.before and change.after:
        return (
            f"{where}: {_expiry(change.before)} -> {_expiry(change.after)}, changed outside "
            f"retention{alert}"
        )
    if change.kind == "deleted-early" and change.before:
        return f"{where}: deleted before its time ({_expiry(change.before)}){alert}"
    newest = f", the newest {format_timestamp(change.newest)}" if change.newest else ""
    points = counted(change.restore_points, "restore point")
    return f"{where}: gone (backup terminated or cluster removed): its {points}{newest}{alert}"


def _retained_entry(fields: Retained | None) -> RetainedEntry | None:
    if fields is None:
        return None
    return {
        "complete": fields.complete,
        "expires": fields.expires,
        "doNotDelete": fields.do_not_delete,
    }


def outside_entry(change: OutsideChange) -> OutsideChangeEntry:
    """plan.json's entry of one change (``outsideChanges``)."""
    entry: OutsideChangeEntry = {
        "kind": change.kind,
        "projectId": change.project_id,
        "clusterId": change.cluster_id,
        "clusterName": change.cluster_name,
        "snapshotId": change.snapshot_id,
        "before": _retained_entry(change.before),
        "after": _retained_entry(change.after),
        "alertId": change.alert_id,
        "text": describe(change),
    }
    if change.kind == "gone":
        entry["restorePoints"] = change.restore_points
        entry["newest"] = change.newest
    return entry


@dataclass(frozen=True)
class Attention:
    """A change made outside retention that an earlier run found and nobody has
    acknowledged yet (``retention ledger ack``)."""

    run: int  # the ledger's run that found it
    since: datetime | None  # when that run started (None: ledger.keep removed its record)


def hold_reason(
    changes: Sequence[OutsideChange], earlier: Attention | None = None, name: str = "CLUSTER"
) -> str | None:
    """Why ``safety.hold_on_outside_change`` holds a cluster with ``changes`` found now
    and ``earlier`` ones not yet acknowledged (None: neither, nothing to hold for)."""
    found = []
    if changes:
        found.append(
            f"{counted(len(changes), 'change')} made outside retention since the last run "
            f"({tally(outside_entry(c) for c in changes)})"
        )
    if earlier is not None:
        when = f" on {format_timestamp(earlier.since)}" if earlier.since else ""
        again = "earlier ones" if changes else "changes made outside retention"
        found.append(f"{again} found{when} (ledger run {earlier.run}), not acknowledged")
    if not found:
        return None
    return (
        f"{' and '.join(found)}: a person should look before anything more is expired, "
        f"then `retention ledger ack {name}`"
    )


# Each kind as changes are counted (one, many); a change of doNotDelete is told apart from
# one of the expiry: protecting or releasing a snapshot is not moving its date.
_WORDS: Mapping[str, tuple[str, str]] = {
    "expiry": ("expiry changed", "expiries changed"),
    "protection": ("protection changed", "protections changed"),
    "deleted-early": ("deleted early", "deleted early"),
    "gone": ("cluster gone", "clusters gone"),
}


def tally(entries: Iterable[OutsideChangeEntry]) -> str:
    """Changes counted by kind, in a fixed order: "2 expiries changed, 1 deleted early"."""
    counts: dict[str, int] = {}
    for entry in entries:
        key = _word_key(entry)
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(
        f"{counts[k]} {one if counts[k] == 1 else many}"
        for k, (one, many) in _WORDS.items()
        if k in counts
    )


def _word_key(entry: OutsideChangeEntry) -> str:
    if entry["kind"] != "changed":
        return entry["kind"]
    before, after = entry["before"], entry["after"]
    if before is not None and after is not None and before["doNotDelete"] != after["doNotDelete"]:
        return "protection"
    return "expiry"
