"""The keep-rule engine: one pure function, ``evaluate(items, spec, now, zone)``.

It follows restic's ``forget`` (internal/data/snapshot_policy.go) to the letter and is
checked against restic's own test vectors (tests/conformance/restic):

- items are visited newest first (a stable sort: equal times keep their input order);
- each count rule (last, hourly, daily, weekly, monthly, yearly) keeps the newest item of
  each new bucket while its count lasts (-1: no limit), plus the oldest item of all while
  counts are left ("oldest daily snapshot");
- ``within D`` keeps what is newer than the newest item before ``now``, shifted back by D;
  ``within_daily D`` and friends apply the bucket logic only inside that window;
- reasons and counters are recorded for every kept item, in restic's words and order.

Two differences, both deliberate: ``now`` is a parameter (restic reads the wall clock), and
buckets use the wall clock of the policy's zone (restic uses each snapshot's recorded
offset; ours come from the API in UTC). Our own ``every`` rules keep the newest item in each
interval between two ticks of a cron expression, for ``count`` intervals, with the same
"oldest" rule as the count rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from retention.policy.cron import ticks as cron_ticks
from retention.policy.duration import RetentionDuration

BucketKey = Callable[[datetime], int]


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


# (rule name, bucket of a local time, restic's reason text); "last" buckets by position.
CALENDAR_RULES: tuple[tuple[str, BucketKey, str], ...] = (
    ("hourly", _hour, "hourly"),
    ("daily", _day, "daily"),
    ("weekly", _week, "weekly"),
    ("monthly", _month, "monthly"),
    ("yearly", _year, "yearly"),
)
COUNT_RULES = ("last", "hourly", "daily", "weekly", "monthly", "yearly")


@dataclass(frozen=True, slots=True)
class Item:
    """What the engine sees of a snapshot: an id, when it was taken, and (for restic) tags."""

    id: str
    time: datetime
    tags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class EveryRule:
    """Keep the newest item per interval between two ticks of ``cron``, ``count`` intervals."""

    cron: str
    count: int

    @property
    def reason(self) -> str:
        """The reason text, e.g. ``cron 0 0 1 1,4,7,10 *``."""
        return f"cron {self.cron}"


@dataclass(frozen=True)
class KeepSpec:
    """The keep rules of one policy (or its protect rules), engine-ready."""

    last: int = 0
    hourly: int = 0
    daily: int = 0
    weekly: int = 0
    monthly: int = 0
    yearly: int = 0
    within: RetentionDuration | None = None
    within_hourly: RetentionDuration | None = None
    within_daily: RetentionDuration | None = None
    within_weekly: RetentionDuration | None = None
    within_monthly: RetentionDuration | None = None
    within_yearly: RetentionDuration | None = None
    every: tuple[EveryRule, ...] = ()
    tags: tuple[tuple[str, ...], ...] = ()
    ids: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        """True when no rule is set (such a spec keeps nothing)."""
        counts = (self.last, self.hourly, self.daily, self.weekly, self.monthly, self.yearly)
        windows = (self.within, *self._windows())
        return (
            not any(counts)
            and all(w is None or w.zero for w in windows)
            and not self.every
            and not self.tags
            and not self.ids
        )

    def _windows(self) -> tuple[RetentionDuration | None, ...]:
        return (
            self.within_hourly,
            self.within_daily,
            self.within_weekly,
            self.within_monthly,
            self.within_yearly,
        )


@dataclass(frozen=True, slots=True)
class Match:
    """One rule that kept an item: its name, the reason text, and its parameter."""

    rule: str
    text: str
    count: int = 0  # the rule's configured count (-1: unlimited); 0 for rules without one
    within: RetentionDuration | None = None
    every: EveryRule | None = None
    counter: int = 0  # this is the rule's n-th kept item, newest first (0: not counted)


@dataclass(frozen=True)
class KeepReason:
    """Why an item is kept: the rules that matched and the counters after it (restic's)."""

    matches: tuple[Match, ...]
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        """The reason texts, e.g. ``["daily snapshot", "weekly snapshot"]``."""
        return [m.text for m in self.matches]


@dataclass
class Evaluation:
    """The engine's answer: kept and removed items in evaluation order, and reasons."""

    keep: list[Item]
    remove: list[Item]
    reasons: dict[str, KeepReason]


class _Local:
    """An item's time on the zone's wall clock, computed once and only when a rule asks."""

    __slots__ = ("_time", "_value", "_zone")

    def __init__(self, time: datetime, zone: tzinfo) -> None:
        self._time, self._zone = time, zone
        self._value: datetime | None = None

    def get(self) -> datetime:
        if self._value is None:
            self._value = self._time.astimezone(self._zone)
        return self._value


class _CountRule:
    """A count rule's state: what is left of its count and the last bucket seen."""

    def __init__(self, name: str, count: int, bucket: BucketKey | None) -> None:
        self.name, self.count, self.configured, self.bucket = name, count, count, bucket
        self.last: int | None = None
        self.used = 0

    def visit(self, nr: int, local: _Local, oldest: bool) -> Match | None:
        if not (self.count > 0 or self.count == -1):
            return None
        key = nr if self.bucket is None else self.bucket(local.get())
        if key == self.last and not oldest:
            return None
        text = f"{self.name} snapshot" if key != self.last else f"oldest {self.name} snapshot"
        self.last = key
        if self.count > 0:
            self.count -= 1
        self.used += 1
        return Match(self.name, text, count=self.configured, counter=self.used)


class _WindowRule:
    """A within_<bucket> rule: bucket logic without a count, inside a time window."""

    def __init__(self, name: str, bucket: BucketKey, within: RetentionDuration, cut: datetime):
        self.name, self.bucket, self.within, self.cut = name, bucket, within, cut
        self.last: int | None = None
        self.used = 0

    def visit(self, item: Item, local: _Local, oldest: bool) -> Match | None:
        if not item.time > self.cut:
            return None
        key = self.bucket(local.get())
        if key == self.last and not oldest:
            return None
        prefix = "oldest " if key == self.last else ""
        self.last = key
        self.used += 1
        text = f"{prefix}{self.name} within {self.within}"
        return Match(f"within_{self.name}", text, within=self.within, counter=self.used)


class _EveryRule:
    """An every-rule's state: the current cron interval and what is left of the count."""

    def __init__(self, rule: EveryRule, zone: tzinfo) -> None:
        self.rule = rule
        self.ticks = cron_ticks(rule.cron, zone)
        self.count = rule.count
        self.last: datetime | None = None
        self.used = 0
        self.start: datetime | None = None
        self.end: datetime | None = None

    def visit(self, local: _Local, oldest: bool) -> Match | None:
        if not (self.count > 0 or self.count == -1):
            return None
        tick = self._interval_start(local.get())
        if tick == self.last and not oldest:
            return None
        prefix = "oldest " if tick == self.last else ""
        self.last = tick
        if self.count > 0:
            self.count -= 1
        self.used += 1
        return Match(
            "every", prefix + self.rule.reason, count=self.rule.count, every=self.rule,
            counter=self.used,
        )  # fmt: skip

    def _interval_start(self, local: datetime) -> datetime:
        if self.start is None or self.end is None or not self.start <= local < self.end:
            self.start, self.end = self.ticks.interval(local)
        return self.start


def evaluate(
    items: Sequence[Item], spec: KeepSpec, now: datetime, zone: tzinfo = UTC
) -> Evaluation:
    """Apply ``spec`` to ``items`` as of ``now``; buckets in ``zone``. Pure: no I/O, no clock."""
    ordered = sorted(items, key=lambda item: item.time, reverse=True)
    evaluation = Evaluation([], [], {})
    if not ordered:
        return evaluation
    oldest_nr = len(ordered) - 1
    latest = max((item.time for item in ordered if item.time < now), default=None)
    within_cut = _cutoff(spec.within, latest, zone)
    buckets = {name: bucket for name, bucket, _ in CALENDAR_RULES}
    counts = [_CountRule(name, spec_count(spec, name), buckets.get(name)) for name in COUNT_RULES]
    windows = [
        _WindowRule(name, bucket, duration, cut)
        for (name, bucket, _), duration in zip(CALENDAR_RULES, spec._windows(), strict=True)
        if duration is not None and (cut := _cutoff(duration, latest, zone)) is not None
    ]
    everies = [_EveryRule(rule, zone) for rule in spec.every]
    for nr, item in enumerate(ordered):
        oldest = nr == oldest_nr
        local = _Local(item.time, zone)
        matches = [
            Match("tags", f"has tags [{', '.join(tags)}]")
            for tags in spec.tags
            if _has_tags(item.tags, tags)
        ]
        if within_cut is not None and item.time > within_cut:
            matches.append(Match("within", f"within {spec.within}", within=spec.within))
        found = (
            *(rule.visit(nr, local, oldest) for rule in counts),
            *(rule.visit(item, local, oldest) for rule in windows),
            *(rule.visit(local, oldest) for rule in everies),
        )
        matches.extend(match for match in found if match is not None)
        if item.id in spec.ids:
            matches.append(Match("ids", "listed by id"))
        if matches:
            evaluation.keep.append(item)
            counters = {rule.name: rule.count for rule in counts if rule.count}
            counters.update((e.rule.reason, e.count) for e in everies if e.count)
            evaluation.reasons[item.id] = KeepReason(tuple(matches), counters)
        else:
            evaluation.remove.append(item)
    return evaluation


def spec_count(spec: KeepSpec, name: str) -> int:
    """The configured count of a count rule (not what is left of it)."""
    value: int = getattr(spec, name)
    return value


# Marks "no cut-off": with no item before now, restic's latest is the zero time, so every
# item is newer than the cut-off.
_ALL = datetime.min.replace(tzinfo=UTC)


def _cutoff(
    duration: RetentionDuration | None, latest: datetime | None, zone: tzinfo
) -> datetime | None:
    if duration is None or duration.zero:
        return None
    if latest is None:
        return _ALL
    return duration.before(latest, zone)


def _has_tags(tags: frozenset[str], wanted: tuple[str, ...]) -> bool:
    # restic: the list [""] matches only untagged snapshots; an empty list matches all.
    if wanted == ("",):
        return not tags
    return all(tag in tags for tag in wanted)
