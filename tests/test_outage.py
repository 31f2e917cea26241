"""The outage tolerance's words and the warning for a cluster whose newest kept snapshot
would not outlast the lease (retention.core.outage), from decide's own decisions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from retention.core.decide import decide
from retention.core.horizon import previous_run
from retention.core.model import ClusterDecisions, ClusterView, SnapshotView, Target
from retention.core.outage import LastRun, exposed, span_words
from retention.core.policy.spec import KeepSpec
from tests.support.planning import loaded_policy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
LEASE = timedelta(days=7)
POLICY = loaded_policy(keep=KeepSpec(last=3), max_expire_fraction=1.0)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(7 * 86400, "7 days"), (39 * 3600, "39 hours"), (2 * 86400 + 5 * 3600, "2 days and 5 hours")],
)
def test_a_lease_is_said_in_days_and_hours(seconds: float, words: str) -> None:
    """The tolerance reads in hours below two days, in days (and hours) above."""
    assert span_words(seconds) == words


# A daily job at 03:00 UTC, its last run 9 hours ago: it left kept snapshots 7 days ahead.
LAST = LastRun(NOW - timedelta(hours=9), NOW - timedelta(hours=9) + LEASE, LEASE.total_seconds())


def kept_at(expires_in: list[timedelta], *, do_not_delete: bool = False) -> list[SnapshotView]:
    """Daily snapshots, the newest taken 9 hours ago, expiring ``expires_in`` from now."""
    return [
        SnapshotView(f"s{day}", NOW - timedelta(days=day, hours=9), True, do_not_delete, NOW + left)
        for day, left in enumerate(expires_in)
    ]


def plan_of(snapshots: list[SnapshotView], kind: str = "cluster") -> ClusterDecisions:
    """The decisions of a cluster (or config server) keeping its three newest snapshots."""
    target = Target("p1", "h1" if kind != "cluster" else "c1", "prod", kind=kind)  # type: ignore[arg-type]
    return decide(ClusterView(target, snapshots), [POLICY], now=NOW, lease_for=LEASE)


def test_kept_snapshots_the_last_run_extended_are_not_named() -> None:
    """In a steady state the last run left every kept snapshot over a lease ahead, and the
    newest carries the service's two days until this run extends it: no warning."""
    plan = plan_of(kept_at([timedelta(days=2), timedelta(days=13), timedelta(days=12)]))

    assert exposed(plan, LAST) is None


def test_a_kept_snapshot_shortened_by_hand_is_named() -> None:
    """The newest kept snapshot from before the last run, found expiring within a day (a
    person shortened it), is named with its expiry: an outage would cost it."""
    plan = plan_of(kept_at([timedelta(days=2), timedelta(hours=20), timedelta(days=12)]))

    assert exposed(plan, LAST) == (
        "prod: its newest kept snapshot from before the last scheduled run, s1, expires at "
        "2026-11-22T08:00:00Z, sooner than that run left it: an outage of 7 days would cost "
        "it (shortened by hand, or that run did not happen or apply); this plan extends it"
    )


@pytest.mark.parametrize("kind", ["config-server"])
def test_a_config_server_is_passed_over(kind: str) -> None:
    """A config server's changes are never sent (the plan's notice says so): no warning."""
    plan = plan_of(kept_at([timedelta(days=2), timedelta(hours=20), timedelta(days=1)]), kind)

    assert exposed(plan, LAST) is None


def test_a_snapshot_under_donotdelete_is_not_named() -> None:
    """doNotDelete outlasts any outage, whatever its expiry says."""
    short = [timedelta(days=2), timedelta(hours=20), timedelta(hours=20)]
    plan = plan_of(kept_at(short, do_not_delete=True))

    assert exposed(plan, LAST) is None


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    """A time in November 2026, UTC."""
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "now", "last"),
    [
        ("0 3 * * *", at(21, 3, 0, 30), at(20, 3)),
        ("0 3 * * *", at(21, 3), at(20, 3)),
        ("0 3 * * *", NOW, at(21, 3)),
        ("*/10 * * * *", at(21, 12, 0, 30), at(21, 11, 50)),
        ("*/10 * * * *", at(21, 12, 7), at(21, 12)),
    ],
)
def test_the_last_run_is_not_the_run_its_own_tick_started(
    schedule: str, now: datetime, last: datetime
) -> None:
    """A scheduled run starts a little after its tick: that tick is the run's own, and the
    last run is the one before it; a plan made well after a tick has that tick as its last."""
    assert previous_run(schedule, now) == last


def test_a_steady_daily_run_a_minute_after_its_tick_names_no_cluster() -> None:
    """The run at 03:00:30 finds the snapshot taken since yesterday's run with the service's
    two days (no run saw it yet): no warning."""
    now, yesterday = at(21, 3, 0, 30), at(20, 3)
    snapshots = [
        SnapshotView("y", yesterday + timedelta(hours=9), True, False, now + timedelta(days=1)),
        SnapshotView("d2", yesterday - timedelta(hours=15), True, False, yesterday + 2 * LEASE),
        SnapshotView("d3", yesterday - timedelta(hours=39), True, False, yesterday + 2 * LEASE),
    ]
    last_at = previous_run("0 3 * * *", now)
    assert last_at is not None
    last = LastRun(last_at, last_at + LEASE, LEASE.total_seconds())
    plan = decide(
        ClusterView(Target("p1", "c1", "prod"), snapshots), [POLICY], now=now, lease_for=LEASE
    )

    assert exposed(plan, last) is None
