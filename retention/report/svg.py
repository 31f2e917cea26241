"""The geometry of a cluster's timeline: snapshots on a time axis, coloured by decision, with a
line from each change to the new expiry it writes.

Only numbers and plain strings come out of here; the HTML template draws them as inline SVG,
so every piece of text (snapshot ids in tooltips) goes through Jinja's autoescape like any
other. Coordinates are rounded to 0.1 px: the SVG of 50 clusters x 300 snapshots stays small.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from retention.report.model import ClusterRow, Link, Mark, Tick, Timeline
from retention.timestamps import parse_timestamp

WIDTH = 1100
HEIGHT = 112
PLOT_LEFT = 12.0
PLOT_RIGHT = WIDTH - 28.0  # room for the arrow heads of expiries beyond the axis
EXPIRY_Y = 20.0  # where change lines end: the new expiry
MARK_BASE = 76.0  # snapshots stand on this line
AXIS_Y = 82.0
MAX_TICKS = 9
TICK_MARGIN = 32.0  # half the width of a date label


class Snap(NamedTuple):
    """What a timeline needs of one decision."""

    id: str
    created: str
    category: str
    changed: bool
    target: str | None  # the new expiry, "forever" for protect, None when nothing is sent
    label: str


def category(record: Mapping[str, Any]) -> str:
    """The colour of a decision: keep (kept, protected, extended), expire (a destructive
    change: shortened, deleted, released unkept), held (a safety gate stopped it), other
    (unchanged for any other reason)."""
    action, state = record["action"], record["state"]
    if record["held"]:
        return "held"
    if record["destructive"]:
        return "expire"
    if action in ("protect", "extend", "release") or state in ("kept", "protected"):
        return "keep"
    return "other"


def _months_later(t: datetime, months: int) -> datetime:
    month = t.month - 1 + months
    return t.replace(year=t.year + month // 12, month=month % 12 + 1)


def _ticks(start: datetime, end: datetime, step: tuple[str, int]) -> Iterator[datetime]:
    """Calendar-aligned instants from start to end: every N days, Mondays, months or years."""
    unit, n = step
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        t = day
        while t <= end:
            if t >= start:
                yield t
            t += timedelta(days=n)
    elif unit == "week":
        t = day + timedelta(days=(7 - day.weekday()) % 7)
        while t <= end:
            yield t
            t += timedelta(days=7 * n)
    else:
        months = 12 * n if unit == "year" else n
        t = day.replace(day=1)
        if unit == "year":
            t = t.replace(month=1, year=t.year - t.year % n)
        else:
            t = t.replace(month=t.month - (t.month - 1) % n)
        while t <= end:
            if t >= start:
                yield t
            t = _months_later(t, months)


_STEPS: list[tuple[str, int]] = [
    ("day", 1),
    ("day", 2),
    ("week", 1),
    ("week", 2),
    ("month", 1),
    ("month", 2),
    ("month", 3),
    ("month", 6),
    ("year", 1),
    ("year", 5),
    ("year", 10),
    ("year", 50),
]


def _axis_ticks(start: datetime, end: datetime) -> tuple[list[datetime], str]:
    """The first step that gives at most MAX_TICKS ticks, and the label format for it."""
    for step in _STEPS:
        ticks = list(_ticks(start, end, step))
        if len(ticks) <= MAX_TICKS:
            fmt = {"day": "%Y-%m-%d", "week": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y"}
            return ticks, fmt[step[0]]
    return [], "%Y"


def build_timeline(cluster: ClusterRow, snaps: list[Snap], now: datetime) -> Timeline:
    """Lay out one cluster's snapshots: x is time, marks stand on the axis, lines go up to
    their new expiry. The axis runs from the oldest snapshot into the future at most as far
    as it reaches into the past (30 days at least), so a 100-year expiry does not squash the
    history into a dot: such expiries (and protect: never) end in an arrow at the right."""
    created = [parse_timestamp(s.created) for s in snaps]
    start = min([*created, now - timedelta(days=1)])
    targets = [parse_timestamp(s.target) for s in snaps if s.target not in (None, "forever")]
    reach = max(now - start, timedelta(days=30))
    end = min(max([*targets, now + timedelta(days=1)]), now + reach)
    pad = (end - start) * 0.01
    start, end = start - pad, end + pad
    span = (end - start).total_seconds()

    def x(t: datetime) -> float:
        return round(PLOT_LEFT + (t - start).total_seconds() / span * (PLOT_RIGHT - PLOT_LEFT), 1)

    marks: list[Mark] = []
    links: list[Link] = []
    for snap, made in zip(snaps, created, strict=True):
        height = 16.0 if snap.changed else 8.0  # a change stands out even where marks crowd
        left = round(x(made) - 1.0, 1)  # marks are 2 px wide, centred on their time
        marks.append(Mark(left, MARK_BASE - height, height, snap.category, snap.label))
        if snap.target is None:
            continue
        beyond = snap.target == "forever" or parse_timestamp(snap.target) > end
        x2 = PLOT_RIGHT if beyond else x(parse_timestamp(snap.target))
        links.append(
            Link(x(made), MARK_BASE - height, x2, EXPIRY_Y, snap.category, beyond),
        )
    tick_times, fmt = _axis_ticks(start.astimezone(UTC), end.astimezone(UTC))
    return Timeline(
        cluster=cluster,
        width=WIDTH,
        height=HEIGHT,
        axis_y=AXIS_Y,
        expiry_y=EXPIRY_Y,
        now_x=x(now),
        plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT,
        marks=marks,
        links=links,
        # A label centred on a tick near an edge would be cut off: leave that tick out.
        ticks=[
            Tick(x(t), t.strftime(fmt))
            for t in tick_times
            if PLOT_LEFT + TICK_MARGIN <= x(t) <= PLOT_RIGHT - TICK_MARGIN
        ],
    )
