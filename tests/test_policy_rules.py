"""The table of rules is the one vocabulary: the engine's spec, the policy schema, the
engine's reasons, the trace and the horizons all name exactly its rows, so a rule added in
one place and not in the table (or the other way round) fails here."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

import pytest

from retention.core.horizon import horizon
from retention.core.policy import rules
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.engine import evaluate
from retention.core.policy.every import EveryRule
from retention.core.policy.model import Policy, policy_json_schema
from retention.core.policy.spec import Item, KeepSpec
from retention.core.policy.trace import trace

NAMES = [
    "last", "hourly", "daily", "weekly", "monthly", "yearly",
    "within", "within_hourly", "within_daily", "within_weekly", "within_monthly", "within_yearly",
    "every", "tags", "ids",
]  # fmt: skip
NOW = datetime(2026, 11, 21, 12, tzinfo=UTC)
DAY = RetentionDuration(days=1)
# Every rule set once, and an item each of them keeps.
EVERYTHING = KeepSpec(
    last=1, hourly=1, daily=1, weekly=1, monthly=1, yearly=1,
    within=DAY, within_hourly=DAY, within_daily=DAY, within_weekly=DAY, within_monthly=DAY,
    within_yearly=DAY, every=(EveryRule("0 0 * * *", 1),), tags=(("x",),), ids=frozenset({"a"}),
)  # fmt: skip
ITEM = Item("a", NOW - timedelta(hours=1), frozenset({"x"}))


def test_the_table_has_one_row_per_field_of_the_engine_spec() -> None:
    """The rows are KeepSpec's fields, one each, in the same order, with unique names."""
    assert [rule.name for rule in rules.RULES] == NAMES
    assert [f.name for f in fields(KeepSpec)] == NAMES
    assert list(rules.BY_NAME) == NAMES


def test_the_policy_schema_has_each_sections_rules_and_their_descriptions() -> None:
    """keep takes every rule but tags and ids, protect those and ids; each property of the
    schema is a row, described in the row's words; tags are the engine's alone."""
    definitions = policy_json_schema()["$defs"]
    keep = definitions["KeepRules"]["properties"]
    protect = definitions["ProtectRules"]["properties"]

    assert list(keep) == NAMES[:-2]
    assert list(protect) == [*NAMES[:-2], "ids"]
    assert [r.name for r in rules.in_section("keep")] == NAMES[:-2]
    assert [r.name for r in rules.in_section("protect")] == [*NAMES[:-2], "ids"]
    assert {name: p["description"] for name, p in protect.items()} == {
        name: rules.BY_NAME[name].description for name in protect
    }
    assert keep["daily"]["description"] == "Newest snapshot of each of the last N days."


def test_a_policy_file_setting_every_rule_sets_every_field() -> None:
    """A policy that writes each key of its sections gets an engine spec with every rule of
    the sections set (each can keep something), and nothing else."""
    counts = dict.fromkeys(NAMES[:6], 2)
    windows = dict.fromkeys(NAMES[6:12], "2d")
    every = [{"cron": "0 0 * * *", "count": 2}]
    policy = Policy.model_validate(
        {
            "name": "all",
            "keep": {**counts, **windows, "every": every},
            "protect": {**counts, **windows, "every": every, "ids": ["a"]},
        }
    )

    def set_rules(spec: KeepSpec) -> list[str]:
        return [r.name for r in rules.RULES if r.keeps_with(getattr(spec, r.name))]

    assert set_rules(policy.keep_spec()) == NAMES[:-2]
    assert set_rules(policy.protect_spec()) == [*NAMES[:-2], "ids"]
    assert policy.protect_spec().every == (EveryRule("0 0 * * *", 2),)


@pytest.mark.parametrize("name", NAMES)
def test_each_rule_alone_makes_a_spec_that_is_not_empty(name: str) -> None:
    """A spec with only one rule set is not empty, whichever rule it is."""
    only = KeepSpec(**{name: getattr(EVERYTHING, name)})

    assert KeepSpec().empty
    assert not only.empty


def test_the_engine_keeps_by_the_rows_and_in_their_words() -> None:
    """An item every rule keeps is kept by each row's name (in restic's order of reasons),
    with each row's reason text."""
    reason = evaluate([ITEM], EVERYTHING, NOW).reasons["a"]

    assert [m.rule for m in reason.matches] == ["tags", "within", *NAMES[:6], *NAMES[7:13], "ids"]
    assert reason.texts == [
        "has tags [x]", "within 1d", "last snapshot", "hourly snapshot", "daily snapshot",
        "weekly snapshot", "monthly snapshot", "yearly snapshot", "hourly within 1d",
        "daily within 1d", "weekly within 1d", "monthly within 1d", "yearly within 1d",
        "cron 0 0 * * *", "listed by id",
    ]  # fmt: skip


def test_the_trace_lists_the_rows_in_table_order_under_their_labels() -> None:
    """The trace has one entry per row, in the table's order, labelled as the row says."""
    traced = trace([ITEM], EVERYTHING, NOW, UTC, "a")

    assert [t.rule for t in traced] == NAMES
    assert [t.label for t in traced] == [
        *NAMES[:6], "within 1d", "within_hourly 1d", "within_daily 1d", "within_weekly 1d",
        "within_monthly 1d", "within_yearly 1d", "every cron 0 0 * * *", "tags [x]", "ids",
    ]  # fmt: skip


def test_a_rule_has_a_horizon_exactly_when_its_row_says_how_to_compute_one() -> None:
    """last, tags and ids give no horizon; every other rule gives the one its row's kind
    computes (here all a day or an hour after the item's bucket began)."""
    matches = evaluate([ITEM], EVERYTHING, NOW).reasons["a"].matches

    horizons = {m.rule: horizon(m, ITEM.time, UTC) for m in matches}

    assert {name for name, at in horizons.items() if at is None} == {"last", "tags", "ids"}
    assert {r.name for r in rules.RULES if r.horizon is None} == {"last", "tags", "ids"}
    assert horizons["hourly"] == datetime(2026, 11, 21, 12, tzinfo=UTC)
    assert horizons["daily"] == datetime(2026, 11, 22, tzinfo=UTC)
    assert horizons["within_daily"] == ITEM.time + timedelta(days=1)
    assert horizons["every"] == datetime(2026, 11, 22, tzinfo=UTC)


def test_a_spec_gives_counts_and_durations_only_of_rules_that_have_them() -> None:
    """count_of answers for count rules and duration_of for within rules; asked about
    another kind of rule they refuse rather than guess."""
    assert EVERYTHING.count_of(rules.BY_NAME["weekly"]) == 1
    assert EVERYTHING.duration_of(rules.BY_NAME["within_weekly"]) == DAY
    with pytest.raises(ValueError, match="within_weekly is not a count rule"):
        EVERYTHING.count_of(rules.BY_NAME["within_weekly"])
    with pytest.raises(ValueError, match="every has no duration"):
        EVERYTHING.duration_of(rules.EVERY)
