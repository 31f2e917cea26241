"""Durations in restic's units: ``y`` years, ``m`` months, ``d`` days, ``h`` hours.

``1y2m3d4h`` is a calendar shift (years, months, days on the wall clock of the policy's
zone) followed by an absolute number of hours, exactly as restic's keep-within does with
Go's ``AddDate`` then ``Add``. Go normalises an overflowing date instead of clamping it
(March 31 minus one month is March 3 or 2, not February 28), and so do we.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from retention.core.timestamps import EARLIEST, LATEST, add_date
from retention.core.wording import counted, joined

_TOKEN = re.compile(r"(\d+)([ymdh])")


@dataclass(frozen=True, order=True)
class RetentionDuration:
    """A restic duration: calendar years, months and days, then hours."""

    years: int = 0
    months: int = 0
    days: int = 0
    hours: int = 0

    @classmethod
    def parse(cls, text: str) -> RetentionDuration:
        """Parse ``1y2m3d4h`` (units in any order, each at most once, at least one).

        Raises ValueError with a message saying what is wrong.
        """
        cleaned = text.strip()
        if not cleaned:
            raise ValueError("a duration needs at least one of y, m, d, h (e.g. 7d or 1y6m)")
        pos, values, seen = 0, {"y": 0, "m": 0, "d": 0, "h": 0}, set()
        for match in _TOKEN.finditer(cleaned):
            if match.start() != pos:
                break
            unit = match.group(2)
            if unit in seen:
                raise ValueError(f"{text!r}: the unit {unit!r} appears twice")
            seen.add(unit)
            values[unit] = int(match.group(1))
            pos = match.end()
        if pos != len(cleaned) or not seen:
            raise ValueError(
                f"{text!r} is not a duration: use numbers with y (years), m (months), "
                "d (days), h (hours), e.g. 36h, 7d, 1y6m"
            )
        return cls(values["y"], values["m"], values["d"], values["h"])

    def __str__(self) -> str:
        units = ((self.years, "y"), (self.months, "m"), (self.days, "d"), (self.hours, "h"))
        return "".join(f"{value}{unit}" for value, unit in units if value) or "0h"

    def words(self) -> str:
        """The duration for people: "30 months", "1 year and 6 months", "0 hours"."""
        units = ((self.years, "year"), (self.months, "month"), (self.days, "day"))
        parts = [counted(value, unit) for value, unit in units if value]
        if self.hours or not parts:
            parts.append(counted(self.hours, "hour"))
        return joined(parts)

    @property
    def zero(self) -> bool:
        """True when every part is zero."""
        return not (self.years or self.months or self.days or self.hours)

    def before(self, moment: datetime, zone: tzinfo = UTC) -> datetime:
        """``moment`` shifted back by this duration (calendar part on ``zone``'s wall clock)."""
        return self._shift(moment, -1, zone)

    def after(self, moment: datetime, zone: tzinfo = UTC) -> datetime:
        """``moment`` shifted forward by this duration."""
        return self._shift(moment, 1, zone)

    def _shift(self, moment: datetime, sign: int, zone: tzinfo) -> datetime:
        # Go's time reaches years that Python's datetime cannot (a restic case keeps
        # "9999y"): past either end, the shift stops at the end of the representable range.
        try:
            if zone is UTC and moment.tzinfo is UTC and not (self.years or self.months):
                # A UTC day is 24 hours: no wall clock to consult (a grace period is shifted
                # so for every cluster a plan decides). Elsewhere the wall clock decides,
                # even for hours alone (a fall-back hour's fold), and so does a moment given
                # on another zone's clock (it is added to on that clock).
                moved = moment + timedelta(days=sign * self.days, hours=sign * self.hours)
                return min(max(moved.astimezone(UTC), EARLIEST), LATEST)
            local = moment.astimezone(zone)
            shifted = add_date(local, sign * self.years, sign * self.months, sign * self.days, zone)
            moved = (shifted + timedelta(hours=sign * self.hours)).astimezone(UTC)
        except (OverflowError, ValueError):
            return EARLIEST if sign < 0 else LATEST
        return min(max(moved, EARLIEST), LATEST)
