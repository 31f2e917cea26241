"""The geometry of the report's charts: a cluster's timeline and the expiry calendar.

A timeline has two lanes on one time axis: below, the snapshots by creation time; above,
the new expiries this plan writes. Both are binned into columns a few pixels wide and
stacked by category, so 300 snapshots a cluster stay a readable histogram instead of a
solid block; each column's tooltip counts what it holds (and names it when there are few).

The template draws each chart as an outer <svg> without a viewBox, whose side padding
(``TIMELINE_MARGINS``, ``CALENDAR_MARGINS``, in CSS px) holds the labels beside the plot,
and inside it the plot: an inner <svg> whose viewBox is the plot's stretch of these
coordinates, stretched over the outer one's width. So the bars and columns fill any width,
while every label is placed in the outer <svg> (``percent`` of the plot's width across,
these coordinates down) and keeps its font size in CSS px: at 800 px a label is as large
as at 1280.

Only numbers and plain strings come out of here; the HTML template draws them as inline SVG,
so every piece of text (snapshot ids in tooltips) goes through Jinja's autoescape like any
other. Coordinates are rounded to 0.1 px: the SVG of 50 clusters x 300 snapshots stays small.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Literal, NamedTuple

from retention.core.planfile import DecisionRecord
from retention.core.wording import counted, plural
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
# A date label is about 65 px wide at 11 px; at 800 px the plot is about 540 px wide.
MAX_TICKS = 6
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
    created: datetime
    category: str
    changed: bool
    # The new expiry, "forever" for protect, None when nothing is sent.
    target: datetime | Literal["forever"] | None
    label: str


def category(record: DecisionRecord, *, held: bool) -> str:
    """The colour of a decision: keep (kept, protected, extended), expire (a destructive
    change: shortened, deleted, released unkept), held (``held``: a safety gate stopped it
    and no --approve let it through), other (unchanged for any other reason)."""
    action, state = record["action"], record["state"]
    if held:
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
        return _amount(hours, "hour")
    days = hours / 24
    if days < 21:
        return _amount(days, "day")
    return _amount(days / 7, "week")


def _amount(value: float, unit: str) -> str:
    shown = f"{value:.3g}"
    return f"{shown} {plural(unit, float(shown))}"


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
                title = f"{when(index)}: {counted(total, 'snapshot')}: {parts}"
            x = round(PLOT_LEFT + index * BIN_PX, 1)
            columns.append(Column(x, BIN_PX - 1.0, total, segments, title))
        return Lane(label, top, base, peak, columns)


class _Axis:
    """A timeline's time axis: from the oldest snapshot into the future at most as far as
    it reaches into the past (30 days at least), so a 100-year expiry does not squash the
    history into a dot; cut into columns BIN_PX wide."""

    def __init__(self, snaps: list[Snap], now: datetime) -> None:
        start = min([*(s.created for s in snaps), now - timedelta(days=1)])
        targets = [s.target for s in snaps if isinstance(s.target, datetime)]
        reach = max(now - start, timedelta(days=30))
        end = min(max([*targets, now + timedelta(days=1)]), now + reach)
        pad = (end - start) * 0.01
        self.start, self.end = start - pad, end + pad
        self.span = (self.end - self.start).total_seconds()
        self.width = PLOT_RIGHT - PLOT_LEFT
        self.count = int(self.width // BIN_PX)
        self.bin_seconds = self.span / self.count

    def x(self, t: datetime) -> float:
        """Where an instant is drawn."""
        return round(PLOT_LEFT + (t - self.start).total_seconds() / self.span * self.width, 1)

    def index(self, t: datetime) -> int:
        """The column an instant falls in (the first or the last when outside)."""
        seconds = (t - self.start).total_seconds()
        return min(self.count - 1, max(0, int(seconds // self.bin_seconds)))

    @staticmethod
    def centre(i: int) -> float:
        """The middle of column ``i``."""
        return round(PLOT_LEFT + i * BIN_PX + (BIN_PX - 1.0) / 2, 1)

    def when(self, i: int) -> str:
        """The stretch of time column ``i`` covers, for its tooltip."""
        since = self.start + timedelta(seconds=i * self.bin_seconds)
        return f"{_minute(since)} to {_minute(since + timedelta(seconds=self.bin_seconds))}"

    def ticks(self) -> list[Tick]:
        """Dates under the axis; a label centred on a tick near an edge would be cut off,
        so that tick is left out."""
        times, fmt = _axis_ticks(self.start.astimezone(UTC), self.end.astimezone(UTC))
        return [
            Tick(self.x(t), t.strftime(fmt))
            for t in times
            if PLOT_LEFT + TICK_MARGIN <= self.x(t) <= PLOT_RIGHT - TICK_MARGIN
        ]


# A change's line, by column: (its snapshot's, its new expiry's or None beyond, category).
_End = tuple[int, int | None, str]


def _binned(snaps: list[Snap], axis: _Axis) -> tuple[_Bins, _Bins, Counter[str], list[_End]]:
    """Each snapshot in the column of its creation, each new expiry in the column of its
    date, or counted beyond the right edge (later than the axis, or never: protect)."""
    taken, expiry = _Bins(axis.count), _Bins(axis.count)
    beyond: Counter[str] = Counter()
    ends: list[_End] = []
    for snap in snaps:
        at = axis.index(snap.created)
        taken.add(at, snap.category, snap.label)
        if snap.target is None:
            continue
        if snap.target == "forever" or snap.target > axis.end:
            beyond[snap.category] += 1
            ends.append((at, None, snap.category))
        else:
            expiry.add(axis.index(snap.target), snap.category, snap.label)
            ends.append((at, axis.index(snap.target), snap.category))
    return taken, expiry, beyond, ends


def _links(ends: list[_End], taken: Lane) -> list[Link]:
    """A line from each change's snapshot to its new expiry, while few enough to follow."""
    if len(ends) > MAX_LINKS:
        return []
    tops = {c.x: c.segments[-1].y for c in taken.columns}
    links = []
    for at, to, name in ends:
        y1 = tops.get(round(PLOT_LEFT + at * BIN_PX, 1), TAKEN_BASE)
        x2 = PLOT_RIGHT if to is None else _Axis.centre(to)
        links.append(Link(_Axis.centre(at), y1, x2, EXPIRY_BASE, name, to is None))
    return links


def _beyond(beyond: Counter[str]) -> list[Beyond]:
    """The counts at the right edge, one per category, stacked upwards."""
    return [
        Beyond(
            round(EXPIRY_BASE - 8.0 - 12.0 * n, 1),
            beyond[name],
            name,
            f"{beyond[name]} later" if name == "expire" else f"{beyond[name]} later or never",
        )
        for n, name in enumerate(c for c in CATEGORIES if beyond[c])
    ]


def build_timeline(cluster: ClusterRow, snaps: list[Snap], now: datetime) -> Timeline:
    """Lay out one cluster's snapshots and their new expiries on one time axis (``_Axis``):
    expiries later than it reaches (and protect: never) are counted at the right edge."""
    axis = _Axis(snaps, now)
    taken, expiry, beyond, ends = _binned(snaps, axis)
    taken_lane = taken.lane("taken", TAKEN_TOP, TAKEN_BASE, axis.when)
    now_x = axis.x(now)
    return Timeline(
        cluster=cluster,
        width=WIDTH,
        height=HEIGHT,
        axis_y=AXIS_Y,
        now_x=now_x,
        now_anchor="end" if now_x > PLOT_RIGHT - 40 else "start",
        plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT,
        bin_span=duration_words(axis.bin_seconds),
        taken=taken_lane,
        expiry=expiry.lane("new expiry", EXPIRY_TOP, EXPIRY_BASE, axis.when),
        links=_links(ends, taken_lane),
        beyond=_beyond(beyond),
        ticks=axis.ticks(),
    )


# The room beside a timeline's plot for its labels, left and right, in CSS px.
TIMELINE_MARGINS = (PLOT_LEFT, WIDTH - PLOT_RIGHT)


def percent(x: float, left: float, right: float) -> str:
    """Where ``x`` of a chart's coordinates falls across its plot (from ``left`` to
    ``right``), as an SVG length: "37.5%"."""
    return f"{(x - left) / (right - left) * 100:.2f}%"


def _minute(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


# The calendar chart: one stacked bar per UTC day of the 30-day window.
CAL_WIDTH = 1100
CAL_HEIGHT = 190
CAL_LEFT, CAL_RIGHT = 64.0, CAL_WIDTH - 12.0
CAL_TOP, CAL_BASE = 22.0, 150.0
CALENDAR_MARGINS = (CAL_LEFT, CAL_WIDTH - CAL_RIGHT)
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
    # After a run the planned part is what the run applied.
    setter = "this plan" if calendar.as_planned else "this run"
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
                title=f"{day.day.isoformat()}: {day.count} expiring, {day.planned} set by "
                f"{setter}, {day.existing} already set",
            )
        )
        when = day.day
        labels.append(Tick(round(left + slot / 2, 1), str(when.day)))
        if i == 0 or when.day == 1:
            months.append(
                Tick(round(left + slot / 2, 1), f"{_MONTHS[when.month - 1]} {when.year:04d}")
            )
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
