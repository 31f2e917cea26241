"""The per-cluster trace (retention.core.explain): the engine fed as decide feeds it, so the
rules it shows keeping a snapshot are exactly the reasons decide recorded."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retention.core.decide import decide
from retention.core.explain import SnapshotTrace, trace_snapshot
from retention.core.model import ClusterView, Reason, SnapshotView, Target
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.loader import LoadedPolicy
from retention.core.policy.spec import KeepSpec
from tests.support import strategies
from tests.support.examples import examples
from tests.support.planning import loaded_policy
from tests.support.planning import policies as policies_of

NOW = datetime(2026, 11, 21, 12, tzinfo=UTC)
TARGET = Target("p1", "c1", "prod-orders")
LEASE = timedelta(days=2)


def view(sid: str, created: datetime, **fields: Any) -> SnapshotView:
    """A complete, consistent snapshot expiring in 30 days unless told otherwise."""
    fields.setdefault("expires", NOW + timedelta(days=30))
    return SnapshotView(
        sid,
        created,
        fields.pop("complete", True),
        fields.pop("do_not_delete", False),
        fields.pop("expires"),
        fields.pop("consistent", True),
    )


def frozen(reasons: list[Reason]) -> Counter[tuple[tuple[str, Any], ...]]:
    """Reasons as a multiset, so two lists compare whatever their order."""
    return Counter(tuple(sorted(r.items())) for r in reasons)


def traced_reasons(found: SnapshotTrace) -> list[Reason]:
    """The reasons of every rule that keeps or protects the snapshot, of every policy."""
    return [
        rule.reason
        for policy in found.policies
        for rule in (*policy.keep, *policy.protect)
        if rule.reason is not None
    ]


def not_counted(s: SnapshotView) -> str | None:
    """Why the rules skip a snapshot at NOW, as decide's table (retention/core/decide.py) says."""
    if not s.complete:
        return "incomplete"
    if not s.do_not_delete and s.expires is not None and s.expires <= NOW:
        return "awaiting-deletion"
    return None if s.consistent else "inconsistent"


# ---- agreement with decide --------------------------------------------------------------

counts = st.sampled_from([0, 0, 1, 2, 3, -1])
keep_specs = st.builds(
    KeepSpec,
    last=counts,
    daily=counts,
    weekly=counts,
    monthly=counts,
    yearly=st.sampled_from([0, 1, 2]),
    within=st.none() | st.builds(RetentionDuration, days=st.integers(0, 5)),
    within_daily=st.none() | st.builds(RetentionDuration, days=st.integers(0, 9)),
    every=strategies.every_rules(["0 0 * * 0", "0 0 1 * *"], st.sampled_from([1, 3]), max_size=1),
)
policies = policies_of(
    st.none() | keep_specs,
    st.none() | st.builds(KeepSpec, monthly=st.sampled_from([0, 1]), yearly=counts),
    name=st.sampled_from(["alpha", "beta"]),
    release_protection=st.booleans(),
    inconsistent=st.sampled_from(["ignore", "expire"]),
    timezone=st.sampled_from(["UTC", "Europe/Berlin"]),
    min_keep=st.integers(0, 3),
)


@st.composite
def clusters(draw: st.DrawFn) -> list[SnapshotView]:
    """Up to 25 snapshots on a 12-hour grid (equal times are common), in every state."""
    size = draw(st.integers(1, 25))
    return [
        view(
            f"s{n:02d}",
            NOW - timedelta(hours=12 * draw(st.integers(0, 80))),
            complete=draw(st.integers(0, 9)) != 0,
            do_not_delete=draw(st.integers(0, 6)) == 0,
            expires=NOW + timedelta(hours=draw(st.integers(-48, 2000))),
            consistent=draw(st.integers(0, 9)) != 0,
        )
        for n in range(size)
    ]


@given(snapshots=clusters(), chosen=st.lists(policies, max_size=2, unique_by=lambda p: p.name))
@settings(max_examples=examples(300), deadline=None)
def test_the_rules_traced_as_keeping_are_the_reasons_decide_records(
    snapshots: list[SnapshotView], chosen: list[LoadedPolicy]
) -> None:
    """For any cluster and policies, the traced keeping and protecting rules of a counted
    snapshot are decide's rule reasons for it, and an uncounted one is traced as such."""
    plan = decide(ClusterView(TARGET, snapshots), chosen, now=NOW, lease_for=LEASE)

    for decision in plan.decisions:
        found = trace_snapshot(snapshots, chosen, decision.snapshot.id, now=NOW)
        recorded = [r for r in decision.reasons if r["policy"] is not None]
        assert frozen(traced_reasons(found)) == frozen(recorded)
        assert [p.policy for p in found.policies] == (
            [] if found.uncounted else sorted(p.name for p in chosen)
        )
        assert found.uncounted == not_counted(decision.snapshot)
        if chosen and found.uncounted in ("incomplete", "awaiting-deletion"):
            assert decision.state == found.uncounted


# ---- examples ---------------------------------------------------------------------------

GFS = loaded_policy(
    "production",
    keep=KeepSpec(last=1, daily=7, weekly=4),
    protect=KeepSpec(yearly=1),
)
CLUSTER = [
    view("today", NOW - timedelta(hours=9)),  # 2026-11-21 03:00
    view("yesterday-late", NOW - timedelta(hours=22)),  # 2026-11-20 14:00
    view("yesterday-early", NOW - timedelta(hours=30)),  # 2026-11-20 06:00
    view("running", NOW - timedelta(minutes=5), complete=False),
    view("expired", NOW - timedelta(days=3), expires=NOW - timedelta(hours=1)),
    view("torn", NOW - timedelta(days=4), consistent=False),
    view("old", datetime(2026, 10, 1, tzinfo=UTC)),
]


def test_a_policy_is_traced_rule_by_rule_keep_and_protect_apart() -> None:
    """Each policy lists its keep rules and its protect rules separately, in plain words,
    and a keeping rule carries its horizon."""
    found = trace_snapshot(CLUSTER, [GFS], "yesterday-late", now=NOW)

    [policy] = found.policies
    assert found.uncounted is None
    assert [r.trace.text for r in policy.keep] == [
        "last: its 1 used by a newer snapshot",
        "daily #2 of 7",
        "weekly: week 2026-W47 already kept by a newer snapshot (today)",
    ]
    assert [r.trace.text for r in policy.protect] == [
        "yearly: year 2026 already kept by a newer snapshot (today)"
    ]
    daily = policy.keep[1].reason
    assert daily is not None
    assert daily["horizon"] == datetime(2026, 11, 27, tzinfo=UTC)
    assert [r.reason for r in (policy.keep[0], policy.keep[2], *policy.protect)] == [None] * 3


def test_uncounted_snapshots_are_neither_counted_nor_fill_a_bucket() -> None:
    """An incomplete, expired or inconsistent snapshot is reported as not counted, and the
    older snapshot of the same week is kept by no one of them."""
    whys = {
        sid: trace_snapshot(CLUSTER, [GFS], sid, now=NOW) for sid in ("running", "expired", "torn")
    }

    assert {sid: (t.uncounted, t.policies) for sid, t in whys.items()} == {
        "running": ("incomplete", ()),
        "expired": ("awaiting-deletion", ()),
        "torn": ("inconsistent", ()),
    }
    old = trace_snapshot(CLUSTER, [GFS], "old", now=NOW).policies[0]
    assert [r.trace.text for r in old.keep] == [
        "last: its 1 used by a newer snapshot",
        "daily #3 of 7",
        "weekly #2 of 4",
    ]


def test_snapshots_taken_at_the_same_time_are_ordered_as_decide_orders_them() -> None:
    """Of two snapshots taken at once, decide keeps the one with the larger id for the day;
    the trace names that one as holding the bucket."""
    same = NOW - timedelta(hours=3)
    snapshots = [view("a", same), view("b", same), view("older", NOW - timedelta(days=2))]
    daily = loaded_policy("d", keep=KeepSpec(daily=5))

    plan = decide(ClusterView(TARGET, snapshots), [daily], now=NOW, lease_for=LEASE)
    found = trace_snapshot(snapshots, [daily], "a", now=NOW)

    assert {d.snapshot.id: d.state for d in plan.decisions}["a"] == "unkept"
    assert [r.trace.text for r in found.policies[0].keep] == [
        "daily: day 2026-11-21 already kept by a newer snapshot (b)"
    ]


def test_an_unknown_snapshot_is_an_error() -> None:
    """Tracing an id the cluster does not have raises ValueError."""
    with pytest.raises(ValueError, match="no snapshot 'nope'"):
        trace_snapshot(CLUSTER, [GFS], "nope", now=NOW)
