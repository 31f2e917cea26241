"""The decision model: one cluster's snapshots, the policies that match it, its open alerts
and ``now`` in; a decision per snapshot out. Pure: no I/O, no clock. (docs/policies.md tells
it to a policy's author; docs/glossary.md names each state and action.)

    snapshot                                  decision                 PATCH body
    complete: false                           skip (incomplete)        none
    expires <= now, not protected             skip (awaiting deletion) none
    possibly inconsistent / missing shards    not counted; unchanged unless inconsistent: expire
    in protect, not yet protected             protect                  {"doNotDelete": true}
    kept, expires sooner than R(s)            extend                   {"expires": W(s)}
    kept, expires >= R(s) or none             unchanged (never shortened)
    unkept, expires later than now+grace/none shorten / delete         {"expires": now + grace}
    unkept, already expiring sooner           unchanged
    protected, not in protect                 unchanged (manual hold) unless release_protection:
                                              {"doNotDelete": false, "expires": W(s) or now+grace}

An extend (or a release of a kept snapshot) writes W(s) = max(H, now + 2L): when the lease
makes it later than every rule's horizon H, a "lease" reason says so and gives W, so no
reason's date is left to contradict the one written (a counted rule can keep a snapshot past
its calendar horizon: monthly 12 counts months that have a snapshot).

A hold record of protect.ids protects while now is before its end; once it has ended, its
snapshot is decided as if it were not listed (the doNotDelete it got stays unless
release_protection lifts it), and its reasons say the hold ended.

Then the safety gates: min_keep turns the newest unkept snapshots back into kept ones;
max_expire_fraction, matching OPEN alerts and a failed walk hold every destructive change of
the cluster (protect and extend still go ahead; retention.core.gates). Config-server
decisions are advisory.

Ids a plan cannot carry (retention.core.ids) are held too: a target with such an id is
not walked and gets only its hold; a snapshot with one gets no change, and holds the
destructive changes of its cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Literal

import msgspec

from retention.core.gates import gate_holds, held, hold_uncarried
from retention.core.horizon import Lease, horizon
from retention.core.merged import Merged
from retention.core.model import (
    ClusterDecisions,
    ClusterView,
    Decision,
    Hold,
    HoldRecordView,
    Reason,
    SnapshotView,
    ended_reason,
    hold_record_note,
    note,
)
from retention.core.policy.engine import evaluate
from retention.core.policy.holdrecords import ended
from retention.core.policy.loader import LoadedPolicy
from retention.core.policy.spec import Item, Match
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import ceil_to_second, format_timestamp

# Why the rules do not count a snapshot (each is also the state it is decided as).
Uncounted = Literal["incomplete", "awaiting-deletion", "inconsistent"]

_EXPIRED = note(
    "awaiting-deletion", "its expiry has passed; the API forbids editing it (awaiting deletion)"
)
_EXPIRING = note("expiring", "already expires within the grace period")
_NO_RULE = note("no-rule", "no keep rule matches")


@dataclass(frozen=True)
class _Context:
    """What every decision of one cluster shares."""

    merged: Merged
    now: datetime
    lease: Lease
    # The cluster's policies: an unkept snapshot is the verdict of all of them.
    names: list[str]
    # PATCH bodies are immutable and most of a cluster's share one expiry (now + grace):
    # building each anew was a third of decide()'s time.
    patches: dict[datetime, SnapshotPatch]
    grace_patch: SnapshotPatch  # the body for merged.grace_until

    def expire_at(self, when: datetime) -> SnapshotPatch:
        """The body that sets ``expires`` to ``when`` (one value object per expiry)."""
        if when is self.merged.grace_until:  # most of a cluster's: no datetime to hash
            return self.grace_patch
        patch = self.patches.get(when)
        if patch is None:
            patch = self.patches[when] = SnapshotPatch.expire_at(when)
        return patch


@dataclass
class _Verdicts:
    """What the policies said about the counted snapshots."""

    kept: dict[str, list[Reason]]
    protected: dict[str, list[Reason]]
    horizons: dict[str, datetime | None]
    policies: dict[str, set[str]]
    # Hold records that have ended, by snapshot: said in the decision unless it is protected.
    ended: dict[str, list[Reason]]


def decide(
    cluster: ClusterView,
    policies: Sequence[LoadedPolicy],
    *,
    now: datetime,
    lease_for: timedelta,
    reasons: bool = True,
) -> ClusterDecisions:
    """Decide every snapshot of one cluster (or config server). See the module docstring.
    ``reasons`` False leaves out the rules' reasons (a forecast's steps read only the states
    and the changes: the same with or without them). A failed walk or unread alerts
    (``cluster.walk_error``, ``cluster.alerts_unread``) hold its destructive changes.
    Describing its restore points is retention.core.restorable's."""
    target = cluster.target
    ordered = newest_first_by_id(cluster.snapshots)
    names = tuple(sorted(p.name for p in policies))
    problem = cluster.walk_error or cluster.alerts_unread
    errors = (problem,) if problem else ()
    walked = cluster.walk_error is None
    if (unfit := target.id_problem()) is not None:
        # Held even when no policy matches it: an id like this is worth a person's look.
        hold = Hold("id", unfit)
        return ClusterDecisions(target, (), (hold,), errors, names, walked=False)
    if not policies:
        unmatched = note("unmatched", "no policy matches this cluster")
        each = tuple(Decision(s, "unmatched", reasons=[unmatched]) for s in ordered)
        return ClusterDecisions(target, each, (), errors, names, walked=walked)
    merged = Merged.of(policies, now)
    verdicts = _evaluate(counted_items(ordered, now), policies, now, reasons=reasons)
    ctx = _Context(
        merged,
        now,
        Lease.at(now, lease_for),
        list(names),
        {},
        SnapshotPatch.expire_at(merged.grace_until),
    )
    decisions = _min_keep([_decide_one(s, verdicts, ctx) for s in ordered], ctx)
    decisions = _say_ended(decisions, verdicts)
    records = hold_records(policies, decisions, now)
    decisions, uncarried = hold_uncarried(decisions)
    holds = [] if uncarried is None else [uncarried]
    holds += gate_holds(decisions, target, merged, cluster.alerts, problem, cluster.outside)
    decisions = held(decisions, holds)
    if target.kind == "config-server":
        decisions = [
            msgspec.structs.replace(d, advisory=True) if d.action != "none" else d
            for d in decisions
        ]
    return ClusterDecisions(
        target,
        tuple(decisions),
        tuple(holds),
        errors,
        names,
        grace_seconds=int((merged.grace_until - now).total_seconds()),
        release_protection=merged.release_protection,
        hold_records=tuple(records),
        newest_within=merged.newest_within,
        walked=walked,
    )


def newest_first_by_id(snapshots: Sequence[SnapshotView]) -> list[SnapshotView]:
    """A cluster's snapshots in the order of its decisions: newest first, equal times by id
    (the greater first), so a plan does not depend on the order the API listed them in. The
    engine's walk (``engine.newest_first``) keeps the order it is given for equal times, so
    this one decides which of them a bucket keeps."""
    return sorted(snapshots, key=lambda s: (s.created, s.id), reverse=True)


def uncounted(snapshot: SnapshotView, now: datetime) -> Uncounted | None:
    """Why the rules do not count a snapshot, or None when they do: one still being created,
    one awaiting deletion (the API refuses to edit it) and a possibly inconsistent one
    neither use up a count nor fill a bucket."""
    if not snapshot.complete:
        return "incomplete"
    if awaiting_deletion(snapshot, now):
        return "awaiting-deletion"
    return None if snapshot.consistent else "inconsistent"


def counted_items(ordered: Sequence[SnapshotView], now: datetime) -> list[Item]:
    """What the engine is given of a cluster (``ordered`` as newest_first_by_id sorts it): the
    counted snapshots, in that order."""
    return [Item(s.id, s.created) for s in ordered if uncounted(s, now) is None]


def rule_reason(
    policy: str, zone: tzinfo, match: Match, created: datetime, *, keeping: bool
) -> Reason:
    """The reason a plan records for one rule of ``policy`` that keeps (or, ``keeping``
    False, protects) a snapshot created at ``created``."""
    reason = Reason(
        policy=policy,
        rule=match.rule,
        counter=match.counter or None,
        of=match.count if match.counter else None,
        # A protect rule's snapshot gets doNotDelete: no horizon applies to it.
        horizon=horizon(match, created, zone) if keeping else None,
        text=match.text if keeping else f"protect: {match.text}",
    )
    if match.record is not None:
        reason["hold"] = hold_record_note(match.record)
    return reason


def hold_records(
    policies: Sequence[LoadedPolicy], decisions: Sequence[Decision], now: datetime
) -> list[HoldRecordView]:
    """Every hold record of ``policies``, in force at ``now`` or not, with the state of its
    snapshot among ``decisions`` (None when the cluster has no snapshot of that id)."""
    records = [
        (loaded, index, record)
        for loaded in sorted(policies, key=lambda p: p.name)
        if loaded.policy.protect is not None
        for index, record in loaded.policy.protect.records
    ]
    if not records:  # the usual cluster: no pass over its decisions
        return []
    wanted = {record.id for _, _, record in records}
    states = {d.snapshot.id: d.state for d in decisions if d.snapshot.id in wanted}
    return [
        HoldRecordView(
            loaded.name,
            index,
            terms,
            loaded.where(f"protect.ids.{index}"),
            terms.in_force(now),
            states.get(record.id),
        )
        for loaded, index, record in records
        for terms in (record.to_engine(),)
    ]


def awaiting_deletion(snapshot: SnapshotView, now: datetime) -> bool:
    """True when its expiry has passed and nothing protects it: the service deletes it."""
    return not snapshot.do_not_delete and snapshot.expires is not None and snapshot.expires <= now


def _evaluate(
    items: list[Item], policies: Sequence[LoadedPolicy], now: datetime, *, reasons: bool
) -> _Verdicts:
    verdicts = _Verdicts({}, {}, {}, {}, {})
    for loaded in sorted(policies, key=lambda p: p.name):
        policy, zone = loaded.policy, loaded.policy.zone
        protect = policy.protect_spec()
        for snapshot_id, record in ended(protect.ids, now).items():
            verdicts.ended.setdefault(snapshot_id, []).append(ended_reason(policy.name, record))
        rules = ((policy.keep_spec(), verdicts.kept), (protect, verdicts.protected))
        for spec, into in rules:
            if spec.empty:
                continue
            keeping = into is verdicts.kept
            result = evaluate(items, spec, now, zone)
            for item in result.keep:
                matches = result.reasons[item.id].matches
                verdicts.policies.setdefault(item.id, set()).add(policy.name)
                found = into.setdefault(item.id, [])
                if reasons:
                    made = [
                        rule_reason(policy.name, zone, m, item.time, keeping=keeping)
                        for m in matches
                    ]
                    found.extend(made)
                    ends: Iterable[datetime | None] = (r["horizon"] for r in made)
                else:
                    ends = (horizon(m, item.time, zone) for m in matches) if keeping else ()
                if keeping:
                    # The most retentive horizon of every rule, of every policy, that keeps it.
                    verdicts.horizons[item.id] = _latest(verdicts.horizons.get(item.id), ends)
    return verdicts


def _latest(first: datetime | None, others: Iterable[datetime | None]) -> datetime | None:
    """The latest of the times that are not None (None: none is)."""
    for other in others:
        if other is not None and (first is None or other > first):
            first = other
    return first


def _decide_one(s: SnapshotView, v: _Verdicts, ctx: _Context) -> Decision:  # noqa: PLR0911
    # One return per row of the table in the module docstring.
    merged, now = ctx.merged, ctx.now
    if not s.complete:
        reason = note("incomplete", "still being created: not counted, not touched")
        return Decision(s, "incomplete", reasons=[reason])
    if awaiting_deletion(s, now):
        # The observed expiry is in every decision record; the reason need not repeat it.
        return Decision(s, "awaiting-deletion", reasons=[_EXPIRED])
    if not s.consistent:
        if not merged.expire_inconsistent:
            text = "possibly inconsistent or missing shards: not counted"
            return Decision(s, "inconsistent", reasons=[note("inconsistent", text)])
        if s.do_not_delete:
            # A manual hold outranks inconsistent: expire; only release_protection lifts it.
            return _manual_hold(s, v, ctx, [])
        text = "possibly inconsistent or missing shards; inconsistent: expire"
        return _unkept(s, ctx, [note("inconsistent", text)])
    if s.id not in v.policies:  # no rule kept or protected it: most of a long history
        if s.do_not_delete:
            return _manual_hold(s, v, ctx, [])
        return _unkept(s, ctx, [_NO_RULE])
    policies = sorted(v.policies[s.id])
    if s.id in v.protected:
        reasons = v.protected[s.id] + v.kept.get(s.id, [])
        if s.do_not_delete:
            return Decision(s, "protected", reasons=reasons, policies=policies)
        return Decision(s, "protected", "protect", reasons, policies, patch=SnapshotPatch.protect())
    if s.do_not_delete:
        return _manual_hold(s, v, ctx, policies)
    if s.id in v.kept:
        return _kept(s, v.kept[s.id], v.horizons.get(s.id), ctx, policies)
    return _unkept(s, ctx, [_NO_RULE])


def _kept(
    s: SnapshotView,
    reasons: list[Reason],
    horizon_at: datetime | None,
    ctx: _Context,
    policies: list[str],
) -> Decision:
    required, written = ctx.lease.required_and_written(horizon_at)
    # Nothing written may be earlier than now + grace, kept or not: every change leaves a
    # person the grace period to notice and undo it.
    grace_until = ctx.merged.grace_until
    required, written = max(required, grace_until), max(written, grace_until)
    if s.expires is None or s.expires >= required:
        return Decision(s, "kept", reasons=reasons, policies=policies, expires_after=s.expires)
    return Decision(
        s, "kept", "extend", _with_lease(reasons, horizon_at, written, ctx), policies,
        expires_after=written, patch=ctx.expire_at(written),
    )  # fmt: skip


def _with_lease(
    reasons: list[Reason], horizon_at: datetime | None, written: datetime, ctx: _Context
) -> list[Reason]:
    """``reasons`` and, when the expiry ``written`` is later than the rules' horizon (the
    latest date they give), the reason it is: the lease (or the grace period), with the
    date written as its horizon. ``reasons`` alone when it has no rule's date (no horizon,
    or a forecast's step, which leaves the rules' reasons out)."""
    # Written is rounded up to the second: a horizon with a fraction of one is still its date.
    if horizon_at is None or written <= ceil_to_second(horizon_at) or not reasons:
        return reasons
    ahead = "two leases ahead"
    if written == ctx.merged.grace_until and written > ctx.lease.doubled:
        ahead = "the grace period ahead"
    when = format_timestamp(horizon_at)
    if horizon_at <= ctx.now:
        # A counted rule keeps it still: it counts back over the snapshots there are.
        why = f"as the rules' horizon {when} has passed (they count the snapshots there are)"
    else:
        why = f"past the rules' horizon {when}"
    text = f"lease: kept {ahead}, {why}"
    lease = Reason(policy=None, rule="lease", counter=None, of=None, horizon=written, text=text)
    return [*reasons, lease]


def _unkept(s: SnapshotView, ctx: _Context, reasons: list[Reason]) -> Decision:
    until, names = ctx.merged.grace_until, list(ctx.names)
    if s.expires is not None and s.expires <= until:
        return Decision(
            s, "unkept", reasons=[*reasons, _EXPIRING], policies=names, expires_after=s.expires
        )
    return Decision(
        s,
        "unkept",
        "delete" if ctx.merged.grace_is_zero else "shorten",
        reasons,
        names,
        expires_after=until,
        patch=ctx.expire_at(until),
    )


def _manual_hold(s: SnapshotView, v: _Verdicts, ctx: _Context, policies: list[str]) -> Decision:
    merged = ctx.merged
    if not merged.release_protection:
        why = note(
            "manual-hold", "doNotDelete was set outside these policies; release_protection is off"
        )
        return Decision(s, "manual-hold", reasons=[*v.kept.get(s.id, []), why], policies=policies)
    if s.id in v.kept:
        horizon_at = v.horizons.get(s.id)
        _, written = ctx.lease.required_and_written(horizon_at)
        written = max(written, merged.grace_until)
        lifted = note("release_protection", "release_protection: hold lifted, expiry set")
        reasons = [*_with_lease(v.kept[s.id], horizon_at, written, ctx), lifted]
        return Decision(
            s, "kept", "release", reasons, policies, expires_after=written,
            patch=SnapshotPatch.release(written),
        )  # fmt: skip
    lifted = note("release_protection", "release_protection: hold lifted")
    return Decision(
        s, "unkept", "release", [_NO_RULE, lifted],
        list(ctx.names), expires_after=merged.grace_until,
        patch=SnapshotPatch.release(merged.grace_until),
    )  # fmt: skip


def _say_ended(decisions: list[Decision], v: _Verdicts) -> list[Decision]:
    """``decisions`` with the ended hold records of a snapshot first among its reasons,
    unless another rule protects it (then the hold's end changes nothing) or the rules did
    not count it."""
    if not v.ended:
        return decisions
    return [
        msgspec.structs.replace(d, reasons=[*notes, *d.reasons])
        if (notes := v.ended.get(d.snapshot.id)) and d.state in ("kept", "unkept", "manual-hold")
        else d
        for d in decisions
    ]


def _min_keep(decisions: list[Decision], ctx: _Context) -> list[Decision]:
    """``decisions`` with the newest unkept, counted snapshots kept until min_keep survive
    (or all there are).

    A survivor is complete and consistent: a possibly inconsistent snapshot under a hold
    survives, but no one can restore the cluster from it, so it does not count."""
    survivors = sum(
        d.state in ("kept", "protected", "manual-hold") and d.snapshot.consistent for d in decisions
    )
    missing = ctx.merged.min_keep - survivors
    if missing <= 0:
        return decisions
    kept = list(decisions)
    for i, d in enumerate(decisions):
        if missing <= 0:
            break
        if d.state != "unkept" or not d.snapshot.consistent:
            continue
        if d.snapshot.do_not_delete:
            # A manual hold release_protection would lift: the safest way to keep it is to leave it.
            reasons = [*d.reasons, note("min_keep", "safety: min_keep: hold left in place")]
            kept[i] = Decision(d.snapshot, "manual-hold", reasons=reasons)
        else:
            keeps = note("min_keep", f"safety: min_keep {ctx.merged.min_keep}")
            kept[i] = _kept(d.snapshot, [keeps], None, ctx, [])
        missing -= 1
    return kept
