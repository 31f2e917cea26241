"""The geometry of the report's charts: timelines stay readable at 300 snapshots (binned
columns that count every snapshot once, inside their lane and the plot), the calendar
stacks this plan's expiries under those already set on a count axis that ends on a
gridline."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Literal

import pytest

from retention.core.timestamps import format_timestamp, parse_timestamp
from retention.report.model import Calendar, CalendarDay, ClusterRow, Lane
from retention.report.svg import (
    EXPIRY_BASE,
    EXPIRY_TOP,
    MAX_LINKS,
    PLOT_LEFT,
    PLOT_RIGHT,
    TAKEN_BASE,
    TAKEN_TOP,
    Snap,
    build_calendar,
    build_timeline,
    nice_step,
)

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
ROW = ClusterRow("p1", "c1", "orders", "cluster", 0, {}, ["prod"], [], [])


def snap(n: int, hours_ago: float, category: str, target: str | None = None) -> Snap:
    """A decision for a timeline: taken ``hours_ago``, with an optional new expiry (as the
    files write it, or "forever")."""
    created = NOW - timedelta(hours=hours_ago)
    changed = target is not None or category == "held"
    to: datetime | Literal["forever"] | None = None
    if target is not None:
        to = "forever" if target == "forever" else parse_timestamp(target)
    return Snap(f"s{n:03d}", created, category, changed, to, f"s{n:03d} label")


def six_hourly(count: int, category: str = "held") -> list[Snap]:
    """``count`` snapshots six hours apart, newest first, like a busy cluster's history."""
    return [snap(n, 6 * n, category) for n in range(count)]


def assert_inside(lane: Lane, top: float, base: float) -> None:
    """Every column of a lane stands on its base, reaches no higher than its top (plus the
    minimum height of a one-snapshot segment) and lies inside the plot."""
    for column in lane.columns:
        assert column.x >= PLOT_LEFT
        assert column.x + column.width <= PLOT_RIGHT
        assert column.segments[0].y + column.segments[0].height == pytest.approx(base, abs=0.2)
        assert column.segments[-1].y >= top - 1.5 * len(column.segments)


def test_three_hundred_snapshots_become_counted_columns() -> None:
    """300 snapshots a cluster become at most one column per 5 px; the columns count every
    snapshot exactly once and the fullest one reaches the lane's top."""
    timeline = build_timeline(ROW, six_hourly(300), NOW)
    lane = timeline.taken

    assert sum(c.count for c in lane.columns) == 300
    assert len(lane.columns) <= (PLOT_RIGHT - PLOT_LEFT) / 5
    assert len({c.x for c in lane.columns}) == len(lane.columns)
    assert lane.peak == max(c.count for c in lane.columns) > 1
    assert min(s.y for c in lane.columns for s in c.segments) == pytest.approx(TAKEN_TOP, abs=0.2)
    assert_inside(lane, TAKEN_TOP, TAKEN_BASE)
    assert timeline.expiry.columns == []


def test_a_full_column_says_what_it_holds_and_a_sparse_one_names_its_snapshots() -> None:
    """A column of many snapshots counts them by category with its time range; one of a few
    names each snapshot (its label)."""
    snaps = [*six_hourly(40), snap(900, 24 * 300, "keep")]
    lane = build_timeline(ROW, snaps, NOW).taken
    full = max(lane.columns, key=lambda c: c.count)
    lone = min(lane.columns, key=lambda c: c.x)

    assert full.title.endswith(f": {full.count} snapshots: {full.count} held")
    assert " to " in full.title
    assert full.title[:4] == "2026"
    assert (lone.count, lone.title) == (1, "s900 label")


def test_segments_stack_by_category_keep_at_the_bottom() -> None:
    """A column holding kept, expiring and held snapshots stacks them keep, expire, held,
    bottom up, each as tall as its share."""
    snaps = [snap(0, 1, "held"), snap(1, 1, "keep"), snap(2, 1, "expire"), snap(3, 1, "held")]
    [column] = build_timeline(ROW, snaps, NOW).taken.columns

    assert [s.category for s in column.segments] == ["keep", "expire", "held"]
    heights = [s.height for s in column.segments]
    assert heights[2] == pytest.approx(2 * heights[0], abs=0.2)
    assert sum(heights) == pytest.approx(TAKEN_BASE - TAKEN_TOP, abs=0.3)


def test_new_expiries_are_binned_on_their_date_and_later_ones_counted_at_the_edge() -> None:
    """Sent changes put their new expiry in the upper lane; protect (never) and expiries far
    beyond the axis are counted at the right edge by category instead."""
    tomorrow = format_timestamp(NOW + timedelta(days=1))
    far = format_timestamp(NOW + timedelta(days=3650))
    snaps = [
        snap(0, 48, "expire", tomorrow),
        snap(1, 72, "expire", tomorrow),
        snap(2, 96, "keep", "forever"),
        snap(3, 120, "keep", far),
        snap(4, 144, "other"),
    ]
    timeline = build_timeline(ROW, snaps, NOW)

    assert [c.count for c in timeline.expiry.columns] == [2]
    assert_inside(timeline.expiry, EXPIRY_TOP, EXPIRY_BASE)
    assert [(b.category, b.count, b.label) for b in timeline.beyond] == [
        ("keep", 2, "2 later or never")
    ]
    assert len(timeline.links) == 4
    assert sum(link.beyond for link in timeline.links) == 2


def test_lines_are_left_out_when_too_many_to_follow() -> None:
    """Past MAX_LINKS changes the lines would cross into a mesh: only the lanes show them."""
    target = format_timestamp(NOW + timedelta(days=2))
    few = [snap(n, 6 * n, "expire", target) for n in range(MAX_LINKS)]
    many = [snap(n, 6 * n, "expire", target) for n in range(MAX_LINKS + 1)]

    assert len(build_timeline(ROW, few, NOW).links) == MAX_LINKS
    crowded = build_timeline(ROW, many, NOW)
    assert crowded.links == []
    assert sum(c.count for c in crowded.expiry.columns) == MAX_LINKS + 1


def test_the_now_label_turns_inward_at_the_right_edge() -> None:
    """When nothing reaches past now, the now line sits at the right edge and its label is
    anchored to end there instead of being cut off."""
    at_edge = build_timeline(ROW, six_hourly(300), NOW)
    later = format_timestamp(NOW + timedelta(days=30))
    inside = build_timeline(ROW, [snap(0, 24 * 60, "keep", later)], NOW)

    assert at_edge.now_anchor == "end"
    assert inside.now_anchor == "start"


@pytest.mark.parametrize(
    ("peak", "step"),
    [(1, 1), (5, 1), (6, 2), (10, 2), (11, 5), (25, 5), (26, 10), (50, 10), (51, 20), (999, 200)],
)
def test_gridline_steps_are_round_numbers(peak: int, step: int) -> None:
    """The calendar's count axis steps by 1, 2 or 5 times a power of ten, at most 5 lines."""
    assert nice_step(peak) == step


def test_calendar_bars_stack_this_plans_expiries_under_those_already_set() -> None:
    """Each day's bar has this plan's expiries at the bottom and those already set on top,
    scaled to an axis that ends on a gridline at or above the busiest day."""
    days = [CalendarDay(date(2026, 11, d)) for d in range(21, 30)] + [
        CalendarDay(date(2026, 12, d)) for d in range(1, 22)
    ]
    days[1].planned, days[1].existing = 3, 4
    days[5].existing = 1
    chart = build_calendar(Calendar(days=days), week_end=7.5)

    busy = chart.bars[1]
    assert busy.planned_y + busy.planned_height == pytest.approx(chart.base_y)
    assert busy.existing_y + busy.existing_height == pytest.approx(busy.planned_y)
    assert busy.existing_height == pytest.approx(busy.planned_height * 4 / 3, abs=0.2)
    assert [t.label for t in chart.y_ticks] == ["0", "2", "4", "6", "8"]
    assert chart.y_ticks[-1].x == chart.plot_top
    assert busy.title == "2026-11-22: 7 expiring, 3 set by this plan, 4 already set"
    assert (chart.bars[0].planned_height, chart.bars[0].existing_height) == (0, 0)
    assert [m.label for m in chart.months] == ["Nov 2026", "Dec 2026"]
    assert [d.label for d in chart.days[:3]] == ["21", "22", "23"]
    assert chart.bars[7].x < chart.week_x < chart.bars[8].x
