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

``trace(items, spec, now, zone, item_id)`` replays the same walk, with the same rule
states, up to one item and says what each configured rule did with it: the match, or why
the rule passed it by (its count used up, its bucket already kept by a newer item, the item
outside its window). It is for people (``retention explain``); ``evaluate`` does not call it
and pays nothing for it.

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
from typing import NamedTuple

from retention.policy.cron import ticks as cron_ticks
from retention.policy.duration import RetentionDuration
from retention.timestamps import format_timestamp

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


def _bucket_words(rule: str, local: datetime) -> str:
    """A calendar rule's bucket as people name it, from a time on the zone's wall clock:
    "hour 2026-11-20 14h", "day 2026-11-20", "week 2026-W47", "month 2026-11", "year 2026"."""
    day = f"{local.year:04d}-{local.month:02d}-{local.day:02d}"
    if rule == "hourly":
        words = f"hour {day} {local.hour:02d}h"
        if local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset():
            words += f" ({local.isoformat()[-6:]})"  # a fall-back hour happens twice
        return words
    if rule == "daily":
        return f"day {day}"
    if rule == "weekly":
        year, week, _ = local.isocalendar()
        return f"week {year:04d}-W{week:02d}"
    if rule == "monthly":
        return f"month {local.year:04d}-{local.month:02d}"
    return f"year {local.year:04d}"


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


@dataclass(frozen=True, slots=True)
class RuleTrace:
    """What one configured rule did with one item (see ``trace``): kept it or passed it by.

    ``label`` names the rule as a policy writes it ("daily", "within 2d", "every cron 0 0 1 *
    *"); ``text`` says what it did in plain words ("daily #3 of 7", "daily: day 2026-11-20
    already kept by a newer snapshot (ID)"). A kept item has the rule's ``match``, exactly as
    ``evaluate`` records it; a passed-by one has ``why`` and, when a newer item holds its
    bucket, that item's id in ``by``. ``count`` is the rule's configured count (-1:
    unlimited; 0 for rules without one), ``counter`` which of the rule's kept items this is.
    """

    rule: str
    label: str
    kept: bool
    text: str
    count: int = 0
    counter: int = 0
    match: Match | None = None
    why: str = ""
    by: str | None = None


def _kept(label: str, match: Match) -> RuleTrace:
    text = label
    if match.counter:
        of = {0: "", -1: " of unlimited"}.get(match.count, f" of {match.count}")
        text += f" #{match.counter}{of}"
    if match.text.startswith("oldest ") or match.rule == "ids":
        text += f" ({match.text})"  # "(oldest daily snapshot)", "(listed by id)"
    return RuleTrace(match.rule, label, True, text, match.count, match.counter, match)


def _passed(rule: str, label: str, count: int, why: str, by: str | None = None) -> RuleTrace:
    return RuleTrace(rule, label, False, f"{label}: {why}", count, why=why, by=by)


def _taken(words: str, by: str | None) -> tuple[str, str | None]:
    return f"{words} already kept by a newer snapshot ({by})", by


def _all_used(count: int) -> str:
    return (
        f"all {count} used by newer snapshots" if count > 0 else f"a count of {count} keeps nothing"
    )


def _outside(cut: datetime, time: datetime, within: RetentionDuration) -> str:
    # restic's window ends at the newest item before now, not at now: say so.
    when = "at" if time == cut else "before"
    return f"taken {when} the cut-off {format_timestamp(cut)} ({within} before the newest snapshot)"


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

    def passed_by(self, local: _Local, oldest: bool, by: str | None) -> tuple[str, str | None]:
        """Why ``visit`` just returned None (it then left the state as it was), and the
        newer item that holds the bucket when that is why. A bucket a newer item holds is
        the first answer even when the count is used up too: more count would not help."""
        if self.bucket is not None and not oldest and self.bucket(local.get()) == self.last:
            return _taken(_bucket_words(self.name, local.get()), by)
        return _all_used(self.configured), None


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

    def passed_by(self, item: Item, local: _Local, by: str | None) -> tuple[str, str | None]:
        """Why ``visit`` just returned None, as _CountRule.passed_by says."""
        if not item.time > self.cut:
            return _outside(self.cut, item.time, self.within), None
        return _taken(_bucket_words(self.name, local.get()), by)


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

    def passed_by(self, local: _Local, oldest: bool, by: str | None) -> tuple[str, str | None]:
        """Why ``visit`` just returned None, as _CountRule.passed_by says."""
        start = self._interval_start(local.get())
        if not oldest and start == self.last:
            return _taken(f"interval from {start:%Y-%m-%d %H:%M}", by)
        return _all_used(self.rule.count), None

    def _interval_start(self, local: datetime) -> datetime:
        if self.start is None or self.end is None or not self.start <= local < self.end:
            self.start, self.end = self.ticks.interval(local)
        return self.start


def evaluate(
    items: Sequence[Item], spec: KeepSpec, now: datetime, zone: tzinfo = UTC
) -> Evaluation:
    """Apply ``spec`` to ``items`` as of ``now``; buckets in ``zone``. Pure: no I/O, no clock."""
    ordered = _newest_first(items)
    evaluation = Evaluation([], [], {})
    if not ordered:
        return evaluation
    oldest_nr = len(ordered) - 1
    within_cut, counts, windows, everies = _rules(ordered, spec, now, zone)
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


def trace(
    items: Sequence[Item], spec: KeepSpec, now: datetime, zone: tzinfo, item_id: str
) -> list[RuleTrace]:
    """What each configured rule of ``spec`` did with the item ``item_id``, as ``evaluate``
    decides it for the same arguments: one RuleTrace per rule, in the order last, hourly ...
    yearly, within, within_hourly ... within_yearly, each every rule, each tags list, ids.
    A count rule of 0 is not configured; a zero duration is, and says it keeps nothing.
    Pure, like evaluate. Raises ValueError when no item has that id.
    """
    ordered = _newest_first(items)
    nr = next((n for n, item in enumerate(ordered) if item.id == item_id), None)
    if nr is None:
        raise ValueError(f"no item {item_id!r} among the {len(ordered)} items")
    rules = _rules(ordered, spec, now, zone)
    at = _At(ordered[nr], nr, nr == len(ordered) - 1, _Local(ordered[nr].time, zone))
    held = _replay(ordered[:nr], rules, zone)
    return [
        *_trace_counts(at, rules.counts, held),
        *_trace_windows(at, spec, rules, held),
        *_trace_everies(at, rules.everies, held),
        *_trace_listed(at.item, spec),
    ]


class _At(NamedTuple):
    """The traced item, its position in the walk, and whether it is the oldest."""

    item: Item
    nr: int
    oldest: bool
    local: _Local


def _replay(newer: list[Item], rules: _Rules, zone: tzinfo) -> dict[object, str]:
    """Visit the items newer than the traced one as evaluate does (none of them is the
    oldest), leaving each rule in the state the traced item meets; the item each rule kept
    last, by rule (it holds the rule's current bucket)."""
    held: dict[object, str] = {}
    for n, item in enumerate(newer):
        local = _Local(item.time, zone)
        for count in rules.counts:
            if count.visit(n, local, False) is not None:
                held[count] = item.id
        for window in rules.windows:
            if window.visit(item, local, False) is not None:
                held[window] = item.id
        for every in rules.everies:
            if every.visit(local, False) is not None:
                held[every] = item.id
    return held


def _trace_counts(at: _At, counts: list[_CountRule], held: dict[object, str]) -> list[RuleTrace]:
    out = []
    for rule in counts:
        if rule.configured > 0 or rule.configured == -1:
            match = rule.visit(at.nr, at.local, at.oldest)
            if match is not None:
                out.append(_kept(rule.name, match))
            else:
                why, by = rule.passed_by(at.local, at.oldest, held.get(rule))
                out.append(_passed(rule.name, rule.name, rule.configured, why, by))
    return out


def _trace_windows(
    at: _At, spec: KeepSpec, rules: _Rules, held: dict[object, str]
) -> list[RuleTrace]:
    """within, then within_hourly ... within_yearly (those evaluate left out: zero)."""
    out = []
    if spec.within is not None:
        label, cut = f"within {spec.within}", rules.within_cut
        if cut is None:
            out.append(_passed("within", label, 0, "a zero duration keeps nothing"))
        elif at.item.time > cut:
            out.append(_kept(label, Match("within", label, within=spec.within)))
        else:
            out.append(_passed("within", label, 0, _outside(cut, at.item.time, spec.within)))
    by_name = {rule.name: rule for rule in rules.windows}
    for (name, _, _), duration in zip(CALENDAR_RULES, spec._windows(), strict=True):
        if duration is None:
            continue
        label, window = f"within_{name} {duration}", by_name.get(name)
        if window is None:
            out.append(_passed(f"within_{name}", label, 0, "a zero duration keeps nothing"))
        elif (match := window.visit(at.item, at.local, at.oldest)) is not None:
            out.append(_kept(label, match))
        else:
            why, by = window.passed_by(at.item, at.local, held.get(window))
            out.append(_passed(f"within_{name}", label, 0, why, by))
    return out


def _trace_everies(at: _At, everies: list[_EveryRule], held: dict[object, str]) -> list[RuleTrace]:
    out = []
    for every in everies:
        label = f"every {every.rule.reason}"
        if (match := every.visit(at.local, at.oldest)) is not None:
            out.append(_kept(label, match))
        else:
            why, by = every.passed_by(at.local, at.oldest, held.get(every))
            out.append(_passed("every", label, every.rule.count, why, by))
    return out


def _trace_listed(item: Item, spec: KeepSpec) -> list[RuleTrace]:
    """Tags lists and ids: no state, the item alone decides."""
    out = []
    for tags in spec.tags:
        label = 'tags [""]' if tags == ("",) else f"tags [{', '.join(tags)}]"
        if _has_tags(item.tags, tags):
            out.append(_kept(label, Match("tags", f"has tags [{', '.join(tags)}]")))
        else:
            out.append(_passed("tags", label, 0, _lacks(item.tags, tags)))
    if spec.ids:
        if item.id in spec.ids:
            out.append(_kept("ids", Match("ids", "listed by id")))
        else:
            out.append(_passed("ids", "ids", 0, "not listed"))
    return out


def _newest_first(items: Sequence[Item]) -> list[Item]:
    return sorted(items, key=lambda item: item.time, reverse=True)


class _Rules(NamedTuple):
    """The rule states of one walk, as evaluate and trace both start it."""

    within_cut: datetime | None
    counts: list[_CountRule]
    windows: list[_WindowRule]
    everies: list[_EveryRule]


def _rules(ordered: list[Item], spec: KeepSpec, now: datetime, zone: tzinfo) -> _Rules:
    latest = max((item.time for item in ordered if item.time < now), default=None)
    buckets = {name: bucket for name, bucket, _ in CALENDAR_RULES}
    return _Rules(
        _cutoff(spec.within, latest, zone),
        [_CountRule(name, spec_count(spec, name), buckets.get(name)) for name in COUNT_RULES],
        [
            _WindowRule(name, bucket, duration, cut)
            for (name, bucket, _), duration in zip(CALENDAR_RULES, spec._windows(), strict=True)
            if duration is not None and (cut := _cutoff(duration, latest, zone)) is not None
        ],
        [_EveryRule(rule, zone) for rule in spec.every],
    )


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


def _lacks(tags: frozenset[str], wanted: tuple[str, ...]) -> str:
    if wanted == ("",):
        return 'has tags; [""] keeps only untagged snapshots'
    missing = ", ".join(tag for tag in wanted if tag not in tags)
    return f"has no tag {missing}"


def _has_tags(tags: frozenset[str], wanted: tuple[str, ...]) -> bool:
    # restic: the list [""] matches only untagged snapshots; an empty list matches all.
    if wanted == ("",):
        return not tags
    return all(tag in tags for tag in wanted)
