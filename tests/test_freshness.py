"""Backups that stopped (retention.core.freshness): what a cluster's newest restorable
snapshot is expected to be at most, from its policies or its own cadence, and when it is
older than that."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from retention.core.freshness import DEFAULT_WITHIN, age_words, freshness
from retention.core.merged import Merged
from retention.core.policy.loader import LoadedPolicy
from retention.core.policy.model import Policy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def every(step: timedelta, count: int, newest: datetime = NOW) -> list[datetime]:
    """``count`` snapshot times ``step`` apart, the newest at ``newest``."""
    return [newest - i * step for i in range(count)]


def loaded(name: str, newest_within: str | None) -> LoadedPolicy:
    """A policy that keeps the last 3 snapshots and, when given, expects one within."""
    spec: dict[str, object] = {"name": name, "keep": {"last": 3}}
    if newest_within is not None:
        spec["expect"] = {"newest_within": newest_within}
    return LoadedPolicy(Policy.model_validate(spec), Path(f"{name}.yaml"), sha256="0" * 64)


def test_a_six_hourly_cluster_is_expected_within_13_hours() -> None:
    """Twice a 6-hour cadence and an hour: 13 h, from the cluster's own snapshots."""
    got = freshness(every(6 * HOUR, 10, NOW - 2 * HOUR), NOW, within=None, any_snapshot=True)

    assert got is not None
    assert (got.within_seconds, got.source, got.age_seconds, got.stale) == (
        13 * 3600,
        "cadence",
        2 * 3600,
        False,
    )
    assert (
        got.words()
        == "newest restorable snapshot 2 h old; expected within 13 h (twice its cadence)"
    )


def test_a_daily_cluster_is_expected_within_49_hours_and_is_stale_after() -> None:
    """A daily cluster whose newest snapshot is 3 days old is stale against 49 h."""
    got = freshness(
        every(24 * HOUR, 8, NOW - timedelta(days=3)), NOW, within=None, any_snapshot=True
    )

    assert got is not None
    assert (got.within_seconds, got.source, got.stale) == (49 * 3600, "cadence", True)
    assert got.words() == (
        "newest restorable snapshot 3 days old; expected within 2 days 1 h (twice its cadence)"
    )


def test_the_cadence_is_the_lower_median_of_the_newest_intervals() -> None:
    """One odd gap among the newest snapshots does not move the cadence: five 6-hour gaps and
    one of 3 days still give 13 h."""
    times = [*every(6 * HOUR, 6), NOW - timedelta(days=4)]

    got = freshness(times, NOW, within=None, any_snapshot=True)

    assert got is not None
    assert got.within_seconds == 13 * 3600


def test_fewer_than_three_snapshots_take_the_default_of_36_hours() -> None:
    """Two snapshots are one interval, no cadence: 36 h, said to be the default."""
    got = freshness(every(6 * HOUR, 2), NOW, within=None, any_snapshot=True)

    assert got is not None
    assert timedelta(hours=36) == DEFAULT_WITHIN
    assert (got.within_seconds, got.source, got.stale) == (36 * 3600, "default", False)


def test_a_cluster_without_any_snapshot_and_no_setting_is_not_checked() -> None:
    """No snapshot at all and no newest_within: backup may be off for it on purpose."""
    assert freshness([], NOW, within=None, any_snapshot=False) is None


def test_a_cluster_without_any_snapshot_is_stale_when_a_policy_expects_one() -> None:
    """No snapshot and newest_within 36h: stale, with no newest and no age."""
    got = freshness([], NOW, within=timedelta(hours=36), any_snapshot=False)

    assert got is not None
    assert (got.newest, got.age_seconds, got.stale, got.source) == (None, None, True, "policy")
    assert (
        got.words() == "no restorable snapshot; expected within 1 day 12 h (expect.newest_within)"
    )


def test_snapshots_none_restorable_are_stale_against_the_default() -> None:
    """A cluster whose snapshots are all incomplete or inconsistent has no restorable one: it
    is checked (it has snapshots) and stale."""
    got = freshness([], NOW, within=None, any_snapshot=True)

    assert got is not None
    assert (got.stale, got.source, got.within_seconds) == (True, "default", 36 * 3600)


def test_newest_within_of_a_policy_overrides_the_cadence() -> None:
    """newest_within 10d makes a daily cluster stopped 3 days ago not stale."""
    got = freshness(
        every(24 * HOUR, 8, NOW - timedelta(days=3)),
        NOW,
        within=timedelta(days=10),
        any_snapshot=True,
    )

    assert got is not None
    assert (got.within_seconds, got.source, got.stale) == (10 * 86400, "policy", False)


def test_the_smallest_newest_within_of_the_matching_policies_wins() -> None:
    """Of two matching policies, 36h and 10d, the cluster is expected within 36h; a policy
    that sets none does not count, and none setting it leaves the cadence to decide."""
    both = Merged.of([loaded("slow", "10d"), loaded("fast", "36h"), loaded("quiet", None)], NOW)
    neither = Merged.of([loaded("quiet", None)], NOW)

    assert both.newest_within == timedelta(hours=36)
    assert neither.newest_within is None


def test_ages_are_written_to_the_hour() -> None:
    """Under an hour in minutes, then hours, then days and hours."""
    assert [age_words(s) for s in (30, 40 * 60, 13 * 3600, 86400, 3 * 86400 + 2 * 3600)] == [
        "1 min",
        "40 min",
        "13 h",
        "1 day",
        "3 days 2 h",
    ]
