"""Eight invariants every plan keeps (each test's docstring states its own), checked with
hypothesis over generated clusters: random creation times, states, policies, alerts, lease and
now (500 examples each under CI=true, a fifth of that by default: tests/support/examples.py).
Invariant 3 (dry runs send nothing) needs the executor and is tested there."""

from __future__ import annotations

import copy
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from retention.core.decide import decide
from retention.core.gates import held
from retention.core.gates import hold_uncarried as held_ids
from retention.core.merged import Merged
from retention.core.model import (
    AlertView,
    ClusterDecisions,
    ClusterView,
    Decision,
    SnapshotView,
    Target,
    note,
)
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule
from retention.core.policy.loader import LoadedPolicy
from retention.core.policy.spec import KeepSpec
from retention.core.restorable import describe_restore_points
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import LATEST, ceil_to_second
from tests.support import strategies
from tests.support.examples import examples
from tests.support.planning import HOLD_TYPES, apply, loaded_policy
from tests.support.planning import policies as policies_of

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
# 200 scenarios an invariant under CI (a fifth elsewhere): at 500 the ten invariants took a
# fifth of the suite's worker time (184 of 915 s, 95% of it Hypothesis drawing scenarios),
# and the ledger's tests, PostgreSQL's install and its real-process kills need that room
# in CI's ten minutes (at 300, CI took 604 s). CI's are the same 200 every run (its profile
# is derandomized); every local run draws 40 new ones.
EXAMPLES = settings(max_examples=examples(200), deadline=None)

durations = strategies.durations(months=2, days=20, hours=48)
counts = strategies.COUNTS
keep_specs = st.builds(
    KeepSpec,
    **strategies.counted(counts),
    yearly=st.sampled_from([0, 1, 2]),
    within=st.none() | durations,
    within_daily=st.none() | durations,
    every=strategies.every_rules(
        ["0 0 * * 0", "0 0 1 * *", "0 */6 * * *"], counts.filter(bool), max_size=1
    ),
)
protect_specs = st.none() | st.builds(
    KeepSpec, monthly=st.sampled_from([0, 1, 2]), yearly=st.sampled_from([0, 1])
)
policies = policies_of(
    st.none() | keep_specs,
    protect_specs,
    name=st.sampled_from(["alpha", "beta"]),
    grace=st.sampled_from(
        [
            RetentionDuration(),
            RetentionDuration(hours=1),
            RetentionDuration(hours=24),
            RetentionDuration(days=3),
        ]
    ),
    release_protection=st.booleans(),
    inconsistent=st.sampled_from(["ignore", "expire"]),
    timezone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]),
    min_keep=st.integers(0, 4),
    max_expire_fraction=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
)


@st.composite
def snapshot_views(draw: st.DrawFn, index: int) -> SnapshotView:
    """One snapshot in any state the API can report."""
    created = NOW - timedelta(minutes=draw(st.integers(0, 400 * 24 * 60)))
    dnd = draw(st.booleans().map(lambda b: b and draw(st.integers(0, 9)) == 0))
    expires_kind = draw(st.sampled_from(["none", "past", "soon", "far"]))
    offset = timedelta(minutes=draw(st.integers(1, 60 * 24 * 400)))
    expires = {
        "none": None,
        "past": NOW - offset,
        "soon": NOW + timedelta(minutes=draw(st.integers(0, 48 * 60))),
        "far": NOW + offset,
    }[expires_kind]
    return SnapshotView(
        id=f"s{index:03d}",
        created=created,
        complete=draw(st.integers(0, 15)) != 0,
        do_not_delete=dnd,
        expires=None if dnd else expires,
        consistent=draw(st.integers(0, 12)) != 0,
    )


class Scenario(NamedTuple):
    """One generated cluster and what it is planned with."""

    target: Target
    snapshots: list[SnapshotView]
    policies: list[LoadedPolicy]
    alerts: list[AlertView]
    lease_for: timedelta


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A cluster (or config server), its snapshots, 0-2 policies, alerts and a lease."""
    kind = draw(st.sampled_from(["cluster", "cluster", "cluster", "config-server"]))
    target = Target("p1", "c1", "prod-orders", kind, "rs0")  # type: ignore[arg-type]
    size = draw(st.integers(0, 40))
    snapshots = [draw(snapshot_views(i)) for i in range(size)]
    chosen = draw(st.lists(policies, max_size=2, unique_by=lambda p: p.name))
    alerts = draw(
        st.lists(
            st.builds(
                AlertView,
                id=st.sampled_from(["a1", "a2"]),
                event_type=st.sampled_from([*sorted(HOLD_TYPES), "HOST_DOWN"]),
                cluster_id=st.sampled_from([None, "c1", "other"]),
                cluster_name=st.sampled_from([None, "prod-orders"]),
            ),
            max_size=2,
        )
    )
    lease_for = timedelta(hours=draw(st.integers(1, 24 * 10)))
    return Scenario(target, snapshots, chosen, alerts, lease_for)


def run(
    scenario: tuple[Target, list[SnapshotView], list[LoadedPolicy], list[AlertView], timedelta],
) -> ClusterDecisions:
    """Decide a scenario as of NOW."""
    target, snapshots, chosen, alerts, lease_for = scenario
    return decide(ClusterView(target, snapshots, alerts), chosen, now=NOW, lease_for=lease_for)


def _outlives(snapshot: SnapshotView, grace_until: datetime) -> bool:
    return snapshot.do_not_delete or snapshot.expires is None or snapshot.expires > grace_until


@EXAMPLES
@given(scenarios())
def test_invariant_1_no_body_protects_and_expires(scenario: Scenario) -> None:
    """No PATCH body holds doNotDelete: true together with expires."""
    for d in run(scenario).decisions:
        if d.patch is not None:
            body = d.patch.to_api()
            assert not (body.get("doNotDelete") is True and "expires" in body)


@EXAMPLES
@given(scenarios())
def test_invariant_2_no_patch_for_expired_incomplete_or_config_server(scenario: Scenario) -> None:
    """No PATCH is sent for an expired, incomplete or config-server snapshot."""
    plan = run(scenario)
    for d in plan.decisions:
        if d.sends:
            assert d.snapshot.complete
            assert (
                d.snapshot.do_not_delete or d.snapshot.expires is None or d.snapshot.expires > NOW
            )
            assert plan.target.kind == "cluster"


@EXAMPLES
@given(scenarios())
def test_invariant_4_kept_never_shortened_nothing_before_grace(scenario: Scenario) -> None:
    """A kept snapshot's expiry is never shortened; no written expires is before now + grace."""
    plan = run(scenario)
    if not scenario.policies:
        assert all(d.patch is None for d in plan.decisions)
        return
    grace_until = Merged.of(scenario.policies, NOW).grace_until
    for d in plan.decisions:
        if d.patch is None or d.patch.expires is None:
            continue
        assert d.patch.expires >= grace_until
        if d.state in ("kept", "protected"):
            assert d.snapshot.expires is None or d.patch.expires >= d.snapshot.expires
            assert d.snapshot.expires is not None or d.snapshot.do_not_delete


# Found by hypothesis: a protected but possibly inconsistent snapshot was counted as a
# survivor, so min_keep 2 let one of the two consistent snapshots be deleted.
HELD_INCONSISTENT = Scenario(
    Target("p1", "c1", "prod-orders", "cluster", "rs0"),
    [
        SnapshotView("s000", NOW, True, False, None, True, None),
        SnapshotView("s001", NOW, True, False, None, True, None),
        SnapshotView("s002", NOW, True, True, None, False, None),
    ],
    [
        loaded_policy(
            "alpha",
            protect=KeepSpec(yearly=1),
            grace=RetentionDuration(),
            inconsistent="expire",
            min_keep=2,
        )
    ],
    [],
    timedelta(hours=1),
)


@EXAMPLES
@given(scenarios())
@example(HELD_INCONSISTENT)
def test_invariant_5_min_keep_survivors(scenario: Scenario) -> None:
    """After the run, at least min_keep complete consistent snapshots survive (or all of them)."""
    if not scenario.policies:
        return
    plan = run(scenario)
    merged = Merged.of(scenario.policies, NOW)
    counted = [
        s for s in scenario.snapshots
        if s.complete and s.consistent and (s.do_not_delete or s.expires is None or s.expires > NOW)
    ]  # fmt: skip
    after = {s.id: s for s in apply(scenario.snapshots, plan, NOW)}
    kept = {
        d.snapshot.id for d in plan.decisions if d.state in ("kept", "protected", "manual-hold")
    }
    survivors = [s for s in counted if s.id in kept or _outlives(after[s.id], merged.grace_until)]
    assert len(survivors) >= min(merged.min_keep, len(counted))


@EXAMPLES
@given(scenarios())
def test_invariant_6_holds_only_released_when_policies_allow(scenario: Scenario) -> None:
    """An existing doNotDelete is removed only when every matching policy allows release."""
    for d in run(scenario).decisions:
        if d.patch is not None and d.patch.do_not_delete is False and d.snapshot.do_not_delete:
            assert scenario.policies
            assert all(p.policy.release_protection for p in scenario.policies)


@EXAMPLES
@given(scenarios())
def test_invariant_7_same_inputs_same_plan(scenario: Scenario) -> None:
    """Planning the same inputs twice (in any input order) gives identical decisions."""
    target, snapshots, chosen, alerts, lease_for = scenario
    first = run(scenario)
    second = decide(
        ClusterView(target, list(reversed(snapshots)), alerts),
        list(reversed(chosen)),
        now=NOW,
        lease_for=lease_for,
    )

    assert first == second
    assert describe_restore_points(first, NOW) == describe_restore_points(second, NOW)


@EXAMPLES
@given(scenarios())
def test_a_plan_without_reasons_decides_the_same(scenario: Scenario) -> None:
    """decide(reasons=False), a forecast's step, gives every snapshot the state, action,
    PATCH, expiry and hold a full plan gives it: it leaves out only the rules' reasons."""
    target, snapshots, chosen, alerts, lease_for = scenario
    full = run(scenario)
    cluster = ClusterView(target, snapshots, alerts)
    lean = decide(cluster, chosen, now=NOW, lease_for=lease_for, reasons=False)

    def outcome(plan: ClusterDecisions) -> list[tuple[object, ...]]:
        return [
            (d.snapshot.id, d.state, d.action, d.patch, d.expires_after, d.held, d.advisory)
            for d in plan.decisions
        ]

    assert outcome(lean) == outcome(full)
    assert lean.holds == full.holds
    rule_reasons = [r for d in lean.decisions for r in d.reasons if r["policy"] is not None]
    assert [r for r in rule_reasons if r["rule"] != "hold-ended"] == []


@EXAMPLES
@given(scenarios())
def test_invariant_8_second_run_plans_no_change(scenario: Scenario) -> None:
    """Applying a plan and planning again at the same now sends no PATCH."""
    after = apply(scenario.snapshots, run(scenario), NOW)

    second = run(scenario._replace(snapshots=after))

    assert [d.snapshot.id for d in second.decisions if d.sends] == []


@EXAMPLES
@given(scenarios())
def test_a_kept_snapshots_new_expiry_is_the_date_its_reasons_give(scenario: Scenario) -> None:
    """An expiry written for a kept snapshot (extend, release) is the date of one of its
    reasons, and no reason gives a later one: the rules' horizon, or the lease's reason
    when the lease writes a later date (a horizon already past among them)."""
    for d in run(scenario).decisions:
        if d.state != "kept" or d.patch is None or d.patch.expires is None:
            continue
        dated = [(r["rule"], h) for r in d.reasons if (h := r["horizon"]) is not None]
        rules = [ceil_to_second(h) for rule, h in dated if rule != "lease"]
        leases = [h for rule, h in dated if rule == "lease"]
        if not rules:  # no rule gives a date (last, min_keep): none contradicts it
            assert leases == []
            continue
        assert d.patch.expires == max(rules + leases)
        assert leases == ([] if d.patch.expires == max(rules) else [d.patch.expires])


def test_min_keep_leaves_a_hold_in_place_rather_than_release_it() -> None:
    """Found by hypothesis: min_keep must also save a manual hold that release_protection would
    lift, by leaving the hold in place."""
    twin = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    snapshots = [
        SnapshotView("s000", twin, complete=True, do_not_delete=True, expires=None),
        SnapshotView("s001", twin, complete=True, do_not_delete=False, expires=None),
    ]
    policy = loaded_policy(
        name="alpha",
        protect=KeepSpec(yearly=1),
        grace=RetentionDuration(),
        release_protection=True,
        min_keep=2,
    )

    cluster = ClusterView(Target("p1", "c1", "prod"), snapshots)
    plan = decide(cluster, [policy], now=NOW, lease_for=timedelta(hours=1))

    by_id = {d.snapshot.id: d for d in plan.decisions}
    assert (by_id["s001"].state, by_id["s001"].action) == ("protected", "protect")
    assert (by_id["s000"].state, by_id["s000"].action) == ("manual-hold", "none")
    assert by_id["s000"].reasons[-1]["rule"] == "min_keep"
    assert by_id["s000"].reasons[-1]["text"] == "safety: min_keep: hold left in place"


def test_inconsistent_expire_does_not_touch_a_held_snapshot() -> None:
    """Found by hypothesis: inconsistent: expire must not send expires to a doNotDelete
    snapshot (the API ignores it, so every run would send it again)."""
    when = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    snapshots = [
        SnapshotView(
            "s001", when, complete=True, do_not_delete=True, expires=None, consistent=False
        )
    ]
    policy = loaded_policy(
        keep=KeepSpec(yearly=1), grace=RetentionDuration(), inconsistent="expire", min_keep=0
    )

    cluster = ClusterView(Target("p1", "c1", "prod"), snapshots)
    plan = decide(cluster, [policy], now=NOW, lease_for=timedelta(hours=1))

    [decision] = plan.decisions
    assert (decision.state, decision.action, decision.patch) == ("manual-hold", "none", None)


EXTREME = RetentionDuration(years=9999)
extreme_specs = st.builds(
    KeepSpec,
    last=st.sampled_from([-1, 0, 10_000]),
    hourly=st.sampled_from([-1, 0, 1_000_000]),
    daily=st.sampled_from([-1, 0, 1_000_000]),
    weekly=st.sampled_from([-1, 0, 1_000_000]),
    monthly=st.sampled_from([-1, 0, 1_000_000]),
    yearly=st.sampled_from([-1, 0, 10_000]),
    within=st.sampled_from([None, EXTREME]),
    within_hourly=st.sampled_from([None, EXTREME, RetentionDuration(hours=10**9)]),
    within_daily=st.sampled_from([None, EXTREME]),
    within_weekly=st.sampled_from([None, EXTREME]),
    within_monthly=st.sampled_from([None, RetentionDuration(months=10**6)]),
    within_yearly=st.sampled_from([None, EXTREME]),
    every=st.sampled_from([(), (EveryRule("0 0 1 1 *", -1),), (EveryRule("0 0 1 1 *", 10**6),)]),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    keep=extreme_specs,
    protect=st.none() | extreme_specs,
    grace=st.sampled_from([RetentionDuration(), EXTREME]),
    zone=st.sampled_from(["UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago"]),
    snapshots=st.lists(st.integers(0, 400 * 24), max_size=30, unique=True),
)
@example(
    keep=KeepSpec(daily=-1, weekly=-1, monthly=-1, yearly=-1),
    protect=None,
    grace=RetentionDuration(),
    zone="UTC",
    snapshots=[0, 1, 2],
)
def test_rules_at_their_extremes_clamp_to_the_latest_time_and_keep(
    keep: KeepSpec,
    protect: KeepSpec | None,
    grace: RetentionDuration,
    zone: str,
    snapshots: list[int],
) -> None:
    """Every rule at its largest value (restic's 9999y among them) plans without error: a
    horizon past the representable range stops at LATEST, which keeps, and every expiry the
    plan writes is a whole second within the range."""
    # Every rule at 0 or None is a policy that keeps nothing, which the loader refuses.
    assume(not keep.empty or (protect is not None and not protect.empty))
    views = [
        SnapshotView(f"s{h:05d}", NOW - timedelta(hours=h), True, False, NOW + timedelta(days=1))
        for h in snapshots
    ]
    policy = loaded_policy(keep=keep, protect=protect, grace=grace, timezone=zone)

    plan = decide(ClusterView(Target("p1", "c1", "prod"), views), [policy], now=NOW, lease_for=DAY)

    for d in plan.decisions:
        if d.patch is not None and d.patch.expires is not None:
            # grace 0 deletes at once: what it writes is now itself.
            assert NOW <= d.patch.expires <= LATEST
            assert d.patch.expires.microsecond == 0
        for reason in d.reasons:
            assert reason["horizon"] is None or reason["horizon"] <= LATEST
    yearly = [d for d in plan.decisions if any(r["rule"] == "within_yearly" for r in d.reasons)]
    if keep.within_yearly == EXTREME and views and protect is None:
        assert yearly, "the newest snapshot of each year is within 9999y"
        assert all((d.action, d.expires_after) == ("extend", LATEST) for d in yearly)


@EXAMPLES
@given(scenarios())
def test_decide_leaves_what_it_is_given_as_it_was(scenario: Scenario) -> None:
    """decide changes none of its inputs: the snapshots, the policies and the alerts keep
    their order and their values (it sorts a copy of the snapshots)."""
    target, snapshots, chosen, alerts, lease_for = scenario
    inputs = (snapshots, chosen, alerts)
    before = [list(each) for each in inputs]

    decide(ClusterView(target, snapshots, alerts), chosen, now=NOW, lease_for=lease_for)

    assert [list(each) for each in inputs] == before


def test_decides_result_cannot_be_changed() -> None:
    """decide's result is a value: assigning to it, to one of its decisions or to their
    description raises, and its decisions and holds are tuples."""
    snapshots = [
        SnapshotView(f"s{i}", NOW - i * DAY, True, False, NOW + 30 * DAY) for i in range(3)
    ]
    policy = loaded_policy(keep=KeepSpec(last=1), max_expire_fraction=0.5)
    decided = decide(
        ClusterView(Target("p1", "c1", "prod"), snapshots), [policy], now=NOW, lease_for=DAY
    )
    restorable = describe_restore_points(decided, NOW)

    assert isinstance(decided.decisions, tuple)
    assert isinstance(decided.holds, tuple)
    assert decided.holds, "the fraction gate holds the two shortened snapshots"
    with pytest.raises(FrozenInstanceError):
        decided.holds = ()  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        decided.decisions[1].held = None  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        restorable.ladder = None  # type: ignore[misc,union-attr]


def test_the_gates_give_new_decisions_and_leave_those_they_are_given() -> None:
    """hold_uncarried and held return new decisions in a new list; the list and the
    decisions they were given are as they were, reasons included (a gate that changed them
    in place would change a result decide had already returned)."""
    odd = SnapshotView("a/b", NOW - DAY, True, False, NOW + DAY)
    doomed = SnapshotView("s1", NOW - 2 * DAY, True, False, NOW + 30 * DAY)
    extend = SnapshotPatch.expire_at(NOW + 7 * DAY)
    given = [
        Decision(odd, "kept", "extend", [note("last", "kept")], ["p"], NOW + 7 * DAY, extend),
        Decision(doomed, "unkept", "shorten", [note("no-rule", "no")], ["p"], NOW + DAY, extend),
    ]
    before = copy.deepcopy(given)
    items = list(given)

    uncarried, hold = held_ids(given)
    assert hold is not None
    out = held(uncarried, [hold])

    assert given == before
    assert all(a is b for a, b in zip(given, items, strict=True))
    assert (out[0].action, out[0].patch, out[0].reasons[-1]["rule"]) == ("none", None, "id")
    assert (out[1].action, out[1].held) == ("shorten", hold.reason)
    assert held(given, []) is given  # no hold: nothing to copy
