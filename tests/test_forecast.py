"""The pure forecast core: a cadence's snapshot times and expiries (core.forecast), the
cadence a cluster's own snapshots show (core.cadence), and a tiny cluster run forward
day by day, its counts computed by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retention.core.cadence import (
    Cadence,
    NewExpiry,
    ScheduleTerms,
    observed_cadence,
    schedule_cadence,
)
from retention.core.forecast import forecast_cluster, steady_index
from retention.core.model import SnapshotView, Target
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.spec import KeepSpec
from tests.support.planning import loaded_policy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)  # a Saturday
MIDNIGHT = NOW.replace(hour=0)
H, D = timedelta(hours=1), timedelta(days=1)
TARGET = Target("5e2211c17a3e5a48f5497de3", "5e4e593f70dfbf1e2f6e1d30", "tiny")


def snap(
    name: str, created: datetime, *, expires: datetime | None = None, size: int = 0
) -> SnapshotView:
    """A complete, consistent snapshot."""
    return SnapshotView(name, created, True, False, expires, True, size or None)


def test_taken_is_aligned_to_next_at_and_bounded_after_exclusive_until_inclusive() -> None:
    """Every 6 hours from midnight: (00:00, 12:00] gives 06:00 and 12:00; a window that
    starts before next_at gives next_at itself; no interval gives nothing."""
    cadence = Cadence("observed", 6 * H, MIDNIGHT)

    assert list(cadence.taken(MIDNIGHT, NOW)) == [MIDNIGHT + 6 * H, NOW]
    assert list(cadence.taken(MIDNIGHT - D, MIDNIGHT + H)) == [MIDNIGHT]
    assert list(cadence.taken(NOW + H, NOW + 5 * H)) == []
    assert list(Cadence("stopped").taken(MIDNIGHT, NOW + 10 * D)) == []


def test_size_grows_by_the_day_from_next_at() -> None:
    """1,000 bytes growing 100 a day: 1,500 five days after next_at."""
    cadence = Cadence("observed", D, MIDNIGHT, 1000, 100.0)

    assert cadence.size_at(MIDNIGHT + 5 * D) == 1500


def test_new_expiry_gives_the_reference_snapshot_its_daily_weekly_or_monthly_term() -> None:
    """The snapshot at the reference time is the daily one, on a Sunday also the weekly
    one, on the 1st the monthly one, and lives by its longest term; another snapshot lives
    by the plain term; no term at all is no expiry."""
    terms = NewExpiry(2 * D, daily=7 * D, weekly=28 * D, monthly_months=2, reference=0)
    sunday, monday = MIDNIGHT + D, MIDNIGHT + 2 * D  # 2026-11-22 and 23, at midnight UTC
    first = datetime(2026, 12, 1, tzinfo=UTC)

    assert terms.expires(sunday) == sunday + 28 * D
    assert terms.expires(monday) == monday + 7 * D
    assert terms.expires(monday + 6 * H) == monday + 6 * H + 2 * D
    assert terms.expires(first) == datetime(2027, 2, 1, tzinfo=UTC)
    assert NewExpiry(None).expires(monday) is None
    assert NewExpiry(None, daily=7 * D, reference=3600).expires(monday) is None


def test_schedule_cadence_aligns_to_the_reference_time_and_keeps_the_schedule_terms() -> None:
    """A 6-hourly schedule with its reference at 01:30 UTC: the next snapshot is the first
    tick after the newest one, and new snapshots get the schedule's terms."""
    times = [NOW - 6 * H * i for i in range(20)]
    snapshots = [snap(f"s{i}", t, expires=t + 3 * D) for i, t in enumerate(times)]
    terms = ScheduleTerms(6, reference_hour=1, reference_minute=30, retention_days=2, daily_days=7)

    cadence = schedule_cadence(terms, snapshots, NOW)

    newest = max(times)
    assert cadence.source == "schedule"
    assert cadence.interval == 6 * H
    assert cadence.next_at is not None
    assert newest < cadence.next_at <= newest + 6 * H
    assert (cadence.next_at.hour * 60 + cadence.next_at.minute) % 360 == 90
    assert cadence.expiry == NewExpiry(2 * D, 7 * D, None, None, reference=5400)


def test_observed_cadence_takes_the_median_gap_and_the_newest_expiry() -> None:
    """Snapshots every 6 hours for 10 days with one missing: the interval is 6 hours (the
    median gap, not the 12-hour hole), the next one is due 6 hours after the newest, and
    new snapshots expire as long after their creation as the newest does."""
    times = [NOW - 6 * H * i for i in range(40) if i != 7]
    snapshots = [snap(f"s{i}", t, expires=t + 3 * D) for i, t in enumerate(times)]

    cadence = observed_cadence(snapshots, NOW)

    assert (cadence.source, cadence.interval, cadence.next_at) == ("observed", 6 * H, NOW + 6 * H)
    assert cadence.expiry == NewExpiry(3 * D)


def test_a_cluster_whose_backups_stopped_takes_no_more() -> None:
    """The newest snapshot 2 days old on a 6-hour cadence (more than twice it and an hour):
    stopped, no interval; no snapshot at all: none."""
    snapshots = [snap(f"s{i}", NOW - 2 * D - 6 * H * i) for i in range(20)]

    assert observed_cadence(snapshots, NOW) == Cadence("stopped")
    assert observed_cadence([], NOW) == Cadence("none")


def test_observed_sizes_grow_by_their_least_squares_slope() -> None:
    """Daily snapshots growing 1,000 bytes a day: growth 1,000 a day, size the newest's."""
    snapshots = [snap(f"s{i}", NOW - D * i, size=50_000 - 1000 * i) for i in range(10)]

    cadence = observed_cadence(snapshots, NOW)

    assert round(cadence.growth_per_day) == 1000
    assert cadence.size_bytes == 50_000


def tiny_forecast(*, max_expire_fraction: float, approve_held: bool = True) -> list[int]:
    """Daily snapshots at midnight, 3 today, under keep last 2 with a grace of 2 days, run
    3 days from noon; the count after each step."""
    snapshots = [snap(f"s{i}", MIDNIGHT - D * i) for i in range(3)]
    cadence = Cadence("observed", D, MIDNIGHT + D)  # no service expiry
    policy = loaded_policy(
        "tiny",
        KeepSpec(last=2),
        grace=RetentionDuration(days=2),
        max_expire_fraction=max_expire_fraction,
    )
    result = forecast_cluster(
        TARGET, snapshots, [policy], cadence,
        start=NOW, steps=3, step=D, lease_for=7 * D, approve_held=approve_held,
    )  # fmt: skip
    return [s.count for s in result.steps]


def test_a_tiny_cluster_day_by_day_with_its_grace_and_the_reaper() -> None:
    """Keep last 2, grace 2 days, a snapshot a day: step 0 keeps today's and yesterday's
    and gives the one before an expiry 2 days on (3 on the service); step 1 takes one
    more (4); step 2 and 3 each take one and the reaper deletes the one shortened two days
    before, at its expiry (4, 4)."""
    assert tiny_forecast(max_expire_fraction=1.0) == [3, 4, 4, 4]


def test_a_held_run_changes_nothing_unless_approved() -> None:
    """A max_expire_fraction of 0.1 holds every run's shortening: approved (the default)
    the counts are those of an unheld run; not approved, nothing expires and every
    snapshot taken stays."""
    assert tiny_forecast(max_expire_fraction=0.1) == [3, 4, 4, 4]
    assert tiny_forecast(max_expire_fraction=0.1, approve_held=False) == [3, 4, 5, 6]


def test_the_oldest_restore_point_and_the_ladder_follow_the_kept_snapshots() -> None:
    """After the last step of the tiny cluster the restore points are the two kept."""
    snapshots = [snap(f"s{i}", MIDNIGHT - D * i) for i in range(3)]
    policy = loaded_policy("tiny", KeepSpec(last=2), max_expire_fraction=1.0)
    result = forecast_cluster(
        TARGET, snapshots, [policy], Cadence("observed", D, MIDNIGHT + D),
        start=NOW, steps=3, step=D, lease_for=7 * D,
    )  # fmt: skip

    assert result.steps[-1].oldest == MIDNIGHT + 2 * D
    assert result.ladder is not None
    assert result.ladder.points == 2


def test_steady_index_is_the_first_step_from_which_the_count_stays() -> None:
    """Within 5% (at least one snapshot) of the last count from index 2 on; none for none."""
    assert steady_index([40, 30, 17, 16, 16, 15, 16]) == 2
    assert steady_index([5]) == 0
    assert steady_index([]) is None
