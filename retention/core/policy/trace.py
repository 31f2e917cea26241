"""What each configured rule did with one item: ``trace(items, spec, now, zone, item_id)``.

It replays ``engine.evaluate``'s walk, with the same rule states, up to one item and says
what each configured rule did with it: the match, or why the rule passed it by (its count
used up, its bucket already kept by a newer item, the item outside its window). It is for
people (``retention explain``); ``evaluate`` does not call it and pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import NamedTuple

from retention.core.policy import rules
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.engine import (
    CountState,
    EveryState,
    Local,
    States,
    WindowState,
    has_tags,
    id_match,
    newest_first,
    start,
)
from retention.core.policy.holdrecords import HoldRecordTerms, ended, protecting
from retention.core.policy.spec import Item, KeepSpec, Match
from retention.core.timestamps import format_timestamp

_ZERO = "a zero duration keeps nothing"


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
    # The hold record behind ids: in force when the rule kept the item, else ended.
    record: HoldRecordTerms | None = None


def trace(
    items: Sequence[Item], spec: KeepSpec, now: datetime, zone: tzinfo, item_id: str
) -> list[RuleTrace]:
    """What each configured rule of ``spec`` did with the item ``item_id``, as ``evaluate``
    decides it for the same arguments: one RuleTrace per rule, in the order of the rules'
    table (last, hourly ... yearly, within, within_hourly ... within_yearly, each every
    rule, each tags list, ids). A count rule of 0 is not configured; a zero duration is,
    and says it keeps nothing. Pure, like evaluate. Raises ValueError when no item has that id.
    """
    ordered = newest_first(items)
    nr = next((n for n, item in enumerate(ordered) if item.id == item_id), None)
    if nr is None:
        raise ValueError(f"no item {item_id!r} among the {len(ordered)} items")
    states = start(ordered, spec, now, zone)
    at = _At(ordered[nr], nr, nr == len(ordered) - 1, Local(ordered[nr].time, zone))
    held = _replay(ordered[:nr], states, zone)
    return [
        *_trace_counts(at, states.counts, held),
        *_trace_windows(at, spec, states, held),
        *_trace_everies(at, states.everies, held),
        *_trace_listed(at.item, spec, now),
    ]


class _At(NamedTuple):
    """The traced item, its position in the walk, and whether it is the oldest."""

    item: Item
    nr: int
    oldest: bool
    local: Local


def _replay(newer: list[Item], states: States, zone: tzinfo) -> dict[object, str]:
    """Visit the items newer than the traced one as evaluate does (none of them is the
    oldest), leaving each rule in the state the traced item meets; the item each rule kept
    last, by rule (it holds the rule's current bucket)."""
    held: dict[object, str] = {}
    for n, item in enumerate(newer):
        local = Local(item.time, zone)
        for count in states.counts:
            if count.visit(n, local, False) is not None:
                held[count] = item.id
        for window in states.windows:
            if window.visit(item, local, False) is not None:
                held[window] = item.id
        for every in states.everies:
            if every.visit(local, False) is not None:
                held[every] = item.id
    return held


def _trace_counts(at: _At, counts: list[CountState], held: dict[object, str]) -> list[RuleTrace]:
    out = []
    for state in counts:
        if state.configured > 0 or state.configured == -1:
            rule = state.rule
            match = state.visit(at.nr, at.local, at.oldest)
            if match is not None:
                out.append(_kept(rule.label, match))
            else:
                why, by = _count_passed_by(state, at, held.get(state))
                out.append(_passed(rule.name, rule.label, state.configured, why, by))
    return out


def _trace_windows(
    at: _At, spec: KeepSpec, states: States, held: dict[object, str]
) -> list[RuleTrace]:
    """within, then within_hourly ... within_yearly (those evaluate left out: zero)."""
    out = []
    within = spec.duration_of(rules.WITHIN)
    if within is not None:
        label, cut = rules.WITHIN.label.format(within=within), states.within_cut
        if cut is None:
            out.append(_passed(rules.WITHIN.name, label, 0, _ZERO))
        elif at.item.time > cut:
            text = rules.WITHIN.reason.format(within=within)
            out.append(_kept(label, Match(rules.WITHIN.name, text, within=within)))
        else:
            why = _outside(cut, at.item.time, within)
            out.append(_passed(rules.WITHIN.name, label, 0, why))
    by_name = {state.rule.name: state for state in states.windows}
    for rule in rules.WINDOWS:
        duration = spec.duration_of(rule)
        if duration is None:
            continue
        label, window = rule.label.format(within=duration), by_name.get(rule.name)
        if window is None:
            out.append(_passed(rule.name, label, 0, _ZERO))
        elif (match := window.visit(at.item, at.local, at.oldest)) is not None:
            out.append(_kept(label, match))
        else:
            why, by = _window_passed_by(window, at, held.get(window))
            out.append(_passed(rule.name, label, 0, why, by))
    return out


def _trace_everies(at: _At, everies: list[EveryState], held: dict[object, str]) -> list[RuleTrace]:
    out = []
    for state in everies:
        label = rules.EVERY.label.format(cron=state.every.cron)
        if (match := state.visit(at.local, at.oldest)) is not None:
            out.append(_kept(label, match))
        else:
            why, by = _every_passed_by(state, at, held.get(state))
            out.append(_passed(rules.EVERY.name, label, state.every.count, why, by))
    return out


def _trace_listed(item: Item, spec: KeepSpec, now: datetime) -> list[RuleTrace]:
    """Tags lists and ids: no state, the item alone decides (and, for a hold record, now)."""
    out = []
    for wanted in spec.tags:
        shown = '""' if wanted == ("",) else ", ".join(wanted)
        label = rules.TAGS.label.format(tags=shown)
        if has_tags(item, wanted):
            text = rules.TAGS.reason.format(tags=", ".join(wanted))
            out.append(_kept(label, Match(rules.TAGS.name, text)))
        else:
            out.append(_passed(rules.TAGS.name, label, 0, _lacks(item.tags, wanted)))
    if spec.ids:
        entry = protecting(spec.ids, now).get(item.id)
        gone = ended(spec.ids, now).get(item.id)
        if entry is not None:
            out.append(_kept(rules.IDS.label, id_match(entry)))
        elif gone is not None:
            passed = _passed(rules.IDS.name, rules.IDS.label, 0, gone.ended_words)
            out.append(replace(passed, record=gone))
        else:
            out.append(_passed(rules.IDS.name, rules.IDS.label, 0, "not listed"))
    return out


# Why a rule's visit just returned None (it then left the state as it was), and the newer
# item that holds the bucket when that is why. A bucket a newer item holds is the first
# answer even when the count is used up too: more count would not help.


def _count_passed_by(state: CountState, at: _At, by: str | None) -> tuple[str, str | None]:
    calendar = state.calendar
    if calendar is not None and not at.oldest and calendar.key(at.local.get()) == state.last:
        return _taken(calendar.words(at.local.get()), by)
    return _all_used(state.configured), None


def _window_passed_by(state: WindowState, at: _At, by: str | None) -> tuple[str, str | None]:
    if not at.item.time > state.cut:
        return _outside(state.cut, at.item.time, state.within), None
    return _taken(state.calendar.words(at.local.get()), by)


def _every_passed_by(state: EveryState, at: _At, by: str | None) -> tuple[str, str | None]:
    begins = state.interval_start(at.local.get())
    if not at.oldest and begins == state.last:
        return _taken(f"interval from {begins:%Y-%m-%d %H:%M}", by)
    return _all_used(state.every.count), None


def _kept(label: str, match: Match) -> RuleTrace:
    text = label
    if match.counter:
        of = {0: "", -1: " of unlimited"}.get(match.count, f" of {match.count}")
        text += f" #{match.counter}{of}"
    if match.record is not None:
        text += f": {match.record.words}"  # "ids: legal hold (ticket LEGAL-42, until 2027-01-31)"
    elif match.text.startswith("oldest ") or match.rule == rules.IDS.name:
        text += f" ({match.text})"  # "(oldest daily snapshot)", "(listed by id)"
    return RuleTrace(
        match.rule, label, True, text, match.count, match.counter, match, record=match.record
    )


def _passed(rule: str, label: str, count: int, why: str, by: str | None = None) -> RuleTrace:
    return RuleTrace(rule, label, False, f"{label}: {why}", count, why=why, by=by)


def _taken(words: str, by: str | None) -> tuple[str, str | None]:
    return f"{words} already kept by a newer snapshot ({by})", by


def _all_used(count: int) -> str:
    if count == 1:
        return "its 1 used by a newer snapshot"
    return (
        f"all {count} used by newer snapshots" if count > 0 else f"a count of {count} keeps nothing"
    )


def _outside(cut: datetime, time: datetime, within: RetentionDuration) -> str:
    # restic's window ends at the newest item before now, not at now: say so.
    when = "at" if time == cut else "before"
    return f"taken {when} the cut-off {format_timestamp(cut)} ({within} before the newest snapshot)"


def _lacks(tags: frozenset[str], wanted: tuple[str, ...]) -> str:
    if wanted == ("",):
        return 'has tags; [""] keeps only untagged snapshots'
    missing = ", ".join(tag for tag in wanted if tag not in tags)
    return f"has no tag {missing}"
