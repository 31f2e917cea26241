"""What every rule of every matching policy did with one snapshot, for ``retention explain``.

``retention.core.policy.trace`` is fed exactly as ``decide`` feeds ``evaluate``: the
cluster's counted snapshots (``uncounted``) in the order of its decisions
(``newest_first_by_id``), each policy's keep and protect rules in the policy's zone, and the
plan's ``now``. A rule that keeps the snapshot comes with the reason the plan records for
it (``rule_reason``), so explain can show its horizon and tell it apart from the plan's
other reasons; a hold record that has ended comes with the reason the plan records for
that (``ended_reason``). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from retention.core.decide import (
    Uncounted,
    counted_items,
    newest_first_by_id,
    rule_reason,
    uncounted,
)
from retention.core.model import Reason, SnapshotView, ended_reason
from retention.core.policy.loader import LoadedPolicy
from retention.core.policy.model import Policy
from retention.core.policy.spec import Item, KeepSpec
from retention.core.policy.trace import RuleTrace, trace


@dataclass(frozen=True)
class TracedRule:
    """One rule's entry: what the engine says it did and, when it keeps (or protects) the
    snapshot, the reason the plan records for it, horizon included (for an ids entry whose
    hold record has ended, the reason that says so)."""

    trace: RuleTrace
    reason: Reason | None = None


@dataclass(frozen=True)
class PolicyTrace:
    """One policy's rules for the snapshot: its keep rules and its protect rules, each in
    the engine's order (empty when the policy has none)."""

    policy: str
    keep: tuple[TracedRule, ...]
    protect: tuple[TracedRule, ...]


@dataclass(frozen=True)
class SnapshotTrace:
    """Every matching policy's rules for one snapshot (sorted by name), or why no rule saw
    it (``uncounted``; then ``policies`` is empty)."""

    snapshot_id: str
    uncounted: Uncounted | None
    policies: tuple[PolicyTrace, ...] = ()


def trace_snapshot(
    snapshots: Sequence[SnapshotView],
    policies: Sequence[LoadedPolicy],
    snapshot_id: str,
    *,
    now: datetime,
) -> SnapshotTrace:
    """Trace one snapshot of a cluster through ``policies`` as ``decide`` evaluated them at
    ``now``. ``snapshots`` are all of the cluster's. Raises ValueError for an unknown id."""
    ordered = newest_first_by_id(snapshots)
    snapshot = next((s for s in ordered if s.id == snapshot_id), None)
    if snapshot is None:
        raise ValueError(f"no snapshot {snapshot_id!r} among the cluster's {len(ordered)}")
    why = uncounted(snapshot, now)
    if why is not None:
        return SnapshotTrace(snapshot_id, why)
    items = counted_items(ordered, now)
    return SnapshotTrace(
        snapshot_id,
        None,
        tuple(
            _policy(items, loaded.policy, snapshot, now)
            for loaded in sorted(policies, key=lambda p: p.name)
        ),
    )


def _policy(
    items: list[Item], policy: Policy, snapshot: SnapshotView, now: datetime
) -> PolicyTrace:
    return PolicyTrace(
        policy.name,
        _side(items, policy, policy.keep_spec(), snapshot, now, keeping=True),
        _side(items, policy, policy.protect_spec(), snapshot, now, keeping=False),
    )


def _side(
    items: list[Item],
    policy: Policy,
    spec: KeepSpec,
    snapshot: SnapshotView,
    now: datetime,
    *,
    keeping: bool,
) -> tuple[TracedRule, ...]:
    return tuple(
        TracedRule(entry, _reason(policy, entry, snapshot, keeping=keeping))
        for entry in trace(items, spec, now, policy.zone, snapshot.id)
    )


def _reason(
    policy: Policy, entry: RuleTrace, snapshot: SnapshotView, *, keeping: bool
) -> Reason | None:
    if entry.match is not None:
        return rule_reason(policy.name, policy.zone, entry.match, snapshot.created, keeping=keeping)
    if entry.record is not None:
        return ended_reason(policy.name, entry.record)
    return None
