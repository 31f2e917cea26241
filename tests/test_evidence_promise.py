"""The ladder check (evidence/promise.py) promises what the keep-rule engine keeps: the
same buckets, the same newest point of each, the same edge of ``within``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from retention.core.policy.engine import evaluate
from retention.core.policy.model import Policy
from retention.core.policy.spec import Item
from retention.evidence.promise import History, Point, checks
from tests.support.examples import examples

START = datetime(2025, 3, 1, tzinfo=UTC)  # the weeks around Europe's spring DST change
RULES = ("last", "hourly", "daily", "weekly", "monthly", "yearly")


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Point], datetime]:
    """Points whole hours apart (so that one often falls on a bucket's or ``within``'s
    edge) over up to five months, each there until a moment after its making (or still
    there), and a moment to check them at."""
    points, at = [], START
    for n in range(draw(st.integers(0, 60))):
        at += timedelta(hours=draw(st.sampled_from((1, 5, 6, 12, 24, 30))))
        life = draw(st.none() | st.integers(1, 60 * 24 * 90))
        until = None if life is None else at + timedelta(minutes=life)
        points.append(Point(f"s{n:03d}", at, until))
    moment = START + timedelta(minutes=draw(st.integers(0, 60 * 24 * 160)))
    return points, moment


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return START.replace(day=day, hour=hour, minute=minute)


# Berlin's day begins at 23:00 UTC in March: 23:30 UTC belongs to the next day there.
AROUND_MIDNIGHT = [Point(f"m{n}", at, None) for n, at in enumerate(
    (_at(1, 22, 30), _at(1, 23, 30), _at(2, 22, 30), _at(3, 12)))]  # fmt: skip
# Every 6 hours: the point exactly one day before the newest is on within 1d's edge.
EVERY_SIX_HOURS = [Point(f"e{n}", _at(1, 0) + timedelta(hours=6 * n), None) for n in range(12)]


@settings(max_examples=examples(400), deadline=None)
@example((AROUND_MIDNIGHT, _at(4, 0)), "daily", 3, "Europe/Berlin")
@example((EVERY_SIX_HOURS, _at(4, 0)), "within", 1, "UTC")
@given(
    histories(),
    st.sampled_from((*RULES, "within")),
    st.integers(1, 8),
    st.sampled_from(("UTC", "Europe/Berlin")),
)
def test_a_rule_promises_the_points_the_engine_keeps_with_it(
    history: tuple[list[Point], datetime], rule: str, count: int, zone: str
) -> None:
    """For each count rule and ``within``, in UTC and across a DST change: the points
    the check promises are those the engine keeps with that rule (its "oldest" extra
    aside), and each one it names missing is one of them; with every point gone, it
    names exactly those."""
    points, moment = history
    value: int | str = f"{count}d" if rule == "within" else count
    policy = Policy.model_validate({"name": "p", "timezone": zone, "keep": {rule: value}})
    made = [Item(p.snapshot_id, p.created) for p in points if p.created < moment]
    kept = evaluate(made, policy.keep_spec(), moment, policy.zone)
    by_rule = {
        item.id
        for item in kept.keep
        for m in kept.reasons[item.id].matches
        if m.rule == rule and not m.text.startswith("oldest")
    }

    found = checks(policy, History(points), moment)

    if not made:
        assert all(c.promised == 0 for c in found)
        return
    [check] = found
    assert check.promised == len(by_rule)
    assert {m.snapshot_id for m in check.missing} <= by_rule
    # Every point gone: each promised bucket is missed and names its newest point, the
    # one the engine keeps for it.
    gone = [Point(p.snapshot_id, p.created, p.created + timedelta(seconds=1)) for p in points]
    [none_left] = checks(policy, History(gone), moment)
    assert {m.snapshot_id for m in none_left.missing} == by_rule
    there = {p.snapshot_id for p in points if p.there_at(moment)}
    if rule in ("last", "within"):  # one point a promise: had when it is there
        assert check.had == len(by_rule & there)
