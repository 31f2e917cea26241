"""Restore points as a ladder (retention.core.restorepoints): tiers read off the points a plan
leaves in place, checked against ladders computed by hand, on their own and through decide on
three fleets (a 6-hourly GFS history, one with two weeks missing, a sharded cluster with
inconsistent snapshots)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retention.config.policyfiles import load_policies
from retention.core.decide import decide
from retention.core.horizon import lease
from retention.core.model import AlertView, ClusterView, Member, SnapshotView, Target
from retention.core.planvalues import (
    cluster_restore_points,
    freshness_entry,
    restore_points_entry,
)
from retention.core.policy.spec import KeepSpec
from retention.core.restorable import describe_restore_points
from retention.core.restorepoints import grain_of, ladder_of
from retention.core.timestamps import parse_timestamp
from retention.runfolder.planwrite import encode_line
from tests.support.planning import loaded_policy

H = timedelta(hours=1)
D = timedelta(days=1)
# A Friday, three hours after the newest snapshot of the fleets below.
NOW = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
GFS = KeepSpec(last=8, daily=7, weekly=5, monthly=12, yearly=3)


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    """A UTC time on the hour."""
    return datetime(year, month, day, hour, tzinfo=UTC)


def every(
    step: timedelta, start: datetime, end: datetime, skip: Callable[[datetime], bool] | None = None
) -> list[datetime]:
    """Times from ``start`` to ``end`` (both included) ``step`` apart, less those ``skip`` names."""
    times = []
    t = start
    while t <= end:
        if skip is None or not skip(t):
            times.append(t)
        t += step
    return times


def planned(
    times: list[datetime],
    *,
    inconsistent: frozenset[datetime] = frozenset(),
    target: Target | None = None,
) -> dict[str, Any]:
    """plan.json's restorePoints of one cluster with snapshots at ``times``, planned by decide
    under GFS (last 8, daily 7, weekly 5, monthly 12, yearly 3, UTC) at NOW."""
    snapshots = [
        SnapshotView(f"{n:024x}", t, True, False, None, consistent=t not in inconsistent)
        for n, t in enumerate(times)
    ]
    policy = loaded_policy(keep=GFS, max_expire_fraction=1.0)
    cluster = ClusterView(target or Target("p" * 24, "c" * 24, "orders"), snapshots)
    restorable = describe_restore_points(decide(cluster, [policy], now=NOW, lease_for=H), NOW)
    assert restorable is not None
    return dict(restore_points_entry(restorable.ladder))


def tiers(entry: dict[str, Any]) -> list[tuple[str, int, datetime, str]]:
    """Each tier's text, points, oldest point and how often."""
    return [(t["text"], t["points"], t["reaches"], t["every"]) for t in entry["tiers"]]


# ---- three fleets, planned ---------------------------------------------------------------------


def test_a_6_hourly_history_under_gfs_reads_as_its_rules() -> None:
    """Every 6 h since 2024 under last 8, daily 7, weekly 5, monthly 12, yearly 3: the ladder
    is the policy's, each tier counted in calendar buckets from the newest point."""
    entry = planned(every(6 * H, at(2024, 1, 1), at(2026, 11, 20)))
    # By hand. Kept (restic rules, UTC): last 8 = 11-20 00:00 back to 11-18 06:00; daily =
    # the 18:00 of 11-19 .. 11-14 (11-20's is 00:00); weekly = Sundays 11-15, 11-08, 11-01,
    # 10-25 (and 11-20 for this week); monthly = the last 18:00 of 2026-10 .. 2025-12;
    # yearly = 2025-12-31 and 2024-12-31 18:00 (and 11-20 for 2026).
    # - every 6 h: 11-20 00 .. 11-18 06, 8 points, 42 h + one 6 h interval = 2 days;
    #   the 12 h gap to 11-17 18:00 goes to the daily tier (a hole in the 6-hourly one);
    # - daily: 11-18 06 .. 11-14 18, 5 points, 11-20 back to 11-14 = 7 days;
    # - weekly: 11-14, 11-08, 11-01, 10-31 (the monthly, an extra point), 10-25: 5 points,
    #   ISO weeks of 11-16, 11-09, 11-02, 10-26, 10-19 = 5 weeks;
    # - monthly: 10-25, 09-30, 08-31, ..., 01-31, 2025-12-31: 11 points, 2026-11 back to
    #   2025-12 = 12 months;
    # - yearly: 2025-12-31, 2024-12-31: 2 points, 2026 back to 2024 = 3 years.
    assert entry["text"] == (
        "every 6 h for 2 days, daily for 7 days, weekly for 5 weeks, monthly for 12 months, "
        "yearly for 3 years; oldest 2024-12-31"
    )
    assert tiers(entry) == [
        ("every 6 h for 2 days", 8, at(2026, 11, 18, 6), "every 6 h"),
        ("daily for 7 days", 5, at(2026, 11, 14, 18), "daily"),
        ("weekly for 5 weeks", 5, at(2026, 10, 25, 18), "weekly"),
        ("monthly for 12 months", 11, at(2025, 12, 31, 18), "monthly"),
        ("yearly for 3 years", 2, at(2024, 12, 31, 18), "yearly"),
    ]
    assert (entry["count"], entry["gaps"]) == (8 + 4 + 4 + 10 + 1, False)
    assert (entry["newest"], entry["oldest"]) == (at(2026, 11, 20), at(2024, 12, 31, 18))


def test_two_weeks_without_a_snapshot_show_as_a_missing_week() -> None:
    """The same history with nothing from 11-01 to 11-14: the daily tier is a day shorter,
    the weekly one reaches a week further and says which week it misses."""
    gap = every(
        6 * H,
        at(2024, 1, 1),
        at(2026, 11, 20),
        skip=lambda t: at(2026, 11, 1) <= t < at(2026, 11, 15),
    )
    entry = planned(gap)
    # By hand. Daily 7 finds 11-20 .. 11-15 and then 10-31 18:00; weekly 5: 11-20, 11-15
    # (week of 11-09), none in the week of 11-02, 10-31 (week of 10-26), 10-25, 10-18.
    # - every 6 h: as without the gap, 2 days;
    # - daily: 11-18 06 .. 11-15 18, 4 points, 11-20 back to 11-15 = 6 days;
    # - weekly: 11-15 18, then 15 days to 10-31, 10-25, 10-18: 4 points, weeks of 11-16 back
    #   to 10-12 = 6 weeks, the week of 11-02 missing (11-15 is in 11-09's, 10-31 in 10-26's);
    # - monthly: 10-18 .. 2025-12-31 (18 days to 09-30 is monthly): 11 points, 12 months;
    # - yearly: as before, 3 years.
    assert entry["text"] == (
        "every 6 h for 2 days, daily for 6 days, weekly for 6 weeks (1 week missing: week of "
        "2026-11-02), monthly for 12 months, yearly for 3 years; oldest 2024-12-31"
    )
    weekly = entry["tiers"][2]
    assert (weekly["points"], weekly["reaches"], weekly["span"]) == (4, at(2026, 10, 18, 18), 6)
    assert weekly["missing"] == [
        {
            "after": at(2026, 10, 31, 18),
            "before": at(2026, 11, 15, 18),
            "count": 1,
            "unit": "week",
            "first": "week of 2026-11-02",
            "last": "week of 2026-11-02",
        }
    ]
    assert entry["gaps"] is True


def test_a_sharded_clusters_inconsistent_snapshots_are_not_restore_points() -> None:
    """Daily snapshots at 12:00 of a sharded cluster, two of them possibly inconsistent: the
    rules keep them all, but the ladder misses those two days."""
    sharded = Target(
        "p" * 24,
        "c" * 24,
        "orders",
        type_name="SHARDED_REPLICA_SET",
        members=(Member("d" * 24, "REPLICA_SET", "orders-shard0"),),
    )
    times = every(D, at(2026, 11, 11, 12), at(2026, 11, 19, 12))
    bad = frozenset({at(2026, 11, 16, 12), at(2026, 11, 17, 12)})
    entry = planned(times, inconsistent=bad, target=sharded)
    # By hand. Restore points: 11-19, 11-18, 11-15, 11-14, 11-13, 11-12, 11-11 (12:00), 7 of
    # them; gaps 1, 3, 1, 1, 1, 1 days, all daily (3 days < 3.5), median 1 day; 11-19 back
    # to 11-11 = 9 days; between 11-18 and 11-15 the days 11-16 and 11-17 are missing.
    assert entry["text"] == (
        "daily for 9 days (2 days missing: 2026-11-16 to 2026-11-17); oldest 2026-11-11"
    )
    [tier] = entry["tiers"]
    assert (tier["points"], tier["everySeconds"], tier["span"]) == (7, 86400, 9)
    assert entry["count"] == 7


def test_an_unmatched_clusters_expired_snapshot_is_not_a_restore_point() -> None:
    """No policy matches the cluster, so every decision says "unmatched"; the snapshot whose
    expiry has passed is still not a restore point (it awaits the service's reaper)."""
    target = Target("p" * 24, "c" * 24, "stray")
    fresh = SnapshotView("a", at(2026, 11, 19), True, False, NOW + D)
    gone = SnapshotView("b", at(2026, 11, 18), True, False, NOW - timedelta(hours=1))

    decided = decide(ClusterView(target, [fresh, gone]), [], now=NOW, lease_for=D)
    restorable = describe_restore_points(decided, NOW)

    assert [d.state for d in decided.decisions] == ["unmatched", "unmatched"]
    assert restorable is not None
    assert (restorable.ladder.points, restorable.ladder.oldest) == (1, at(2026, 11, 19))


SCENARIOS = Path(__file__).parent / "scenarios"
SCENARIO_NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)  # test_plan_golden.py's


def golden_clusters(name: str) -> list[tuple[ClusterView, dict[str, Any], list[str]]]:
    """Each cluster of a golden scenario as its plan saw it (its snapshots rebuilt from what
    its decisions record of them), its entry in expected.plan.json, and the states decided."""
    folder = SCENARIOS / name
    head = json.loads((folder / "expected.plan.json").read_text())
    lines = (folder / "expected.decisions.jsonl").read_text().splitlines()
    records: dict[str, list[dict[str, Any]]] = {}
    for record in map(json.loads, lines):
        records.setdefault(record["clusterId"], []).append(record)
    out = []
    for entry in head["clusters"]:
        target = Target(
            entry["projectId"],
            entry["clusterId"],
            entry["name"],
            entry["kind"],
            type_name=entry["typeName"],
            members=tuple(
                Member(m["clusterId"], m["typeName"], m["shardName"], m["replicaSetName"])
                for m in entry["members"]
            ),
        )
        mine = records.get(entry["clusterId"], [])
        snapshots = [
            SnapshotView(
                r["snapshotId"],
                parse_timestamp(r["created"]),
                r["complete"],
                r["observed"]["doNotDelete"],
                None
                if r["observed"]["expires"] is None
                else parse_timestamp(r["observed"]["expires"]),
                r["consistent"],
                r["storageBytes"],
            )
            for r in mine
        ]
        # Its OPEN alerts as the plan recorded them: a held change leaves its snapshot in
        # place, so the restore points depend on the holds.
        alerts = [
            AlertView(h["alertId"], h["reason"].split()[2], cluster_id=entry["clusterId"])
            for h in entry["holds"]
            if h["kind"] == "alert"
        ]
        view = ClusterView(target, snapshots, alerts)
        out.append((view, entry, [r["state"] for r in mine]))
    return out


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir()))
def test_restore_points_described_apart_from_deciding_are_the_golden_plans(name: str) -> None:
    """Each cluster of a golden scenario, decided with or without the rules' reasons and then
    described on its own, has the restore points and freshness its golden plan.json (made
    when decide described them itself) records."""
    policies = load_policies(SCENARIOS / name / "policies")
    lease_for = lease("0 3 * * *", SCENARIO_NOW, timedelta(0))

    for cluster, entry, states in golden_clusters(name):
        t = cluster.target
        matching = policies.matching(t.project_id, t.name, t.kind)
        for reasons in (True, False):
            decided = decide(
                cluster, matching, now=SCENARIO_NOW, lease_for=lease_for, reasons=reasons
            )
            restorable = describe_restore_points(decided, SCENARIO_NOW)

            assert [d.state for d in decided.decisions] == states
            assert restorable is not None
            assert restorable.freshness is not None
            described = {
                "restorePoints": cluster_restore_points(restorable),
                "newestRestorable": freshness_entry(restorable.freshness),
            }
            assert json.loads(encode_line(described)) == {
                key: entry[key] for key in ("restorePoints", "newestRestorable")
            }


# ---- the ladder of a set of points -------------------------------------------------------------


def test_no_point_and_a_single_point_have_no_tier() -> None:
    """No point reads "no restore point"; one reads as itself, with its day."""
    none, one = ladder_of([]), ladder_of([at(2026, 1, 1, 5)])
    assert (none.points, none.newest, none.oldest, none.tiers) == (0, None, None, ())
    assert none.words() == "no restore point"
    assert (one.points, one.newest, one.oldest, one.tiers) == (
        1,
        at(2026, 1, 1, 5),
        at(2026, 1, 1, 5),
        (),
    )
    assert one.words() == "1 restore point, 2026-01-01"


def test_a_gap_gets_its_grain_by_its_length() -> None:
    """Under 18 h sub-daily, under 3.5 days daily, under 18 days weekly, under 200 days
    monthly, yearly beyond: each bound belongs to the coarser grain."""
    assert [grain_of(g) for g in (17 * H, 18 * H, 84 * H - timedelta(seconds=1), 84 * H)] == [
        "sub-daily",
        "daily",
        "daily",
        "weekly",
    ]
    assert [grain_of(g) for g in (18 * D - H, 18 * D, 200 * D - H, 200 * D)] == [
        "weekly",
        "monthly",
        "monthly",
        "yearly",
    ]


def test_sub_daily_spans_count_hours_to_36_and_days_beyond() -> None:
    """24 hourly points span 24 hours (23 h between them, plus one interval); 8 points 6 h
    apart span 48 h: 2 days; 7 of them 42 h: 2 days, rounded up."""
    assert ladder_of(every(H, at(2026, 11, 1), at(2026, 11, 1, 23))).words() == (
        "every 1 h for 24 hours; oldest 2026-11-01"
    )
    assert ladder_of(every(6 * H, at(2026, 11, 1), at(2026, 11, 2, 18))).tiers[0].words() == (
        "every 6 h for 2 days"
    )
    assert ladder_of(every(6 * H, at(2026, 11, 1), at(2026, 11, 2, 12))).tiers[0].words() == (
        "every 6 h for 2 days"
    )


def test_calendar_spans_count_buckets_from_the_newest_point_both_ends_included() -> None:
    """Daily points at 18:00, the newest 11-16: seven of them span 7 days whatever the hour;
    monthly points on the 1st, January to November: 11 months; the newest point, not the
    plan's time, is where a ladder is read from."""
    daily = every(D, at(2026, 11, 10, 18), at(2026, 11, 16, 18))
    assert ladder_of(daily).words() == "daily for 7 days; oldest 2026-11-10"
    months = [at(2026, m, 1) for m in range(1, 12)]
    assert ladder_of(months).words() == "monthly for 11 months; oldest 2026-01-01"
    weekly = every(7 * D, at(2026, 10, 4), at(2026, 11, 15))  # Sundays: 7 ISO weeks
    assert ladder_of(weekly).words() == "weekly for 7 weeks; oldest 2026-10-04"
    yearly = [at(2024, 12, 31), at(2025, 12, 31), at(2026, 6, 1)]
    assert ladder_of(yearly).words() == "yearly for 3 years; oldest 2024-12-31"


def test_holes_are_named_in_the_tiers_unit() -> None:
    """A daily tier misses days, a weekly one ISO weeks, a monthly one months, a sub-daily
    one its intervals, each named from the first to the last missing."""
    daily = [t for t in every(D, at(2026, 10, 1), at(2026, 10, 20)) if t.day not in (5, 6)]
    assert ladder_of(daily).tiers[0].holes() == "2 days missing: 2026-10-05 to 2026-10-06"
    weekly = [t for t in every(7 * D, at(2026, 8, 2), at(2026, 11, 15)) if t != at(2026, 9, 13)]
    assert ladder_of(weekly).tiers[0].holes() == "1 week missing: week of 2026-09-07"
    monthly = [at(2026, m, 1) for m in range(1, 12) if m not in (4, 5, 6)]
    assert ladder_of(monthly).tiers[0].holes() == "3 months missing: 2026-04 to 2026-06"
    six = [t for t in every(6 * H, at(2026, 11, 1), at(2026, 11, 3)) if t != at(2026, 11, 2)]
    [tier] = ladder_of(six).tiers
    assert tier.holes() == "1 interval missing: 2026-11-02 00:00"


def test_a_tier_names_three_holes_and_counts_the_rest() -> None:
    """Five missing days apart: one count of the days missing, the oldest three named (a
    list reads oldest first), then "2 more holes"."""
    days = [
        t for t in every(D, at(2026, 10, 1), at(2026, 10, 30)) if t.day not in (3, 7, 11, 15, 19)
    ]
    [tier] = ladder_of(days).tiers
    assert tier.words() == (
        "daily for 30 days (5 days missing: 2026-10-03, 2026-10-07, 2026-10-11 and 2 more holes)"
    )


def test_a_tiers_holes_are_one_list_oldest_first() -> None:
    """Two weeks missing from a weekly tier read as one list, oldest first, with "weeks of"
    said once, not as two "1 week missing" clauses newest first; a hole of several buckets
    keeps its range."""
    sundays = every(7 * D, at(2026, 8, 2), at(2026, 11, 15))
    weekly = [t for t in sundays if t not in (at(2026, 10, 11), at(2026, 10, 25))]
    [tier] = ladder_of(weekly).tiers
    assert tier.holes() == "2 weeks missing: weeks of 2026-10-05 and 2026-10-19"
    days = [t for t in every(D, at(2026, 10, 1), at(2026, 10, 30)) if t.day not in (4, 5, 6, 20)]
    [tier] = ladder_of(days).tiers
    assert tier.holes() == "4 days missing: 2026-10-04 to 2026-10-06 and 2026-10-20"


def test_a_newest_manual_snapshot_is_an_extra_point_of_the_daily_tier() -> None:
    """A manual snapshot two hours after the newest daily one splits nothing."""
    daily = every(D, at(2026, 11, 10, 18), at(2026, 11, 16, 18))
    ladder = ladder_of([*daily, at(2026, 11, 16, 20)])
    assert ladder.words() == "daily for 7 days; oldest 2026-11-10"
    assert ladder.tiers[0].points == 8


def test_the_gap_where_daily_meets_weekly_belongs_to_the_weekly_tier() -> None:
    """Daily points back to a Wednesday, weekly ones on Sundays: the three days between are
    not missing days of the daily tier."""
    daily = every(D, at(2026, 11, 11, 18), at(2026, 11, 17, 18))
    weekly = [at(2026, 11, 8, 18), at(2026, 11, 1, 18), at(2026, 10, 25, 18)]
    ladder = ladder_of(daily + weekly)
    assert ladder.words() == "daily for 7 days, weekly for 5 weeks; oldest 2026-10-25"
    assert [t.points for t in ladder.tiers] == [7, 4]


def test_a_snapshot_held_mid_month_is_an_extra_point_of_the_monthly_tier() -> None:
    """Monthly points with one or two held between them read as one monthly tier."""
    months = [at(2026, m, 1) for m in range(1, 12)]
    assert (
        ladder_of([*months, at(2026, 6, 15)]).words() == "monthly for 11 months; oldest 2026-01-01"
    )
    two = [*months, at(2026, 6, 10), at(2026, 6, 20)]
    assert ladder_of(two).words() == "monthly for 11 months; oldest 2026-01-01"


def test_weekly_and_monthly_points_a_day_apart_read_as_weekly_not_as_daily_holes() -> None:
    """Sundays and month ends a day or three apart: extra points of the weekly tier, which
    reaches 10-20 (19 days to 10-01 is monthly): the ISO weeks of 11-09 (11-15 is a Sunday)
    back to 10-19, 4 weeks; monthly from there to July, 5 months."""
    points = [
        at(2026, 11, 15),
        at(2026, 11, 8),
        at(2026, 11, 1),
        at(2026, 10, 31),
        at(2026, 10, 28),
        at(2026, 10, 20),
        at(2026, 10, 1),
        at(2026, 9, 30),
        at(2026, 8, 31),
        at(2026, 7, 31),
    ]
    assert ladder_of(points).words() == (
        "weekly for 4 weeks, monthly for 5 months; oldest 2026-07-31"
    )


def test_a_few_old_snapshots_below_the_monthly_tier_are_extra_points_of_it() -> None:
    """Two snapshots 12 h apart a day before the oldest monthly one: no daily tier after the
    monthly one."""
    months = [at(2026, m, 1) for m in range(6, 12)]
    ladder = ladder_of([*months, at(2026, 5, 30, 12), at(2026, 5, 31)])
    assert ladder.words() == "monthly for 7 months; oldest 2026-05-30"


def test_two_weeks_missing_from_a_daily_tier_is_a_hole_in_it() -> None:
    """Daily points with 14 days missing between two long daily runs: one daily tier."""
    days = [
        t
        for t in every(D, at(2026, 9, 1), at(2026, 10, 20))
        if not 15 <= t.day < 29 or t.month != 9
    ]
    [tier] = ladder_of(days).tiers
    assert tier.words() == "daily for 50 days (14 days missing: 2026-09-15 to 2026-09-28)"


def test_a_week_of_points_a_year_before_a_week_of_points_is_no_daily_hole() -> None:
    """Eight daily points, a year without any, then seven daily points (a config server's
    snapshots with no expiry, and the week its service keeps a year on): a week of daily
    points and a yearly tier, not a daily tier of 380 days missing 365 of them."""
    old = every(D, at(2026, 11, 13), at(2026, 11, 20))
    new = every(D, at(2027, 11, 21), at(2027, 11, 27))
    ladder = ladder_of(old + new)
    assert ladder.words() == "daily for 7 days, yearly for 2 years; oldest 2026-11-13"
    assert not ladder.has_gaps


def test_a_yearly_tail_with_a_single_point_is_its_own_tier() -> None:
    """Monthly points, then one point seven months older: a yearly tier of two points."""
    months = [at(2026, m, 1) for m in range(1, 12)]
    ladder = ladder_of([*months, at(2025, 6, 1)])
    assert ladder.words() == "monthly for 11 months, yearly for 2 years; oldest 2025-06-01"
    assert [t.points for t in ladder.tiers] == [11, 2]


moments = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


# too_slow: drawing 60 moments took over a second at load 10 (a shared CI machine), which
# says nothing of the ladder; every example is still drawn and checked.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(moments, max_size=60))
def test_any_points_make_a_ladder_whose_tiers_cover_them(points: list[datetime]) -> None:
    """For any points: tiers cover every point once (shared boundaries counted once), newest
    first, each reaching no later than the one before, spanning at least one unit, in
    words that are never empty."""
    ladder = ladder_of(points)
    count = len(set(points))
    assert ladder.points == count
    if count > 1:
        assert sum(t.points for t in ladder.tiers) - (len(ladder.tiers) - 1) == count
        assert ladder.tiers[-1].reaches == ladder.oldest == min(points)
    reaches = [t.reaches for t in ladder.tiers]
    assert reaches == sorted(reaches, reverse=True)
    assert all(t.span >= 1 and t.points >= 2 and t.words() for t in ladder.tiers)
    assert ladder.words()
