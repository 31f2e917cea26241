"""What a cluster can be restored to once a plan is applied, in words a reviewer reads: a
ladder such as "every 6 h for 2 days, daily for 7 days, weekly for 5 weeks, monthly for 12
months; oldest 2025-11-30".

The ladder is read off the restore points themselves (the complete, consistent snapshots the
plan keeps), not off the policy text: a policy can promise monthly snapshots the fleet does
not have. Pure: the points in, a ``Ladder`` out.

How it is read. Newest first, each gap between two neighbouring points gets a grain by its
length (under 18 h: a sub-daily cadence; under 3.5 days: daily; under 18 days: weekly; under
200 days: monthly; yearly beyond). Runs of gaps of one grain are the tiers, after smoothings
that keep an odd point from splitting a tier:

- a lone coarser gap between two runs of one grain, each of two gaps or more, is a hole in
  that tier (a daily tier missing two weeks), when it misses no more buckets than the tier
  would have points: a week of daily points a year after another is not a daily tier
  missing 365 days;
- then a lone finer gap is an extra point of the tier beside it (a newest manual snapshot;
  the weekly and the monthly snapshot a day apart), of the newer one between two tiers;
- and finer gaps spanning no more than one and a half of the usual interval of the tier
  before them (of the tiers around them, when both are of one grain) are extra points of
  it: a snapshot held by hand mid-month, a few old ones held by hand below the monthly
  tier. At the newest end only a lone finer gap is, since the last few 6-hourly points
  before the daily ones are a tier of their own;
- last, any other lone coarser gap between two runs of one grain is a hole in that tier
  (no longer, again, than its points).
  Reading extra points before these holes makes alternating weekly points and monthly
  points a day apart one weekly tier, not a daily one full of holes;
- the gap where a tier meets the next coarser one (sub-daily and daily, daily and weekly,
  ...) belongs to the coarser tier when it would be a hole in the finer one: the last
  6-hourly point at 06:00, the daily points at 18:00; the last daily point on a Wednesday,
  the weekly ones on Sundays.

A tier reaches as far back as its oldest point. Its span is counted from the newest restore
point (of the whole ladder: the tiers are read from there back), in the calendar buckets of
its unit, both ends included: "daily for 7 days" when its oldest point was made six days
before the newest, "weekly for 5 weeks" back to the fourth ISO week before the newest's,
"monthly for 12 months" back to December from a November, so a regular history reads as the
rules that keep it ("daily: 7"). A sub-daily tier spans the time from the newest point to
its oldest plus one usual interval (24 hourly points: 24 hours), rounded up: in hours up to
36 h, in days beyond. A ladder whose newest point is old still reads the same; how old it is
is the freshness's business (``retention.core.freshness``). Calendar buckets (days,
ISO weeks, months, years) are UTC's; one with no point between two points of its tier is
missing, and the tier says so in one list, oldest first ("2 weeks missing: weeks of
2026-10-05 and 2026-10-19"); in a sub-daily tier, a gap longer than one and a half of its
usual interval misses the intervals that would fit in it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from statistics import median
from typing import Literal

from retention.core.wording import counted, joined, plural

Grain = Literal["sub-daily", "daily", "weekly", "monthly", "yearly"]
GRAINS: tuple[Grain, ...] = ("sub-daily", "daily", "weekly", "monthly", "yearly")
# The longest gap (in hours) of each grain but the last.
_GRAIN_BELOW = (("sub-daily", 18.0), ("daily", 84.0), ("weekly", 432.0), ("monthly", 4800.0))
_HOUR = 3600.0
_DAY = 24 * _HOUR
# The calendar bucket of each grain but sub-daily: its span and its holes are counted in it.
_UNITS: dict[Grain, str] = {"daily": "day", "weekly": "week", "monthly": "month", "yearly": "year"}
# A sub-daily gap longer than this many of the tier's usual interval leaves points missing;
# finer gaps between two runs of a tier, spanning no more than this many, are extra points.
_HOLE_FACTOR = 1.5
# A sub-daily tier's span is in hours up to this many, in days beyond.
_HOURS_AT_MOST = 36
# A tier's holes named in words; the rest are counted.
_NAMED_HOLES = 3
# How a weekly bucket is named ("week of 2026-09-28"); a list of them says it once.
_WEEK_OF = "week of "


def grain_of(gap: timedelta) -> Grain:
    """The grain of one gap between two neighbouring restore points."""
    hours = gap.total_seconds() / _HOUR
    for grain, below in _GRAIN_BELOW:
        if hours < below:
            return grain  # type: ignore[return-value]
    return "yearly"


@dataclass(frozen=True)
class Missing:
    """A hole in a tier: between two of its points (``after`` the older, ``before`` the
    newer), ``count`` buckets of the tier's unit ("days", "months"; for a sub-daily tier,
    its intervals) have no restore point, ``first`` to ``last`` ("2026-10-02", "2026-03")."""

    after: datetime
    before: datetime
    count: int
    unit: str
    first: str
    last: str

    def when(self) -> str:
        """The buckets missing, without a weekly bucket's "week of": "2026-10-02 to
        2026-10-15", "2026-03", "2026-09-28"."""
        first, last = self.first.removeprefix(_WEEK_OF), self.last.removeprefix(_WEEK_OF)
        return first if first == last else f"{first} to {last}"


@dataclass(frozen=True)
class Tier:
    """One rung of the ladder: restore points of one grain, back to ``reaches``."""

    grain: Grain
    every_seconds: int  # the usual interval between its points (their median gap)
    reaches: datetime  # its oldest point
    points: int  # its points, both ends included
    span: int  # how far back it reaches from now, in ``unit``s, rounded up
    unit: str  # "hour", "day", "week", "month" or "year"
    missing: tuple[Missing, ...] = ()

    @property
    def every(self) -> str:
        """ "every 6 h", "daily", "weekly", "monthly" or "yearly"."""
        if self.grain != "sub-daily":
            return self.grain
        hours = max(1, round(self.every_seconds / _HOUR))
        return f"every {hours} h"

    def rung(self) -> str:
        """ "daily for 7 days": how often, and how far back."""
        return f"{self.every} for {counted(self.span, self.unit)}"

    def holes(self) -> str:
        """What the tier misses, in one list, oldest first: "2 weeks missing: weeks of
        2026-10-05 and 2026-10-19", "5 days missing: 2026-10-02 to 2026-10-04 and
        2026-10-09 to 2026-10-10"; the count is of every bucket missing, the first three
        holes are named and the rest counted ("..., 2026-10-11 and 2 more holes"); empty
        when it misses nothing."""
        if not self.missing:
            return ""
        oldest_first = sorted(self.missing, key=lambda m: m.after)
        count = sum(m.count for m in oldest_first)
        named = [m.when() for m in oldest_first[:_NAMED_HOLES]]
        more = len(oldest_first) - _NAMED_HOLES
        listed = joined([*named, counted(more, "more hole")] if more > 0 else named)
        if self.grain == "weekly":
            listed = f"{plural('week', count)} of {listed}"
        unit = "interval" if self.grain == "sub-daily" else _UNITS[self.grain]
        return f"{counted(count, unit)} missing: {listed}"

    def words(self) -> str:
        """ "daily for 7 days", with what is missing: "(3 days missing: 2026-10-02 to ...)"."""
        return self.rung() + (f" ({self.holes()})" if self.missing else "")


@dataclass(frozen=True)
class Ladder:
    """A cluster's restore points as a ladder of tiers, newest tier first."""

    points: int
    newest: datetime | None
    oldest: datetime | None
    tiers: tuple[Tier, ...] = ()

    @property
    def has_gaps(self) -> bool:
        """True when a tier misses a bucket."""
        return any(t.missing for t in self.tiers)

    def words(self) -> str:
        """The ladder in one line: "every 6 h for 2 days, daily for 7 days; oldest 2026-11-01"."""
        if self.oldest is None:
            return "no restore point"
        if not self.tiers:
            return f"1 restore point, {_day(self.oldest)}"
        return ", ".join(t.words() for t in self.tiers) + f"; oldest {_day(self.oldest)}"


def ladder_of(points: Iterable[datetime]) -> Ladder:
    """The ladder of restore points created at ``points`` (any order)."""
    ordered = sorted(set(points), reverse=True)
    if not ordered:
        return Ladder(0, None, None)
    if len(ordered) == 1:
        return Ladder(1, ordered[0], ordered[0])
    gaps = [newer - older for newer, older in pairwise(ordered)]
    runs = _smoothed([_Run(grain_of(g), i, i) for i, g in enumerate(gaps)], ordered, gaps)
    runs = _met(runs, ordered, gaps)
    tiers = tuple(_tier(run, ordered, gaps) for run in runs)
    return Ladder(len(ordered), ordered[0], ordered[-1], tiers)


@dataclass
class _Run:
    """Gaps of one grain side by side: the indexes of the first and last (newest first)."""

    grain: Grain
    first: int
    last: int


def _smoothed(runs: list[_Run], ordered: list[datetime], gaps: list[timedelta]) -> list[_Run]:
    """``runs`` merged, odd runs taking a neighbour's grain (the module docstring's
    smoothings, in its order) until none does. Each change merges two runs, so this ends."""
    runs = _merged(runs)
    while len(runs) > 1:
        grain = None
        for taken in (_hole_in_tiers, _extra_points_of, _hole_of):
            r, grain = next(
                (
                    (r, g)
                    for r in range(len(runs))
                    if (g := taken(runs, r, ordered, gaps)) is not None
                ),
                (0, None),
            )
            if grain is not None:
                runs[r].grain = grain
                break
        if grain is None:
            return runs
        runs = _merged(runs)
    return runs


def _extra_points_of(
    runs: list[_Run], r: int, ordered: list[datetime], gaps: list[timedelta]
) -> Grain | None:
    """The grain of the tier whose extra points the finer run ``runs[r]`` holds, or None."""
    rank = GRAINS.index
    run = runs[r]
    newer = runs[r - 1] if r > 0 else None
    older = runs[r + 1] if r + 1 < len(runs) else None
    beside = [n for n in (newer, older) if n is not None]
    if not all(rank(run.grain) < rank(n.grain) for n in beside):
        return None
    if run.first == run.last:
        return beside[0].grain  # a lone finer gap: of the tier beside it, or the newer one
    if newer is None:
        return None  # a finer tier at the newest end is a tier of its own
    around = [newer, older] if older is not None and older.grain == newer.grain else [newer]
    usual = median(x for n in around for x in _seconds(gaps, n))
    return newer.grain if sum(_seconds(gaps, run)) <= _HOLE_FACTOR * usual else None


def _hole_in_tiers(
    runs: list[_Run], r: int, ordered: list[datetime], gaps: list[timedelta]
) -> Grain | None:
    """As ``_hole_of``, between two runs of two gaps or more only."""
    tiers = 0 < r < len(runs) - 1 and all(n.first < n.last for n in (runs[r - 1], runs[r + 1]))
    return _hole_of(runs, r, ordered, gaps) if tiers else None


def _hole_of(
    runs: list[_Run], r: int, ordered: list[datetime], gaps: list[timedelta]
) -> Grain | None:
    """The grain of the tier the lone coarser gap ``runs[r]`` is a hole in, or None: not
    when it would miss more buckets of that tier than the tier would have points."""
    run = runs[r]
    if run.first != run.last or r == 0 or r + 1 == len(runs):
        return None
    newer, older = runs[r - 1], runs[r + 1]
    if newer.grain != older.grain or GRAINS.index(run.grain) < GRAINS.index(newer.grain):
        return None
    every = median([*_seconds(gaps, newer), *_seconds(gaps, older)])
    hole = _hole(newer.grain, ordered[run.first + 1], ordered[run.first], every)
    points = older.last - newer.first + 2
    return newer.grain if hole is None or hole.count <= points else None


def _met(runs: list[_Run], ordered: list[datetime], gaps: list[timedelta]) -> list[_Run]:
    """``runs`` with the gap where a tier meets the next coarser one moved to the coarser
    tier when it would be a hole in the finer one."""
    rank = GRAINS.index
    for finer, coarser in pairwise(runs):
        if rank(finer.grain) + 1 != rank(coarser.grain) or finer.first == finer.last:
            continue
        every = median(_seconds(gaps, _Run(finer.grain, finer.first, finer.last - 1)))
        newer, older = ordered[finer.last], ordered[finer.last + 1]
        if _hole(finer.grain, older, newer, every) is not None:
            finer.last -= 1
            coarser.first -= 1
    return runs


def _seconds(gaps: list[timedelta], run: _Run) -> list[float]:
    return [g.total_seconds() for g in gaps[run.first : run.last + 1]]


def _merged(runs: list[_Run]) -> list[_Run]:
    out: list[_Run] = []
    for run in runs:
        if out and out[-1].grain == run.grain:
            out[-1].last = run.last
        else:
            out.append(_Run(run.grain, run.first, run.last))
    return out


def _tier(run: _Run, ordered: list[datetime], gaps: list[timedelta]) -> Tier:
    grain, first, last = run.grain, run.first, run.last
    every = median(_seconds(gaps, run))
    reaches = ordered[last + 1]
    span, unit = _span(grain, reaches, ordered[0], every)
    missing = tuple(
        hole
        for i in range(first, last + 1)
        if (hole := _hole(grain, ordered[i + 1], ordered[i], every)) is not None
    )
    return Tier(grain, round(every), reaches, last - first + 2, span, unit, missing)


def _span(grain: Grain, reaches: datetime, newest: datetime, every: float) -> tuple[int, str]:
    """How far back from the ladder's ``newest`` point a tier reaching ``reaches`` goes, and
    in which unit: the calendar buckets of its grain, both ends included; a sub-daily tier's
    time plus one usual interval, rounded up."""
    if grain != "sub-daily":
        return _bucket(grain, newest) - _bucket(grain, reaches) + 1, _UNITS[grain]
    age = (newest - reaches).total_seconds() + every
    hours = max(1, math.ceil(age / _HOUR - 1e-9))
    if hours <= _HOURS_AT_MOST:
        return hours, "hour"
    return math.ceil(age / _DAY - 1e-9), "day"


def _hole(grain: Grain, older: datetime, newer: datetime, every: float) -> Missing | None:
    """What is missing between two neighbouring points of a tier, or None."""
    if grain == "sub-daily":
        gap = (newer - older).total_seconds()
        if every <= 0 or gap <= _HOLE_FACTOR * every:
            return None
        count = max(1, round(gap / every) - 1)
        first, last = (
            _minute(older + timedelta(seconds=every)),
            _minute(newer - timedelta(seconds=every)),
        )
        return Missing(older, newer, count, plural("interval", count), first, last)
    count = _bucket(grain, newer) - _bucket(grain, older) - 1
    if count <= 0:
        return None
    first = _bucket_name(grain, _bucket(grain, older) + 1)
    last = _bucket_name(grain, _bucket(grain, newer) - 1)
    return Missing(older, newer, count, plural(_UNITS[grain], count), first, last)


def _bucket(grain: Grain, moment: datetime) -> int:
    """The index of the calendar bucket (UTC) of ``moment``: days, ISO weeks, months, years."""
    day = moment.astimezone(UTC).date()
    if grain == "daily":
        return day.toordinal()
    if grain == "weekly":
        return (day.toordinal() - day.weekday() - 1) // 7  # ordinal 1 is a Monday
    if grain == "monthly":
        return day.year * 12 + day.month
    return day.year


def _bucket_name(grain: Grain, index: int) -> str:
    """A bucket's name: "2026-10-02", "week of 2026-09-28", "2026-03", "2025"."""
    if grain == "daily":
        return date.fromordinal(index).isoformat()
    if grain == "weekly":
        return f"week of {date.fromordinal(index * 7 + 1).isoformat()}"
    if grain == "monthly":
        year, month = divmod(index - 1, 12)
        return f"{year:04d}-{month + 1:02d}"
    return f"{index:04d}"


def _minute(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _day(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d")
