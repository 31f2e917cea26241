"""The rules a policy may set, one row each: the engine walks them, the decision model takes
their horizons from them, and the policy model builds its schema and engine form from them.

A row names the rule (its key in a policy file, its field of ``spec.KeepSpec`` and the
``rule`` of what it keeps), says what kind of rule it is, which calendar bucket it counts in,
how its horizon is computed, and gives its words: restic's reason text, the label
``retention explain`` shows, and the description editors show from the JSON Schema. Like
restic's table in ``ApplyPolicy``, the order is the order rules are listed in (a trace, a
policy's summary); the engine's own visiting order is restic's and lives in ``evaluate``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from types import MappingProxyType
from typing import Literal

from retention.core.policy.duration import RetentionDuration
from retention.core.timestamps import add_date

BucketKey = Callable[[datetime], int]
# count: newest per bucket while the count lasts; window: newest per bucket inside a time
# window; within: everything inside a time window; every: newest per cron interval; tags and
# ids: what the item itself carries.
RuleKind = Literal["count", "window", "within", "every", "tags", "ids"]
# calendar: the start of the kept item's bucket plus count buckets; duration: created plus the
# rule's duration; cron: the item's tick plus count intervals.
Horizon = Literal["calendar", "duration", "cron"]
Section = Literal["keep", "protect"]


# eq=False: a calendar is one of the five below, told apart by identity, and hashing it is
# then cheap (the horizon caches key on it).
@dataclass(frozen=True, eq=False)
class Calendar:
    """A calendar bucket on the zone's wall clock: the key that tells buckets apart, the
    bucket in words, and where the bucket ``count`` buckets after an item's own begins."""

    key: BucketKey
    words: Callable[[datetime], str]
    after: Callable[[datetime, int, tzinfo], datetime]


def _hour(t: datetime) -> int:
    # fold separates the two wall-clock hours of a DST fall-back: each real hour is a bucket.
    return (((t.year * 100 + t.month) * 100 + t.day) * 100 + t.hour) * 2 + t.fold


def _day(t: datetime) -> int:
    return (t.year * 100 + t.month) * 100 + t.day


def _week(t: datetime) -> int:
    year, week, _ = t.isocalendar()
    return year * 100 + week


def _month(t: datetime) -> int:
    return t.year * 100 + t.month


def _year(t: datetime) -> int:
    return t.year


def _date(t: datetime) -> str:
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}"


def _hour_words(t: datetime) -> str:
    words = f"hour {_date(t)} {t.hour:02d}h"
    if t.replace(fold=1 - t.fold).utcoffset() != t.utcoffset():
        words += f" ({t.isoformat()[-6:]})"  # a fall-back hour happens twice
    return words


def _week_words(t: datetime) -> str:
    year, week, _ = t.isocalendar()
    return f"week {year:04d}-W{week:02d}"


def _midnight(t: datetime) -> datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _hours_after(t: datetime, count: int, _: tzinfo) -> datetime:
    # Hours are absolute: the start of its hour, then count real hours.
    start = t.replace(minute=0, second=0, microsecond=0)
    return (start + timedelta(hours=count)).astimezone(UTC)


def _days_after(t: datetime, count: int, zone: tzinfo) -> datetime:
    return add_date(_midnight(t), 0, 0, count, zone).astimezone(UTC)


def _weeks_after(t: datetime, count: int, zone: tzinfo) -> datetime:
    monday = _midnight(t) - timedelta(days=t.weekday())
    return add_date(monday, 0, 0, 7 * count, zone).astimezone(UTC)


def _months_after(t: datetime, count: int, zone: tzinfo) -> datetime:
    return add_date(_midnight(t).replace(day=1), 0, count, 0, zone).astimezone(UTC)


def _years_after(t: datetime, count: int, zone: tzinfo) -> datetime:
    return add_date(_midnight(t).replace(month=1, day=1), count, 0, 0, zone).astimezone(UTC)


HOUR = Calendar(_hour, _hour_words, _hours_after)
DAY = Calendar(_day, lambda t: f"day {_date(t)}", _days_after)
WEEK = Calendar(_week, _week_words, _weeks_after)
MONTH = Calendar(_month, lambda t: f"month {t.year:04d}-{t.month:02d}", _months_after)
YEAR = Calendar(_year, lambda t: f"year {t.year:04d}", _years_after)


@dataclass(frozen=True)
class Rule:
    """One rule. ``reason`` and ``label`` are templates: ``{within}`` is the rule's duration,
    ``{cron}`` an every rule's expression, ``{tags}`` a tags list; an item kept as the oldest
    of all gets the reason with "oldest " in front. ``sections`` are the parts of a policy
    file that take the rule (none: the engine's alone, for restic's test vectors)."""

    name: str
    kind: RuleKind
    calendar: Calendar | None
    horizon: Horizon | None
    reason: str
    label: str
    description: str
    sections: tuple[Section, ...] = ("keep", "protect")

    def keeps_with(self, value: object) -> bool:
        """True when the rule, set to ``value`` (its KeepSpec field), can keep something: a
        count other than 0, a duration other than zero, a list with something in it."""
        if self.kind in ("within", "window"):
            return isinstance(value, RetentionDuration) and not value.zero
        return bool(value)


# One row per rule, in the order rules are listed; laid out as a table, so not reformatted.
# fmt: off
RULES: tuple[Rule, ...] = (
    Rule("last",           "count",  None,  None,
         reason="last snapshot", label="last",
         description="Keep the newest N snapshots; -1 = all."),
    Rule("hourly",         "count",  HOUR,  "calendar",
         reason="hourly snapshot", label="hourly",
         description="Newest snapshot of each of the last N hours."),
    Rule("daily",          "count",  DAY,   "calendar",
         reason="daily snapshot", label="daily",
         description="Newest snapshot of each of the last N days."),
    Rule("weekly",         "count",  WEEK,  "calendar",
         reason="weekly snapshot", label="weekly",
         description="Newest snapshot of each of the last N ISO weeks."),
    Rule("monthly",        "count",  MONTH, "calendar",
         reason="monthly snapshot", label="monthly",
         description="Newest snapshot of each of the last N months."),
    Rule("yearly",         "count",  YEAR,  "calendar",
         reason="yearly snapshot", label="yearly",
         description="Newest snapshot of each of the last N years."),
    Rule("within",         "within", None,  "duration",
         reason="within {within}", label="within {within}",
         description="Keep everything within this duration of the newest snapshot."),
    Rule("within_hourly",  "window", HOUR,  "duration",
         reason="hourly within {within}", label="within_hourly {within}",
         description="Hourly snapshots within this."),
    Rule("within_daily",   "window", DAY,   "duration",
         reason="daily within {within}", label="within_daily {within}",
         description="Daily snapshots within this."),
    Rule("within_weekly",  "window", WEEK,  "duration",
         reason="weekly within {within}", label="within_weekly {within}",
         description="Weekly snapshots within this."),
    Rule("within_monthly", "window", MONTH, "duration",
         reason="monthly within {within}", label="within_monthly {within}",
         description="Monthly snapshots within this."),
    Rule("within_yearly",  "window", YEAR,  "duration",
         reason="yearly within {within}", label="within_yearly {within}",
         description="Yearly snapshots within this."),
    Rule("every",          "every",  None,  "cron",
         reason="cron {cron}", label="every cron {cron}",
         description="Cron-defined buckets: newest snapshot per interval."),
    Rule("tags",           "tags",   None,  None,
         reason="has tags [{tags}]", label="tags [{tags}]",
         description="restic's --keep-tag, for its test vectors: every tag of a list.",
         sections=()),
    Rule("ids",            "ids",    None,  None,
         reason="listed by id", label="ids",
         description="Snapshots protected by id: a plain id for good, or a hold record "
                     "{id, reason, ticket, until} until its end.",
         sections=("protect",)),
)
# fmt: on
BY_NAME: Mapping[str, Rule] = MappingProxyType({rule.name: rule for rule in RULES})
COUNTS = tuple(rule for rule in RULES if rule.kind == "count")
WINDOWS = tuple(rule for rule in RULES if rule.kind == "window")
WITHIN, EVERY, TAGS, IDS = (BY_NAME[name] for name in ("within", "every", "tags", "ids"))


def in_section(section: Section) -> tuple[Rule, ...]:
    """The rules a part of a policy file (``keep`` or ``protect``) takes, in table order."""
    return tuple(rule for rule in RULES if section in rule.sections)
