"""The keep-rule engine beyond restic's vectors: buckets in a policy's time zone across DST
changes, cron `every` buckets, durations, and purity (same inputs, same answer)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from retention.core.policy.duration import RetentionDuration
from retention.core.policy.engine import evaluate
from retention.core.policy.every import EveryRule
from retention.core.policy.spec import Item, KeepSpec
from retention.core.timestamps import add_date

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def hourly_items(zone: ZoneInfo, start_local: datetime, hours: int) -> list[Item]:
    """One item per real hour, starting at a local wall time, ids by position."""
    start = start_local.replace(tzinfo=zone).astimezone(UTC)
    return [Item(f"h{i:03d}", start + timedelta(hours=i)) for i in range(hours)]


@pytest.mark.parametrize(
    ("zone", "short_day", "long_day"),
    [
        (BERLIN, datetime(2026, 3, 29), datetime(2026, 10, 25)),
        (NEW_YORK, datetime(2026, 3, 8), datetime(2026, 11, 1)),
    ],
    ids=["Europe/Berlin", "America/New_York"],
)
def test_daily_buckets_follow_local_days_across_dst(
    zone: ZoneInfo, short_day: datetime, long_day: datetime
) -> None:
    """A 23-hour and a 25-hour local day are each one daily bucket: none skipped, none twice."""
    for day, hours in ((short_day, 23), (long_day, 25)):
        items = hourly_items(zone, day - timedelta(days=1), 24 + hours + 24)
        result = evaluate(items, KeepSpec(daily=-1), datetime(2030, 1, 1, tzinfo=UTC), zone)
        kept_days = [i.time.astimezone(zone).date() for i in result.keep]
        expected = [(day + timedelta(days=d)).date() for d in (1, 0, -1)]
        # -1 keeps the newest of every day plus the oldest item: three days, four items.
        assert kept_days == [*expected, expected[-1]]
        newest_of_day = [i for i in result.keep if i.time.astimezone(zone).date() == day.date()]
        assert newest_of_day[0].time.astimezone(zone).hour == 23
        in_day = [i for i in items if i.time.astimezone(zone).date() == day.date()]
        assert len(in_day) == hours


def test_each_real_hour_of_a_fall_back_is_its_own_hourly_bucket() -> None:
    """The repeated 02:00 hour of Berlin's fall-back gives two hourly buckets, not one."""
    items = hourly_items(BERLIN, datetime(2026, 10, 25, 0), 5)  # 00, 01, 02, 02 (again), 03

    result = evaluate(items, KeepSpec(hourly=-1), datetime(2030, 1, 1, tzinfo=UTC), BERLIN)

    assert [i.id for i in result.keep] == ["h004", "h003", "h002", "h001", "h000"]


def test_buckets_use_the_policy_zone_not_utc() -> None:
    """23:30 UTC is the next day in Berlin: two snapshots an hour apart fall in different days."""
    items = [
        Item("late", datetime(2026, 6, 1, 22, 30, tzinfo=UTC)),  # 00:30 on June 2 in Berlin
        Item("early", datetime(2026, 6, 1, 21, 30, tzinfo=UTC)),  # 23:30 on June 1 in Berlin
    ]
    now = datetime(2026, 7, 1, tzinfo=UTC)

    in_utc = evaluate(items, KeepSpec(daily=5), now, UTC)
    in_berlin = evaluate(items, KeepSpec(daily=5), now, BERLIN)

    assert [i.id for i in in_utc.keep] == ["late", "early"]  # early kept as the oldest only
    assert in_utc.reasons["early"].texts == ["oldest daily snapshot"]
    assert in_berlin.reasons["early"].texts == ["daily snapshot"]


def test_every_keeps_the_newest_per_cron_interval() -> None:
    """A quarterly cron keeps the newest snapshot of each quarter, `count` quarters back."""
    items = [
        Item(f"d{i:03d}", datetime(2026, 11, 1, tzinfo=UTC) - timedelta(days=7 * i))
        for i in range(60)
    ]
    rule = EveryRule("0 0 1 1,4,7,10 *", 3)

    result = evaluate(items, KeepSpec(every=(rule,)), datetime(2026, 11, 21, tzinfo=UTC))

    kept = [(i.time.date().isoformat(), result.reasons[i.id].texts) for i in result.keep]
    assert kept == [
        ("2026-11-01", ["cron 0 0 1 1,4,7,10 *"]),
        ("2026-09-27", ["cron 0 0 1 1,4,7,10 *"]),
        ("2026-06-28", ["cron 0 0 1 1,4,7,10 *"]),
    ]
    assert result.reasons["d000"].counters == {"cron 0 0 1 1,4,7,10 *": 2}


def test_every_with_counts_left_keeps_the_oldest_too() -> None:
    """Like restic's count rules, an every-rule with counts left keeps the oldest snapshot."""
    items = [
        Item("a", datetime(2026, 11, 2, tzinfo=UTC)),
        Item("b", datetime(2026, 11, 1, 12, tzinfo=UTC)),
    ]

    result = evaluate(
        items, KeepSpec(every=(EveryRule("0 0 * * *", 5),)), datetime(2026, 12, 1, tzinfo=UTC)
    )

    assert [result.reasons[i.id].texts for i in result.keep] == [
        ["cron 0 0 * * *"],
        ["cron 0 0 * * *"],
    ]


def test_listed_ids_are_kept() -> None:
    """Ids listed in the spec are kept with their own reason."""
    items = [
        Item("a", datetime(2026, 1, 1, tzinfo=UTC)),
        Item("b", datetime(2026, 1, 2, tzinfo=UTC)),
    ]

    result = evaluate(items, KeepSpec(ids=frozenset({"a"})), datetime(2026, 2, 1, tzinfo=UTC))

    assert [i.id for i in result.keep] == ["a"]
    assert result.reasons["a"].texts == ["listed by id"]


def test_empty_spec_keeps_nothing_and_says_it_is_empty() -> None:
    """A spec with no rule is empty and keeps nothing (restic's case 0)."""
    items = [Item("a", datetime(2026, 1, 1, tzinfo=UTC))]

    assert KeepSpec().empty
    assert not KeepSpec(ids=frozenset({"x"})).empty
    assert evaluate(items, KeepSpec(), datetime(2026, 2, 1, tzinfo=UTC)).keep == []


def test_evaluation_is_pure_and_order_independent() -> None:
    """The same items in any input order, evaluated twice, give the same answer."""
    items = [
        Item(f"s{i}", datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=7 * i)) for i in range(50)
    ]
    spec = KeepSpec(last=2, daily=5, weekly=2, within_daily=RetentionDuration(days=9))
    now = datetime(2026, 3, 1, tzinfo=UTC)

    first = evaluate(items, spec, now)
    second = evaluate(list(reversed(items)), spec, now)

    assert [i.id for i in first.keep] == [i.id for i in second.keep]
    assert first.reasons == second.reasons


@pytest.mark.parametrize(
    ("text", "parts", "canonical"),
    [("7d", (0, 0, 7, 0), "7d"), ("1y1d1m", (1, 1, 1, 0), "1y1m1d"), ("36h", (0, 0, 0, 36), "36h")],
)
def test_duration_parse_and_canonical_form(
    text: str, parts: tuple[int, ...], canonical: str
) -> None:
    """Durations parse in any unit order and print in restic's canonical y m d h order."""
    duration = RetentionDuration.parse(text)

    assert (duration.years, duration.months, duration.days, duration.hours) == parts
    assert str(duration) == canonical


@pytest.mark.parametrize("text", ["", "7", "7w", "1d2d", "d", "-1d", "1.5d"])
def test_bad_durations_are_refused(text: str) -> None:
    """Text that is not a restic duration raises ValueError."""
    with pytest.raises(ValueError, match=r"duration|twice"):
        RetentionDuration.parse(text)


def test_month_shift_normalises_like_go() -> None:
    """March 31 minus one month is March 3 (Go normalises Feb 31), not February 28."""
    march_31 = datetime(2026, 3, 31, 12, tzinfo=UTC)

    assert add_date(march_31, 0, -1, 0, UTC) == datetime(2026, 3, 3, 12, tzinfo=UTC)
    assert RetentionDuration(years=1).after(datetime(2024, 2, 29, tzinfo=UTC)) == datetime(
        2025, 3, 1, tzinfo=UTC
    )


def test_each_match_says_which_of_its_rules_kept_snapshots_it_is() -> None:
    """A match carries its counter (the rule's n-th kept item, newest first, the "oldest"
    one included) and the rule's count: "daily #3 of 3"; unlimited rules count too."""
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    items = [Item(f"d{i}", now - timedelta(days=i, hours=1)) for i in range(5)]

    result = evaluate(items, KeepSpec(daily=3, weekly=-1), now)

    daily = {
        item_id: next((m.counter, m.count) for m in reason.matches if m.rule == "daily")
        for item_id, reason in result.reasons.items()
        if any(m.rule == "daily" for m in reason.matches)
    }
    assert daily == {"d0": (1, 3), "d1": (2, 3), "d2": (3, 3)}
    weekly = [m.counter for r in result.reasons.values() for m in r.matches if m.rule == "weekly"]
    assert weekly == sorted(weekly)
    assert weekly[0] == 1
    assert all(
        m.count == -1 for r in result.reasons.values() for m in r.matches if m.rule == "weekly"
    )


def test_a_utc_shift_of_a_time_on_another_clock_is_taken_in_utc() -> None:
    """A duration in UTC added to a time given on Paris's clock across the spring change
    is added in UTC: a day (or 24 hours) after noon on 28 March in Paris is 11:00 UTC on
    the 29th (the shortcut for UTC durations takes UTC times only)."""
    paris_noon = datetime(2026, 3, 28, 12, tzinfo=ZoneInfo("Europe/Paris"))
    eleven = datetime(2026, 3, 29, 11, tzinfo=UTC)

    assert RetentionDuration(days=1).after(paris_noon, UTC) == eleven
    assert RetentionDuration(hours=24).after(paris_noon, UTC) == eleven


def test_the_two_halves_of_a_fall_back_hour_are_two_hourly_buckets() -> None:
    """02:30 twice on Paris's clock on 25 October (fold 0, then fold 1) are two real hours:
    hourly keeps each as the newest of its bucket, though the two times are equal as
    datetimes (the engine's time caches key on the fold too)."""
    paris = ZoneInfo("Europe/Paris")
    first = datetime(2026, 10, 25, 2, 30, tzinfo=paris, fold=0)
    second = datetime(2026, 10, 25, 2, 30, tzinfo=paris, fold=1)
    now = datetime(2026, 10, 26, tzinfo=UTC)
    evaluate([Item("a", first)], KeepSpec(hourly=5), now, paris)  # fills the caches

    result = evaluate([Item("a", first), Item("b", second)], KeepSpec(hourly=5), now, paris)

    assert {k: v.texts for k, v in result.reasons.items()} == {
        "a": ["hourly snapshot"],
        "b": ["hourly snapshot"],
    }
