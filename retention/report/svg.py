"""The geometry of the report's charts: a cluster's timeline and the expiry calendar.

A timeline has two lanes on one time axis: below, the snapshots by creation time; above,
the new expiries this plan writes. Both are binned into columns a few pixels wide and
stacked by category, so 300 snapshots a cluster stay a readable histogram instead of a
solid block; each column's tooltip counts what it holds (and names it when there are few).

Only numbers and plain strings come out of here; the HTML template draws them as inline SVG,
so every piece of text (snapshot ids in tooltips) goes through Jinja's autoescape like any
other. Coordinates are rounded to 0.1 px: the SVG of 50 clusters x 300 snapshots stays small.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from retention.core.timestamps import parse_timestamp
from retention.report.model import (
    Bar,
    Beyond,
    Calendar,
    CalendarChart,
    ClusterRow,
    Column,
    Lane,
    Link,
    Segment,
    Tick,
    Timeline,
)

WIDTH = 1100
HEIGHT = 136
PLOT_LEFT = 92.0  # room for the lane labels
PLOT_RIGHT = WIDTH - 104.0  # room for the count of expiries beyond the axis
EXPIRY_TOP, EXPIRY_BASE = 18.0, 48.0
TAKEN_TOP, TAKEN_BASE = 62.0, 112.0
AXIS_Y = TAKEN_BASE
BIN_PX = 5.0  # one column per 5 px: about 190 columns across the plot
MAX_LINKS = 40  # more lines than this cross into a mesh nobody can follow
MAX_NAMED = 3  # a column of up to this many snapshots names each in its tooltip
MAX_TICKS = 9
TICK_MARGIN = 32.0  # half the width of a date label
CATEGORIES = ("keep", "expire", "held", "other")  # stacking order, bottom up
WORDS = {
    "keep": "kept, protected or extended",
    "expire": "shortened or deleted",
    "held": "held",
    "other": "unchanged",
}


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


def duration_words(seconds: float) -> str:
    """A span for people: "6 hours", "4.2 days", "3 weeks"."""
    hours = seconds / 3600
    if hours < 36:
        return f"{hours:.3g} hours"
    days = hours / 24
    if days < 21:
        return f"{days:.3g} days"
    return f"{days / 7:.3g} weeks"


class _Bins:
    """Snapshots counted per column of a lane, by category, with their tooltips."""

    def __init__(self, count: int) -> None:
        self.counts: list[Counter[str]] = [Counter() for _ in range(count)]
        self.labels: list[list[str]] = [[] for _ in range(count)]

    def add(self, index: int, category: str, label: str) -> None:
        self.counts[index][category] += 1
        if len(self.labels[index]) <= MAX_NAMED:
            self.labels[index].append(label)

    def lane(self, label: str, top: float, base: float, when: Callable[[int], str]) -> Lane:
        """The lane's columns, scaled so the fullest bin reaches the top."""
        peak = max([1, *(sum(c.values()) for c in self.counts)])
        scale = (base - top) / peak
        columns = []
        for index, counts in enumerate(self.counts):
            total = sum(counts.values())
            if not total:
                continue
            y = base
            segments = []
            for name in CATEGORIES:
                if counts[name]:
                    height = max(1.5, counts[name] * scale)  # one snapshot stays visible
                    y -= height
                    segments.append(Segment(round(y, 1), round(height, 1), name))
            if total <= MAX_NAMED:
                title = "\n".join(self.labels[index])
            else:
                parts = ", ".join(f"{counts[n]} {WORDS[n]}" for n in CATEGORIES if counts[n])
                title = f"{when(index)}: {total} snapshots: {parts}"
            x = round(PLOT_LEFT + index * BIN_PX, 1)
            columns.append(Column(x, BIN_PX - 1.0, total, segments, title))
        return Lane(label, top, base, peak, columns)


def build_timeline(cluster: ClusterRow, snaps: list[Snap], now: datetime) -> Timeline:
    """Lay out one cluster's snapshots and their new expiries on one time axis. The axis
    runs from the oldest snapshot into the future at most as far as it reaches into the
    past (30 days at least), so a 100-year expiry does not squash the history into a dot:
    later expiries (and protect: never) are counted at the right edge."""
    created = [parse_timestamp(s.created) for s in snaps]
    start = min([*created, now - timedelta(days=1)])
    targets = [parse_timestamp(s.target) for s in snaps if s.target not in (None, "forever")]
    reach = max(now - start, timedelta(days=30))
    end = min(max([*targets, now + timedelta(days=1)]), now + reach)
    pad = (end - start) * 0.01
    start, end = start - pad, end + pad
    span = (end - start).total_seconds()
    width = PLOT_RIGHT - PLOT_LEFT
    count = int(width // BIN_PX)
    bin_seconds = span / count

    def x(t: datetime) -> float:
        return round(PLOT_LEFT + (t - start).total_seconds() / span * width, 1)

    def index(t: datetime) -> int:
        return min(count - 1, max(0, int((t - start).total_seconds() // bin_seconds)))

    def centre(i: int) -> float:
        return round(PLOT_LEFT + i * BIN_PX + (BIN_PX - 1.0) / 2, 1)

    def when(i: int) -> str:
        """The stretch of time column ``i`` covers, for its tooltip."""
        since = start + timedelta(seconds=i * bin_seconds)
        return f"{_minute(since)} to {_minute(since + timedelta(seconds=bin_seconds))}"

    taken, expiry = _Bins(count), _Bins(count)
    beyond: Counter[str] = Counter()
    ends: list[tuple[int, int | None, str]] = []  # (taken bin, expiry bin or None, category)
    for snap, made in zip(snaps, created, strict=True):
        at = index(made)
        taken.add(at, snap.category, snap.label)
        if snap.target is None:
            continue
        target = None if snap.target == "forever" else parse_timestamp(snap.target)
        if target is None or target > end:
            beyond[snap.category] += 1
            ends.append((at, None, snap.category))
        else:
            expiry.add(index(target), snap.category, snap.label)
            ends.append((at, index(target), snap.category))
    taken_lane = taken.lane("taken", TAKEN_TOP, TAKEN_BASE, when)
    expiry_lane = expiry.lane("new expiry", EXPIRY_TOP, EXPIRY_BASE, when)
    links = []
    if len(ends) <= MAX_LINKS:
        tops = {c.x: c.segments[-1].y for c in taken_lane.columns}
        for at, to, name in ends:
            y1 = tops.get(round(PLOT_LEFT + at * BIN_PX, 1), TAKEN_BASE)
            x2 = PLOT_RIGHT if to is None else centre(to)
            links.append(Link(centre(at), y1, x2, EXPIRY_BASE, name, to is None))
    tick_times, fmt = _axis_ticks(start.astimezone(UTC), end.astimezone(UTC))
    now_x = x(now)
    return Timeline(
        cluster=cluster,
        width=WIDTH,
        height=HEIGHT,
        axis_y=AXIS_Y,
        now_x=now_x,
        now_anchor="end" if now_x > PLOT_RIGHT - 40 else "start",
        plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT,
        bin_span=duration_words(bin_seconds),
        taken=taken_lane,
        expiry=expiry_lane,
        links=links,
        beyond=[
            Beyond(
                round(EXPIRY_BASE - 8.0 - 12.0 * n, 1),
                beyond[name],
                name,
                f"{beyond[name]} later" if name == "expire" else f"{beyond[name]} later or never",
            )
            for n, name in enumerate(c for c in CATEGORIES if beyond[c])
        ],
        # A label centred on a tick near an edge would be cut off: leave that tick out.
        ticks=[
            Tick(x(t), t.strftime(fmt))
            for t in tick_times
            if PLOT_LEFT + TICK_MARGIN <= x(t) <= PLOT_RIGHT - TICK_MARGIN
        ],
    )


def _minute(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


# The calendar chart: one stacked bar per UTC day of the 30-day window.
CAL_WIDTH = 1100
CAL_HEIGHT = 190
CAL_LEFT, CAL_RIGHT = 64.0, CAL_WIDTH - 12.0
CAL_TOP, CAL_BASE = 22.0, 150.0
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def nice_step(peak: int) -> int:
    """A gridline step of 1, 2 or 5 times a power of ten that gives at most 5 lines."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            if peak <= 5 * factor * magnitude:
                return factor * magnitude
        magnitude *= 10


def build_calendar(calendar: Calendar, week_end: float) -> CalendarChart:
    """Lay out the calendar: a bar per day, this plan's expiries at the bottom and those
    already set above; a count axis with gridlines, day numbers and month names below, and
    a line where the first 7 days end (``week_end``: in days after the first midnight)."""
    days = calendar.days
    slot = (CAL_RIGHT - CAL_LEFT) / len(days)
    peak = max([1, *(d.count for d in days)])
    step = nice_step(peak)
    top = -(-peak // step) * step  # the scale ends on a gridline
    scale = (CAL_BASE - CAL_TOP) / top
    bars, labels, months = [], [], []
    for i, day in enumerate(days):
        left = CAL_LEFT + i * slot
        planned = day.planned * scale
        existing = day.existing * scale
        bars.append(
            Bar(
                x=round(left + slot * 0.12, 1),
                width=round(slot * 0.76, 1),
                planned_y=round(CAL_BASE - planned, 1),
                planned_height=round(planned, 1),
                existing_y=round(CAL_BASE - planned - existing, 1),
                existing_height=round(existing, 1),
                title=f"{day.day}: {day.count} expiring, {day.planned} set by this plan, "
                f"{day.existing} already set",
            )
        )
        year, month, number = day.day.split("-")
        labels.append(Tick(round(left + slot / 2, 1), str(int(number))))
        if i == 0 or number == "01":
            months.append(Tick(round(left + slot / 2, 1), f"{_MONTHS[int(month) - 1]} {year}"))
    return CalendarChart(
        width=CAL_WIDTH,
        height=CAL_HEIGHT,
        plot_left=CAL_LEFT,
        plot_right=CAL_RIGHT,
        plot_top=CAL_TOP,
        base_y=CAL_BASE,
        bars=bars,
        y_ticks=[
            Tick(round(CAL_BASE - value * scale, 1), str(value))
            for value in range(0, top + 1, step)
        ],
        days=labels,
        months=months,
        week_x=round(CAL_LEFT + week_end * slot, 1),
    )
