"""The engine's trace: what every configured rule did with one item. It must agree with
evaluate (checked with hypothesis) and say in plain words why a rule passed an item by."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retention.core.policy.duration import RetentionDuration
from retention.core.policy.engine import evaluate
from retention.core.policy.every import EveryRule
from retention.core.policy.spec import Item, KeepSpec
from retention.core.policy.trace import trace
from tests.support import strategies
from tests.support.examples import examples

NOW = datetime(2026, 11, 21, 12, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
# Newest first: two on Nov 20 (one day bucket), one exactly 2 days before the newest, one in
# October. 2026-11-21 is a Saturday of ISO week 47.
ITEMS = [
    Item("n0", datetime(2026, 11, 21, 3, tzinfo=UTC)),
    Item("n1", datetime(2026, 11, 20, 15, tzinfo=UTC)),
    Item("n2", datetime(2026, 11, 20, 14, tzinfo=UTC)),
    Item("n3", datetime(2026, 11, 19, 3, tzinfo=UTC)),
    Item("n4", datetime(2026, 10, 15, 3, tzinfo=UTC)),
]


def texts(
    spec: KeepSpec, item_id: str, items: list[Item] = ITEMS, zone: ZoneInfo | None = None
) -> list[str]:
    """The trace's texts for one item of ``items`` (UTC unless a zone is given)."""
    return [t.text for t in trace(items, spec, NOW, zone or ZoneInfo("UTC"), item_id)]


# ---- agreement with evaluate -------------------------------------------------------------

durations = st.none() | strategies.durations(months=1, days=10, hours=30)
counts = strategies.COUNTS
specs = st.builds(
    KeepSpec,
    **strategies.counted(counts),
    yearly=counts,
    within=durations,
    within_hourly=durations,
    within_daily=durations,
    within_weekly=durations,
    within_monthly=durations,
    within_yearly=durations,
    every=strategies.every_rules(
        ["0 0 * * 0", "0 0 1 * *", "0 */6 * * *", "0 0 1 1,4,7,10 *"],
        st.sampled_from([1, 2, 4, -1]),
        max_size=2,
    ),
    tags=st.lists(st.sampled_from([("a",), ("a", "b"), ("",), ()]), max_size=2).map(tuple),
    ids=st.frozensets(st.sampled_from([f"i{n}" for n in range(8)]), max_size=3),
)


@st.composite
def item_lists(draw: st.DrawFn) -> list[Item]:
    """Up to 30 items over about 14 months, equal times allowed, some tagged."""
    size = draw(st.integers(1, 30))
    # A coarse grid makes equal times (evaluate's stable order) and shared buckets common.
    step = draw(st.sampled_from([timedelta(minutes=30), timedelta(hours=7), timedelta(days=3)]))
    tags = st.frozensets(st.sampled_from(["a", "b"]))
    return [Item(f"i{n}", NOW - step * draw(st.integers(-2, 140)), draw(tags)) for n in range(size)]


@given(
    items=item_lists(),
    spec=specs,
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]),
)
@settings(max_examples=examples(400), deadline=None)
def test_trace_agrees_with_evaluate(items: list[Item], spec: KeepSpec, zone: str) -> None:
    """For any items and rules, an item is kept by evaluate iff a rule of its trace keeps it,
    and the kept entries carry exactly evaluate's matches (rules, texts and counters)."""
    result = evaluate(items, spec, NOW, ZoneInfo(zone))
    for item in items:
        traced = trace(items, spec, NOW, ZoneInfo(zone), item.id)
        kept = [t.match for t in traced if t.kept]
        assert bool(kept) == (item.id in result.reasons)
        if kept:
            assert Counter(kept) == Counter(result.reasons[item.id].matches)
        for t in traced:
            assert (t.match is not None, bool(t.why)) == (t.kept, not t.kept)
            if not t.kept:
                assert t.text == f"{t.label}: {t.why}"


def test_one_entry_per_configured_rule_in_a_fixed_order() -> None:
    """Every rule set gets one entry (count 0 is not set), in the documented order."""
    spec = KeepSpec(
        yearly=1,
        last=2,
        within_daily=RetentionDuration(days=2),
        within=RetentionDuration(days=1),
        every=(EveryRule("0 0 1 * *", 2), EveryRule("0 0 * * 0", 1)),
        tags=(("a",),),
        ids=frozenset({"n3"}),
    )

    rules = [t.rule for t in trace(ITEMS, spec, NOW, UTC, "n1")]

    assert rules == ["last", "yearly", "within", "within_daily", "every", "every", "tags", "ids"]


def test_an_unknown_item_is_an_error() -> None:
    """Tracing an id that is not among the items raises ValueError naming it."""
    with pytest.raises(ValueError, match="no item 'nope'"):
        trace(ITEMS, KeepSpec(daily=1), NOW, UTC, "nope")


# ---- kept -------------------------------------------------------------------------------


def test_kept_entries_say_which_of_the_rules_items_this_is() -> None:
    """A keeping rule says its counter and count, "oldest" when that is why, its window."""
    assert texts(KeepSpec(daily=7), "n3") == ["daily #3 of 7"]
    assert texts(KeepSpec(daily=-1), "n3") == ["daily #3 of unlimited"]
    # n4 shares 2026 with n0, but is the oldest item while the count lasts.
    assert texts(KeepSpec(yearly=3), "n4") == ["yearly #2 of 3 (oldest yearly snapshot)"]
    assert texts(KeepSpec(within=RetentionDuration(days=2)), "n1") == ["within 2d"]
    assert texts(KeepSpec(every=(EveryRule("0 0 1 * *", 4),)), "n4") == [
        "every cron 0 0 1 * * #2 of 4"
    ]
    assert texts(KeepSpec(within_daily=RetentionDuration(days=2)), "n1") == ["within_daily 2d #2"]
    assert texts(KeepSpec(ids=frozenset({"n2"})), "n2") == ["ids (listed by id)"]


def test_kept_entries_carry_evaluates_match() -> None:
    """The kept entry's match is the one evaluate records, counter and count included."""
    [entry] = trace(ITEMS, KeepSpec(daily=7), NOW, UTC, "n3")

    assert entry.kept
    assert (entry.rule, entry.counter, entry.count) == ("daily", 3, 7)
    assert entry.match == evaluate(ITEMS, KeepSpec(daily=7), NOW).reasons["n3"].matches[0]


# ---- passed by --------------------------------------------------------------------------


def test_a_used_up_count_says_so() -> None:
    """A count rule whose count newer items used up says "all N used by newer snapshots"
    (n4 is the only October item: its month is free, the count is not)."""
    assert texts(KeepSpec(last=2), "n2") == ["last: all 2 used by newer snapshots"]
    assert texts(KeepSpec(monthly=1), "n4") == ["monthly: its 1 used by a newer snapshot"]
    assert texts(KeepSpec(every=(EveryRule("0 0 1 * *", 1),)), "n4") == [
        "every cron 0 0 1 * *: its 1 used by a newer snapshot"
    ]


def test_a_taken_bucket_is_the_answer_even_when_the_count_is_used_up() -> None:
    """With the count used up and the bucket held by a newer item, the bucket is named:
    a larger count would not keep the item either."""
    assert texts(KeepSpec(monthly=1), "n1") == [
        "monthly: month 2026-11 already kept by a newer snapshot (n0)"
    ]
    assert texts(KeepSpec(every=(EveryRule("0 0 1 * *", 1),)), "n1") == [
        "every cron 0 0 1 * *: interval from 2026-11-01 00:00 already kept by a newer snapshot (n0)"
    ]


def test_a_taken_bucket_names_the_bucket_and_the_newer_snapshot() -> None:
    """A bucket rule whose bucket a newer item holds names the bucket and that item."""
    assert texts(KeepSpec(daily=7), "n2") == [
        "daily: day 2026-11-20 already kept by a newer snapshot (n1)"
    ]
    assert texts(KeepSpec(weekly=5), "n1") == [
        "weekly: week 2026-W47 already kept by a newer snapshot (n0)"
    ]
    assert texts(KeepSpec(monthly=12), "n1") == [
        "monthly: month 2026-11 already kept by a newer snapshot (n0)"
    ]
    assert texts(KeepSpec(yearly=3), "n1") == [
        "yearly: year 2026 already kept by a newer snapshot (n0)"
    ]
    assert texts(KeepSpec(within_daily=RetentionDuration(days=3)), "n2") == [
        "within_daily 3d: day 2026-11-20 already kept by a newer snapshot (n1)"
    ]
    assert texts(KeepSpec(every=(EveryRule("0 0 1 * *", 4),)), "n1") == [
        "every cron 0 0 1 * *: interval from 2026-11-01 00:00 already kept by a newer snapshot (n0)"
    ]
    [entry] = trace(ITEMS, KeepSpec(daily=7), NOW, UTC, "n2")
    assert (entry.kept, entry.by, entry.count) == (False, "n1", 7)


def test_buckets_are_named_on_the_policy_zones_clock() -> None:
    """Hours and years are named in the policy's zone; a fall-back hour says its offset."""
    hour = [
        Item("late", datetime(2026, 11, 20, 13, 40, tzinfo=UTC)),
        Item("early", datetime(2026, 11, 20, 13, 10, tzinfo=UTC)),
        Item("old", datetime(2026, 11, 1, tzinfo=UTC)),
    ]
    assert texts(KeepSpec(hourly=5), "early", hour, BERLIN) == [
        "hourly: hour 2026-11-20 14h already kept by a newer snapshot (late)"
    ]
    # Berlin's clocks go back at 03:00 CEST on 2026-10-25: 02:10 and 02:40 CEST share an hour.
    fall_back = [
        Item("cet", datetime(2026, 10, 25, 1, 10, tzinfo=UTC)),  # 02:10 CET
        Item("late", datetime(2026, 10, 25, 0, 40, tzinfo=UTC)),  # 02:40 CEST
        Item("early", datetime(2026, 10, 25, 0, 10, tzinfo=UTC)),  # 02:10 CEST
        Item("old", datetime(2026, 10, 1, tzinfo=UTC)),
    ]
    assert texts(KeepSpec(hourly=5), "early", fall_back, BERLIN) == [
        "hourly: hour 2026-10-25 02h (+02:00) already kept by a newer snapshot (late)"
    ]
    new_year = [
        Item("a", datetime(2026, 12, 31, 23, 30, tzinfo=UTC)),  # 2027-01-01 00:30 in Berlin
        Item("b", datetime(2026, 12, 31, 23, 10, tzinfo=UTC)),
        Item("old", datetime(2025, 6, 1, tzinfo=UTC)),
    ]
    assert texts(KeepSpec(yearly=3), "b", new_year, BERLIN) == [
        "yearly: year 2027 already kept by a newer snapshot (a)"
    ]
    assert texts(KeepSpec(yearly=3), "b", new_year) == [
        "yearly: year 2026 already kept by a newer snapshot (a)"
    ]


def test_a_window_says_its_cut_off() -> None:
    """within and within_<bucket> name the cut-off (the newest item less the duration)."""
    two_days = RetentionDuration(days=2)
    assert texts(KeepSpec(within=two_days), "n4") == [
        "within 2d: taken before the cut-off 2026-11-19T03:00:00Z (2d before the newest snapshot)"
    ]
    # restic keeps only what is newer than the cut-off: an item right at it is passed by.
    assert texts(KeepSpec(within=two_days), "n3") == [
        "within 2d: taken at the cut-off 2026-11-19T03:00:00Z (2d before the newest snapshot)"
    ]
    assert texts(KeepSpec(within_weekly=two_days), "n4") == [
        "within_weekly 2d: taken before the cut-off 2026-11-19T03:00:00Z "
        "(2d before the newest snapshot)"
    ]
    assert texts(KeepSpec(within=RetentionDuration(), daily=1), "n4") == [
        "daily: its 1 used by a newer snapshot",
        "within 0h: a zero duration keeps nothing",
    ]


def test_tags_and_ids_say_what_is_missing() -> None:
    """A tags list names the tags the item lacks; ids says the item is not listed."""
    tagged = [Item("t", NOW - timedelta(days=1), frozenset({"a"}))]

    assert texts(KeepSpec(tags=(("a", "b"),)), "t", tagged) == ["tags [a, b]: has no tag b"]
    assert texts(KeepSpec(tags=(("",),)), "t", tagged) == [
        'tags [""]: has tags; [""] keeps only untagged snapshots'
    ]
    assert texts(KeepSpec(ids=frozenset({"n0"})), "n1") == ["ids: not listed"]
