"""What a cluster can be restored to once a plan is applied, in words a reviewer reads: a
ladder such as "every 6 h for 2 days, daily for 7 days, weekly for 5 weeks, monthly for 12
months; oldest 2025-11-30".

The ladder is read off the restore points themselves (the complete, consistent snapshots the
plan keeps), not off the policy text: a policy can promise monthly snapshots the fleet does
not have. Pure: the points and ``now`` in, a ``Ladder`` out.

How it is read. Newest first, each gap between two neighbouring points gets a grain by its
length (under 18 h: a sub-daily cadence; under 3.5 days: daily; under 18 days: weekly; under
200 days: monthly; yearly beyond). Runs of gaps of one grain are the tiers, after two
smoothings that keep one odd gap from splitting a tier: a lone gap between two runs of the
same grain is a hole in (or an extra point of) that tier, and a lone finer gap at the newest
end or between two tiers (a manual snapshot, the weekly and the monthly snapshot a day apart)
joins its older neighbour or the tier before it. A tier reaches as far back as its oldest
point; its span is counted from ``now`` in the tier's unit, rounded up ("daily for 7 days"
when the oldest daily point is 6 days 4 hours old). Calendar buckets (days, ISO weeks,
months, years) are UTC's; one with no point between two points of its tier is missing, and
the tier says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from statistics import median
from typing import Literal

from retention.core.wording import counted, plural

Grain = Literal["sub-daily", "daily", "weekly", "monthly", "yearly"]
GRAINS: tuple[Grain, ...] = ("sub-daily", "daily", "weekly", "monthly", "yearly")
# The longest gap (in hours) of each grain but the last.
_GRAIN_BELOW = (("sub-daily", 18.0), ("daily", 84.0), ("weekly", 432.0), ("monthly", 4800.0))
_HOUR = 3600.0
_DAY = 24 * _HOUR
# The unit a tier's span is counted in, in seconds, and its noun.
_UNITS: dict[Grain, tuple[float, str]] = {
    "daily": (_DAY, "day"),
    "weekly": (7 * _DAY, "week"),
    "monthly": (365.2425 / 12 * _DAY, "month"),
    "yearly": (365.2425 * _DAY, "year"),
}
# A sub-daily gap longer than this many of the tier's usual interval leaves points missing.
_HOLE_FACTOR = 1.5


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

    def words(self) -> str:
        """ "14 days missing: 2026-10-02 to 2026-10-15", "1 month missing: 2026-03"."""
        when = self.first if self.first == self.last else f"{self.first} to {self.last}"
        return f"{self.count} {self.unit} missing: {when}"


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

    def words(self) -> str:
        """ "daily for 7 days", with what is missing: "(3 days missing: 2026-10-02 to ...)"."""
        text = f"{self.every} for {counted(self.span, self.unit)}"
        if self.missing:
            text += " (" + "; ".join(m.words() for m in self.missing[:3])
            more = len(self.missing) - 3
            text += f"; {counted(more, 'more hole')})" if more > 0 else ")"
        return text


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


def ladder_of(points: Iterable[datetime], now: datetime) -> Ladder:
    """The ladder of restore points created at ``points`` (any order), seen at ``now``."""
    ordered = sorted(set(points), reverse=True)
    if not ordered:
        return Ladder(0, None, None)
    if len(ordered) == 1:
        return Ladder(1, ordered[0], ordered[0])
    gaps = [newer - older for newer, older in pairwise(ordered)]
    runs = _smoothed([_Run(grain_of(g), i, i) for i, g in enumerate(gaps)])
    tiers = tuple(_tier(run, ordered, gaps, now) for run in runs)
    return Ladder(len(ordered), ordered[0], ordered[-1], tiers)


@dataclass
class _Run:
    """Gaps of one grain side by side: the indexes of the first and last (newest first)."""

    grain: Grain
    first: int
    last: int


def _smoothed(runs: list[_Run]) -> list[_Run]:
    runs = _merged(runs)
    changed = True
    while changed and len(runs) > 1:
        changed = False
        for r, run in enumerate(runs):
            if run.first != run.last:
                continue  # only a lone gap is smoothed away
            grain = _lone_gap_grain(runs, r)
            if grain is not None and grain != run.grain:
                run.grain = grain
                changed = True
        runs = _merged(runs)
    return runs


def _lone_gap_grain(runs: list[_Run], r: int) -> Grain | None:
    """The grain a lone gap at ``runs[r]`` takes from its neighbours, or None to keep its own."""
    rank = GRAINS.index
    own = rank(runs[r].grain)
    newer = runs[r - 1].grain if r > 0 else None
    older = runs[r + 1].grain if r + 1 < len(runs) else None
    if newer is not None and newer == older:
        return newer  # a hole in the tier, or an extra point of it
    if older is not None and own < rank(older) and (newer is None or own < rank(newer)):
        # Finer than what surrounds it: an extra point. At the newest end it joins the tier
        # behind it; between two tiers, the newer one.
        return older if newer is None else newer
    return None


def _merged(runs: list[_Run]) -> list[_Run]:
    out: list[_Run] = []
    for run in runs:
        if out and out[-1].grain == run.grain:
            out[-1].last = run.last
        else:
            out.append(_Run(run.grain, run.first, run.last))
    return out


def _tier(run: _Run, ordered: list[datetime], gaps: list[timedelta], now: datetime) -> Tier:
    grain, first, last = run.grain, run.first, run.last
    own = gaps[first : last + 1]
    every = median(g.total_seconds() for g in own)
    reaches = ordered[last + 1]
    age = max(0.0, (now - reaches).total_seconds())
    if grain == "sub-daily":
        seconds, unit = (_HOUR, "hour") if age < 2 * _DAY else (_DAY, "day")
    else:
        seconds, unit = _UNITS[grain]
    span = max(1, math.ceil(age / seconds - 1e-9))
    missing = tuple(
        hole
        for i in range(first, last + 1)
        if (hole := _hole(grain, ordered[i + 1], ordered[i], every)) is not None
    )
    return Tier(grain, round(every), reaches, last - first + 2, span, unit, missing)


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
    return Missing(older, newer, count, plural(_UNITS[grain][1], count), first, last)


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
