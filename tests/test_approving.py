"""What approving a held cluster costs (retention.core.approving and the three ladders of
retention.core.restorable): cuts of existing expiries, the held changes summed up, and the
restore points approving removes, on clusters decided by decide at a fixed time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retention.core.approving import (
    cut_of,
    cut_seconds,
    cut_words,
    held_cost,
    is_long_cut,
    removed_words,
)
from retention.core.decide import decide
from retention.core.model import ClusterDecisions, ClusterView, SnapshotView, Target
from retention.core.policy.spec import KeepSpec
from retention.core.restorable import describe_restore_points
from retention.core.restorepoints import ladder_of
from tests.support.planning import loaded_policy

H = timedelta(hours=1)
D = timedelta(days=1)
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
TARGET = Target("p" * 24, "c" * 24, "prod-orders")


def daily_history(days: int, *, expires: datetime | None = None) -> list[SnapshotView]:
    """One complete, consistent snapshot a day at 00:00 UTC, the newest today, each with
    ``expires`` (None: no expiry)."""
    newest = NOW.replace(hour=0)
    return [SnapshotView(f"{n:024x}", newest - n * D, True, False, expires) for n in range(days)]


def decided(snapshots: list[SnapshotView], *, keep: KeepSpec, fraction: float) -> ClusterDecisions:
    """The cluster decided at NOW under ``keep`` with max_expire_fraction ``fraction``."""
    policy = loaded_policy(keep=keep, max_expire_fraction=fraction)
    return decide(ClusterView(TARGET, snapshots), [policy], now=NOW, lease_for=H)


def test_a_shorten_of_a_later_expiry_is_a_cut_of_the_difference() -> None:
    """A snapshot expiring in 2027-10 that the plan shortens to the grace period is cut by
    the time between the two expiries, in seconds, and the cut is long."""
    far = datetime(2027, 10, 1, tzinfo=UTC)
    plan = decided(daily_history(40, expires=far), keep=KeepSpec(daily=7), fraction=1.0)
    shortened = [d for d in plan.decisions if d.action == "shorten"]
    assert len(shortened) == 33
    first = shortened[0]
    assert first.patch is not None
    assert first.patch.expires is not None
    assert cut_seconds(first) == int((far - first.patch.expires).total_seconds())
    assert is_long_cut(cut_seconds(first))
    cut = cut_of(first)
    assert cut is not None
    assert (cut.expires, cut.after) == (far, first.patch.expires)


def test_a_change_to_a_snapshot_without_expiry_or_a_later_one_is_no_cut() -> None:
    """Shortening a snapshot that never expired, or extending one, takes nothing off an
    expiry: no cut."""
    never = decided(daily_history(40), keep=KeepSpec(daily=7), fraction=1.0)
    assert {d.action for d in never.decisions} == {"none", "shorten"}
    soon = decided(daily_history(40, expires=NOW + 2 * H), keep=KeepSpec(daily=7), fraction=1.0)
    assert {d.action for d in soon.decisions} == {"none", "extend"}
    assert all(cut_seconds(d) is None for d in [*never.decisions, *soon.decisions])


def test_cut_words_use_the_largest_whole_unit() -> None:
    """A cut reads in days from one day up, in hours below."""
    assert cut_words(306 * 86400 + 5) == "cut by 306 days"
    assert cut_words(86400) == "cut by 1 day"
    assert cut_words(5 * 3600 + 59) == "cut by 5 hours"
    assert cut_words(20) == "cut by 1 hour"
    assert not is_long_cut(29 * 86400)
    assert is_long_cut(30 * 86400)
    assert not is_long_cut(None)


def test_held_cost_sums_the_held_changes_of_a_held_cluster() -> None:
    """A cluster held by max_expire_fraction has its held changes counted by action, their
    storage summed, its oldest affected snapshot and its largest cut named."""
    far = datetime(2027, 10, 1, tzinfo=UTC)
    snapshots = daily_history(20, expires=far)
    snapshots[-1] = SnapshotView("f" * 24, snapshots[-1].created, True, False, None, True, 7)
    plan = decided(snapshots, keep=KeepSpec(daily=7), fraction=0.1)
    assert plan.holds
    assert plan.holds[0].kind == "max_expire_fraction"
    cost = held_cost(plan)
    assert cost is not None
    assert cost.by_action == {"shorten": 13}
    assert cost.storage_bytes == 7
    assert (cost.oldest_id, cost.oldest_created) == ("f" * 24, snapshots[-1].created)
    # Every shortened snapshot gets now + grace, so all cuts from 2027-10-01 are equal, but
    # for the one without an expiry, which has none: the tie goes to the highest id.
    assert cost.largest_cut is not None
    assert cost.largest_cut.snapshot_id == max(
        d.snapshot.id for d in plan.decisions if d.action == "shorten" and d.snapshot.expires
    )
    assert cost.long_cuts == 12


def test_a_cluster_without_held_changes_has_no_cost_and_one_ladder() -> None:
    """Nothing held: no cost, and the restore points have no today or if-approved ladder."""
    plan = decided(daily_history(20), keep=KeepSpec(daily=7), fraction=1.0)
    assert held_cost(plan) is None
    restorable = describe_restore_points(plan, NOW)
    assert restorable is not None
    assert (restorable.today, restorable.if_approved) == (None, None)
    assert restorable.ladder.words() == "daily for 7 days; oldest 2026-11-21"


def test_a_held_cluster_has_three_ladders() -> None:
    """Held by max_expire_fraction: as planned its held snapshots stay (the ladder of
    today), while if approved only what the policy keeps is left."""
    plan = decided(daily_history(30), keep=KeepSpec(daily=7), fraction=0.1)
    restorable = describe_restore_points(plan, NOW)
    assert restorable is not None
    assert restorable.today is not None
    assert restorable.if_approved is not None
    assert restorable.today.words() == "daily for 30 days; oldest 2026-10-29"
    assert restorable.ladder.words() == "daily for 30 days; oldest 2026-10-29"
    assert restorable.if_approved.words() == "daily for 7 days; oldest 2026-11-21"
    assert removed_words(restorable.ladder, restorable.if_approved) == (
        "approving removes 23 restore points: daily 8-30; oldest moves from 2026-10-29 to "
        "2026-11-21"
    )


def test_today_as_planned_and_if_approved_are_three_different_sets() -> None:
    """Snapshots already due to expire within the hour are restore points today but not as
    planned (the service deletes them whatever is approved); the held shortens stay as
    planned and go if approved: 30, 20 and 7 days."""
    history = [
        SnapshotView(s.id, s.created, True, False, NOW + H if n >= 20 else None)
        for n, s in enumerate(daily_history(30))
    ]
    plan = decided(history, keep=KeepSpec(daily=7), fraction=0.1)
    restorable = describe_restore_points(plan, NOW)

    assert restorable is not None
    assert restorable.today is not None
    assert restorable.if_approved is not None
    assert restorable.today.words() == "daily for 30 days; oldest 2026-10-29"
    assert restorable.ladder.words() == "daily for 20 days; oldest 2026-11-08"
    assert restorable.if_approved.words() == "daily for 7 days; oldest 2026-11-21"
    assert removed_words(restorable.ladder, restorable.if_approved) == (
        "approving removes 13 restore points: daily 8-20; oldest moves from 2026-11-08 to "
        "2026-11-21"
    )


def test_a_config_server_has_nothing_to_approve() -> None:
    """A config server over its fraction is held, but its changes are advisory (never
    sent): approving them costs no restore point, so it has no cost and one ladder."""
    target = Target("p" * 24, "f" * 24, "cfg0.example.net", "config-server")
    policy = loaded_policy(keep=KeepSpec(daily=7), max_expire_fraction=0.1)
    view = ClusterView(target, daily_history(30))
    plan = decide(view, [policy], now=NOW, lease_for=H)

    assert plan.holds
    assert held_cost(plan) is None
    restorable = describe_restore_points(plan, NOW)
    assert restorable is not None
    assert restorable.if_approved is None


def test_removed_words_name_a_tier_that_goes_whole() -> None:
    """A tier approving leaves no point of is named whole, with its span; a tier it
    shortens, by the stretch it loses."""
    newest = NOW.replace(hour=0)
    weekly = [newest - 7 * D * n for n in range(1, 9)]
    daily = [newest - D * n for n in range(7)]
    before, after = ladder_of([*daily, *weekly]), ladder_of(daily)
    assert removed_words(before, after) == (
        "approving removes 8 restore points: daily 8, weekly (all 9 weeks); oldest moves from "
        "2026-10-02 to 2026-11-21"
    )


def test_removed_words_when_nothing_or_everything_goes() -> None:
    """Approving that takes no restore point says so; one that takes them all says none is
    left."""
    points = [NOW - D * n for n in range(5)]
    assert removed_words(ladder_of(points), ladder_of(points)) == (
        "approving removes no restore point"
    )
    assert removed_words(ladder_of(points), ladder_of([])) == (
        "approving removes 5 restore points: daily (all 5 days); none is left"
    )
