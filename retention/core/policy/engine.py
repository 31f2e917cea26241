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

Protect rules add ``ids``: a plain id protects its item for good; a hold record
(``HoldRecordTerms``) protects it while ``now`` is before the record's end, and its reason,
ticket and end travel with the match (``Match.record``).

The rules themselves (their buckets and words) are the rows of ``rules.RULES``; the states
below walk them, and ``retention.core.policy.trace`` replays the same walk to say what each rule
did with one item.

Two differences, both deliberate: ``now`` is a parameter (restic reads the wall clock), and
buckets use the wall clock of the policy's zone (restic uses each snapshot's recorded
offset; ours come from the API in UTC). Our own ``every`` rules keep the newest item in each
interval between two ticks of a cron expression, for ``count`` intervals, with the same
"oldest" rule as the count rules.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import NamedTuple

from retention.core.policy import rules
from retention.core.policy.cron import ticks as cron_ticks
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule
from retention.core.policy.holdrecords import IdEntry, protecting
from retention.core.policy.rules import Rule
from retention.core.policy.spec import Evaluation, Item, KeepReason, KeepSpec, Match


def id_match(entry: IdEntry) -> Match:
    """The match of the entry of ``ids`` that protects an item (see ``protecting``)."""
    if isinstance(entry, str):
        return Match(rules.IDS.name, rules.IDS.reason)
    return Match(rules.IDS.name, f"{rules.IDS.reason}: {entry.words}", record=entry)


class Local:
    """An item's time on the zone's wall clock, computed once and only when a rule asks."""

    __slots__ = ("_time", "_value", "_zone")

    def __init__(self, time: datetime, zone: tzinfo) -> None:
        self._time, self._zone = time, zone
        self._value: datetime | None = None

    def get(self) -> datetime:
        """The time on the zone's wall clock."""
        if self._value is None:
            self._value = _on_wall_clock(self._time, self._time.fold, self._zone)
        return self._value


@functools.lru_cache(maxsize=1 << 14)
def _on_wall_clock(time: datetime, fold: int, zone: tzinfo) -> datetime:
    # Cached: a forecast walks the same snapshots at every step. The fold is part of the
    # key: the two 02:30 of a fall-back night on one zone's clock are equal datetimes.
    return time.astimezone(zone)


class CountState:
    """A count rule on its walk: ``count`` is what is left of the ``configured`` count,
    ``last`` the bucket it kept last (the rule "last" has no calendar: its buckets are
    positions in the walk), ``used`` how many items it kept."""

    def __init__(self, rule: Rule, count: int) -> None:
        self.rule, self.calendar = rule, rule.calendar
        self.count = self.configured = count
        self.last: int | None = None
        self.used = 0

    def visit(self, nr: int, local: Local, oldest: bool) -> Match | None:
        """The match when the item at position ``nr`` is kept, else None (state unchanged)."""
        if not (self.count > 0 or self.count == -1):
            return None
        key = nr if self.calendar is None else self.calendar.key(local.get())
        if key == self.last and not oldest:
            return None
        text = self.rule.reason if key != self.last else f"oldest {self.rule.reason}"
        self.last = key
        if self.count > 0:
            self.count -= 1
        self.used += 1
        return Match(self.rule.name, text, count=self.configured, counter=self.used)


class WindowState:
    """A within_<bucket> rule on its walk: bucket logic without a count, for items newer
    than ``cut``; ``last`` is the bucket it kept last."""

    def __init__(self, rule: Rule, within: RetentionDuration, cut: datetime) -> None:
        if rule.calendar is None:
            raise ValueError(f"{rule.name} has no calendar bucket")
        self.rule, self.calendar, self.within, self.cut = rule, rule.calendar, within, cut
        self.text = rule.reason.format(within=within)
        self.last: int | None = None
        self.used = 0

    def visit(self, item: Item, local: Local, oldest: bool) -> Match | None:
        """The match when ``item`` is kept, else None (state unchanged)."""
        if not item.time > self.cut:
            return None
        key = self.calendar.key(local.get())
        if key == self.last and not oldest:
            return None
        text = f"oldest {self.text}" if key == self.last else self.text
        self.last = key
        self.used += 1
        return Match(self.rule.name, text, within=self.within, counter=self.used)


class EveryState:
    """An every rule on its walk: the current cron interval, the interval it kept last
    (``last``) and what is left of its count."""

    def __init__(self, every: EveryRule, zone: tzinfo) -> None:
        self.every = every
        self.text = every.reason
        self.ticks = cron_ticks(every.cron, zone)
        self.count = every.count
        self.last: datetime | None = None
        self.used = 0
        self.start: datetime | None = None
        self.end: datetime | None = None

    def visit(self, local: Local, oldest: bool) -> Match | None:
        """The match when the item at ``local`` is kept, else None (state unchanged)."""
        if not (self.count > 0 or self.count == -1):
            return None
        tick = self.interval_start(local.get())
        if tick == self.last and not oldest:
            return None
        text = f"oldest {self.text}" if tick == self.last else self.text
        self.last = tick
        if self.count > 0:
            self.count -= 1
        self.used += 1
        return Match(
            rules.EVERY.name, text, count=self.every.count, every=self.every, counter=self.used
        )

    def interval_start(self, local: datetime) -> datetime:
        """The tick that starts the interval ``local`` is in."""
        if self.start is None or self.end is None or not self.start <= local < self.end:
            self.start, self.end = self.ticks.interval(local)
        return self.start


def evaluate(
    items: Sequence[Item], spec: KeepSpec, now: datetime, zone: tzinfo = UTC
) -> Evaluation:
    """Apply ``spec`` to ``items`` as of ``now``; buckets in ``zone``. Pure: no I/O, no clock."""
    ordered = newest_first(items)
    evaluation = Evaluation([], [], {})
    if not ordered:
        return evaluation
    oldest_nr = len(ordered) - 1
    within_cut, counts, windows, everies = start(ordered, spec, now, zone)
    # Matches without a counter are the same for every item they keep: made once.
    tags = [(wanted, Match(rules.TAGS.name, rules.TAGS.reason.format(tags=", ".join(wanted))))
            for wanted in spec.tags]  # fmt: skip
    within = Match(
        rules.WITHIN.name, rules.WITHIN.reason.format(within=spec.within), within=spec.within
    )
    by_id = protecting(spec.ids, now)
    # The rules that can still keep something. A count used up, a window or ``within`` the
    # walk has passed (items come newest first), never keeps again: once none is left,
    # the rest of the walk is ids alone. Most of a long history is decided that way.
    live_counts = [rule for rule in counts if rule.count != 0]
    live_everies = [rule for rule in everies if rule.count != 0]
    for nr, item in enumerate(ordered):
        time = item.time
        if windows:
            windows = [rule for rule in windows if time > rule.cut]
        if within_cut is not None and not time > within_cut:
            within_cut = None
        if not (tags or live_counts or windows or live_everies or within_cut):
            _by_id_alone(ordered[nr:], by_id, evaluation)
            break
        # restic's order of reasons: tags, within, the counts, the windows; then ours.
        matches = [match for wanted, match in tags if has_tags(item, wanted)] if tags else []
        if within_cut is not None:
            matches.append(within)
        at = (nr, item, Local(time, zone), nr == oldest_nr)
        if _visit(matches, at, live_counts, windows, live_everies):
            live_counts = [rule for rule in live_counts if rule.count != 0]
            live_everies = [rule for rule in live_everies if rule.count != 0]
        if (entry := by_id.get(item.id)) is not None:
            matches.append(id_match(entry))
        if matches:
            evaluation.keep.append(item)
            counters = {rule.rule.name: rule.count for rule in live_counts}
            if live_everies:
                counters.update((e.text, e.count) for e in live_everies)
            evaluation.reasons[item.id] = KeepReason(tuple(matches), counters)
        else:
            evaluation.remove.append(item)
    return evaluation


def _visit(
    matches: list[Match],
    at: tuple[int, Item, Local, bool],
    counts: list[CountState],
    windows: list[WindowState],
    everies: list[EveryState],
) -> bool:
    """Add the matches of the rule states that keep the item ``at`` (its position, the
    item, its local time, whether it is the oldest), in restic's order; True when a count
    or an every rule used up what was left of its count on it."""
    nr, item, local, oldest = at
    spent = False
    for rule in counts:
        if (match := rule.visit(nr, local, oldest)) is not None:
            matches.append(match)
            spent = spent or rule.count == 0
    for window in windows:
        if (match := window.visit(item, local, oldest)) is not None:
            matches.append(match)
    for every in everies:
        if (match := every.visit(local, oldest)) is not None:
            matches.append(match)
            spent = spent or every.count == 0
    return spent


def _by_id_alone(rest: list[Item], by_id: dict[str, IdEntry], evaluation: Evaluation) -> None:
    """The end of a walk no rule but ``ids`` can keep from: every counter is spent."""
    for item in rest:
        if (entry := by_id.get(item.id)) is not None:
            evaluation.keep.append(item)
            evaluation.reasons[item.id] = KeepReason((id_match(entry),), {})
        else:
            evaluation.remove.append(item)


def newest_first(items: Sequence[Item]) -> list[Item]:
    """The items in the order of the walk: newest first, equal times in input order (a stable
    sort, as restic's; a plan gives them in ``decide.newest_first_by_id`` order)."""
    return sorted(items, key=lambda item: item.time, reverse=True)


class States(NamedTuple):
    """The rule states of one walk, as evaluate and trace both start it: the cut-off of
    ``within`` (None: unset or zero), the count rules, the windows set to more than zero,
    and the every rules."""

    within_cut: datetime | None
    counts: list[CountState]
    windows: list[WindowState]
    everies: list[EveryState]


def start(ordered: list[Item], spec: KeepSpec, now: datetime, zone: tzinfo) -> States:
    """The states of ``spec``'s rules before the walk over ``ordered`` (newest first)."""
    # ordered is newest first: the first item before now is the latest one.
    latest = next((item.time for item in ordered if item.time < now), None)
    return States(
        cutoff(spec.within, latest, zone),
        [CountState(rule, spec.count_of(rule)) for rule in rules.COUNTS],
        [
            WindowState(rule, duration, cut)
            for rule in rules.WINDOWS
            if (duration := spec.duration_of(rule)) is not None
            and (cut := cutoff(duration, latest, zone)) is not None
        ],
        [EveryState(every, zone) for every in spec.every],
    )


# Marks "no cut-off": with no item before now, restic's latest is the zero time, so every
# item is newer than the cut-off.
_ALL = datetime.min.replace(tzinfo=UTC)


def cutoff(
    duration: RetentionDuration | None, latest: datetime | None, zone: tzinfo
) -> datetime | None:
    """Where a window of ``duration`` back from ``latest`` (the newest item before now)
    begins; None when the duration is unset or zero."""
    if duration is None or duration.zero:
        return None
    if latest is None:
        return _ALL
    return duration.before(latest, zone)


def has_tags(item: Item, wanted: tuple[str, ...]) -> bool:
    """True when ``item`` carries every tag of ``wanted``."""
    # restic: the list [""] matches only untagged snapshots; an empty list matches all.
    if wanted == ("",):
        return not item.tags
    return all(tag in item.tags for tag in wanted)
