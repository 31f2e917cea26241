"""The geometry of the forecast page's charts: a series (count or storage) against time,
the current policies' line and the base's beside it.

Drawn as report.svg draws the run report's charts: an outer <svg> without a viewBox holds
the labels in CSS px (its side padding, ``MARGINS``, leaves room for the values at the left),
and inside it the plot, an inner <svg> whose viewBox (``WIDTH`` x ``HEIGHT``) is stretched
over the outer one's width; lines keep their stroke with ``vector-effect``. So a chart fills
any width and its labels keep their size: at 800 px they read as at 1280. Labels across are
placed in percent of the plot's width, labels down in these coordinates (the height is not
stretched). Only numbers and plain strings come out of here; the template escapes text.

The first step is today, before any run; the first run often expires most of a long
history (gone a step or two later, once its grace has passed), so today's count can be ten
times what follows. Scaled to it, the rest of the year (where the policy sets differ) is a
flat line along the bottom. So when today is more than ``OFF_SCALE`` times the highest value
after the first few steps, the axis is scaled to the steps after them and those first
points are drawn just above the plot, today's value written beside them. The axis stays
linear and starts at zero: a log scale would squeeze the steady state, where the current and
the base policies differ, into a few pixels, and is easily misread.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from retention.core.forecast import steady_index, trend

WIDTH = 1000.0
HEIGHT = 150
TOP, BASE = 12.0, 118.0  # the plot's highest value and its zero line
MARGINS = (64, 12)  # CSS px left (the values) and right of the plot
MAX_TICKS = 5  # date labels across: about 70 px each, and 800 px leaves some 680 px
OFF_SCALE = 1.5  # today above this times the highest after it: scaled to the rest
MAX_HEAD = 7  # steps that may be left above the scale (at most an eighth of the chart)
ABOVE = 3.0  # y of today's point when it is off the scale: above the plot's top


class Tick(NamedTuple):
    """A label on an axis: across, ``at`` is percent of the plot's width; down, it is y."""

    at: float
    label: str


class Line(NamedTuple):
    """One policy set's series as an SVG polyline, and what it is."""

    points: str
    side: str  # "current" or "base": the CSS class that draws it
    label: str


class Chart(NamedTuple):
    """One chart: its title, its lines, its axes and the steady state's day marked."""

    title: str
    lines: list[Line]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    steady_at: float | None  # percent across: where the current policies' count settles
    steady_label: str
    today_label: str = ""  # today's value when it is above the scale, else empty
    today_at: float = 0.0  # percent across: where the steps above the scale end


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at or above ``value`` (1 for 0)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next((s * power for s in (1, 2, 2.5, 5) if value <= s * power), 10 * power)


def nice_bytes(value: float) -> float:
    """``nice_ceiling`` in the binary unit (KiB, MiB, ...) ``value`` is written in, so the
    axis reads 2 TiB, not 1.8 TiB."""
    unit = 1.0
    while value >= 1024 * unit:
        unit *= 1024
    nice = nice_ceiling(value / unit)
    # 1000 GiB reads worse than 1 TiB: above 750 of a unit, the next unit.
    return (1024.0 if nice > 750 else nice) * unit


def chart(  # noqa: PLR0913 - a chart's series, its time axis and how its values are written
    title: str,
    series: Sequence[tuple[str, str, array[int]]],
    *,
    start: datetime,
    step: timedelta,
    label: Callable[[float], str],
    counts: array[int] | None = None,
    in_bytes: bool = False,
) -> Chart:
    """A chart of ``series`` (side, label, values per step from ``start``), values written
    with ``label``; the steady state of ``counts`` (the current policies' count) marked."""
    steps = max((len(values) for _, _, values in series), default=0)
    highest = max((max(values, default=0) for _, _, values in series), default=0)
    today_label, today_at = "", 0.0
    for head in range(1, min(MAX_HEAD, steps // 8) + 1):
        later = max((max(values[head:], default=0) for _, _, values in series), default=0)
        if later > 0 and highest > OFF_SCALE * later:
            today = label(max(values[0] for _, _, values in series if values))
            until = f"{start + head * step:%Y-%m-%d}"
            today_label = (
                f"today {today}, above the scale"
                if head == 1
                else f"{today} today, above the scale until {until}"
            )
            highest, today_at = later, _across(head, steps)
            break
    top = nice_bytes(highest) if in_bytes else nice_ceiling(highest)
    lines = [Line(_points(values, steps, top), side, name) for side, name, values in series]
    y_ticks = [Tick(BASE - (BASE - TOP) * part, label(top * part)) for part in (0, 0.5, 1)]
    steady = steady_index(counts) if counts else None
    going = trend(counts) if counts else None
    steady_at = _across(steady, steps) if going == "steady" and steady else None
    steady_label = ""
    if steady is not None:
        day = f"{start + steady * step:%Y-%m-%d}"
        steady_label = f"steady from {day}" if going == "steady" else f"still {going} at the end"
    x_ticks = _x_ticks(start, step, steps)
    return Chart(title, lines, y_ticks, x_ticks, steady_at, steady_label, today_label, today_at)


def _across(index: int, steps: int) -> float:
    """Percent of the plot's width at step ``index`` of ``steps``."""
    return 0.0 if steps <= 1 else round(100 * index / (steps - 1), 2)


def _points(values: array[int], steps: int, top: float) -> str:
    span = max(1, steps - 1)
    return " ".join(
        f"{WIDTH * k / span:.1f},{max(ABOVE, BASE - (BASE - TOP) * value / top):.1f}"
        for k, value in enumerate(values)
    )


def _x_ticks(start: datetime, step: timedelta, steps: int) -> list[Tick]:
    """Up to MAX_TICKS dates across, the first and the last step among them."""
    if steps <= 1:
        return [Tick(0.0, f"{start:%Y-%m-%d}")]
    count = min(MAX_TICKS, steps)
    indexes = sorted({round(k * (steps - 1) / (count - 1)) for k in range(count)})
    return [Tick(_across(k, steps), f"{start + k * step:%Y-%m-%d}") for k in indexes]
