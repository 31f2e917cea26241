"""An extend whose new expiry the lease sets, later than every rule's horizon, says so: its
reasons give the date the plan writes, and why it is not the rule's (a horizon already past,
or one sooner than two leases)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retention.core.decide import decide
from retention.core.model import ClusterView, Decision, SnapshotView, Target, describe
from retention.core.policy.spec import KeepSpec
from retention.report.cells import deciding_first
from tests.support.planning import loaded_policy

# Late on a day in November: the month's snapshot of 2026-05 is missing below.
NOW = datetime(2026, 11, 27, 23, 47, tzinfo=UTC)
LEASE = timedelta(days=7)


def monthly_history() -> list[SnapshotView]:
    """The 1st of each month from 2025-11 to 2026-11 but 2026-05, each expiring 13 months
    after it was taken (the service's schedule), so the oldest expires on 2026-12-01."""
    months = [(2025, 11), (2025, 12)] + [(2026, m) for m in range(1, 12) if m != 5]
    return [
        SnapshotView(
            f"m{year}{month:02d}",
            datetime(year, month, 1, tzinfo=UTC),
            True,
            False,
            datetime(year + 1 + month // 12, month % 12 + 1, 1, tzinfo=UTC),
        )
        for year, month in months
    ]


def decided(keep: KeepSpec) -> dict[str, Decision]:
    policy = loaded_policy("prod", keep, max_expire_fraction=1.0)
    cluster = ClusterView(Target("p1", "c1", "prod-orders"), monthly_history())
    plan = decide(cluster, [policy], now=NOW, lease_for=LEASE)
    return {d.snapshot.id: d for d in plan.decisions}


def test_a_rule_whose_horizon_has_passed_is_followed_by_the_lease_and_its_date() -> None:
    """With 2026-05 missing, monthly 12 still keeps 2025-11's snapshot as #12 of 12, whose
    horizon (2026-11-01) has passed: the plan extends it two leases ahead, to 2026-12-11,
    and its reasons say that date and why it is not the rule's."""
    oldest = decided(KeepSpec(monthly=12))["m202511"]

    assert oldest.action == "extend"
    assert oldest.expires_after == datetime(2026, 12, 11, 23, 47, tzinfo=UTC)
    assert [describe(r) for r in oldest.reasons] == [
        "prod: monthly #12 of 12 (monthly snapshot), until 2026-11-01T00:00:00Z",
        "lease: kept two leases ahead, as the rules' horizon 2026-11-01T00:00:00Z has passed "
        "(they count the snapshots there are), until 2026-12-11T23:47:00Z",
    ]
    # The report's first reason of the change is the one that set the date it writes.
    assert deciding_first(oldest.reasons, "extend")[0].startswith("lease: kept two leases")


def test_a_horizon_sooner_than_two_leases_is_said_beside_the_date_written() -> None:
    """The daily snapshot of 2026-11-26, which its rule keeps to 2026-12-03 (sooner than two
    leases ahead) and which expires sooner than one, is extended to two leases ahead, and
    the lease's reason gives that date and the rule's."""
    days = [
        SnapshotView(f"d{day:02d}", datetime(2026, 11, day, 6, tzinfo=UTC), True, False, None)
        for day in range(20, 28)
        if day != 26
    ]
    expiring = SnapshotView("d26", datetime(2026, 11, 26, tzinfo=UTC), True, False, NOW + LEASE / 2)
    policy = loaded_policy("prod", KeepSpec(daily=7), max_expire_fraction=1.0)
    cluster = ClusterView(Target("p1", "c1", "prod-orders"), [*days, expiring])
    plan = decide(cluster, [policy], now=NOW, lease_for=LEASE)
    [extended] = [d for d in plan.decisions if d.action == "extend"]

    assert extended.snapshot.id == "d26"
    assert [describe(r) for r in extended.reasons] == [
        "prod: daily #2 of 7 (daily snapshot), until 2026-12-03T00:00:00Z",
        "lease: kept two leases ahead, past the rules' horizon 2026-12-03T00:00:00Z, "
        "until 2026-12-11T23:47:00Z",
    ]


def test_a_date_the_rule_itself_writes_needs_no_lease_reason() -> None:
    """When the rule's horizon is the date written, no lease reason is added."""
    plan = decided(KeepSpec(monthly=12, yearly=3))

    assert plan["m202511"].action == "extend"
    assert plan["m202511"].expires_after == datetime(2028, 1, 1, tzinfo=UTC)  # yearly 3
    assert all(r["rule"] != "lease" for d in plan.values() for r in d.reasons)
