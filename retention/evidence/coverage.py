"""Coverage: per cluster and day, was a restorable snapshot as fresh as expected? Pure: a
cluster's freshness checks (one per run that walked it) in, its days out.

A day (UTC) is *met* when a run that day found the cluster's newest restorable snapshot
within what was expected of it (its policy's ``expect.newest_within``, or twice its
cadence); *stale* when the day's runs found it older than that (its backups had stopped),
*error* when they could not walk it, *no-run* when no run walked it that day (nothing
says either way, so it is not met), *unchecked* when its runs had no expectation to check
(a cluster with no snapshot and nothing expected, or a run recorded before the ledger
kept expectations): not counted. Days before the ledger first saw the cluster, or after
it saw it go, are outside its scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

DayStatus = Literal["met", "stale", "error", "no-run", "unchecked", "out"]
# How a status shows in a calendar strip of one character a day.
STRIP = {"met": "#", "stale": "S", "error": "E", "no-run": ".", "unchecked": "?", "out": " "}


@dataclass(frozen=True)
class Check:
    """One run's freshness check of a cluster: its day, and what it found (``stale``
    None: nothing was expected, so nothing checked)."""

    day: date
    stale: bool | None
    error: bool = False


@dataclass(frozen=True)
class Span:
    """Days in a row (a gap, a stop of the backups, the period itself), both included."""

    first: date
    last: date

    @property
    def days(self) -> int:
        """How many."""
        return (self.last - self.first).days + 1

    def document(self) -> dict[str, Any]:
        """As the evidence document writes it."""
        return {"from": self.first.isoformat(), "to": self.last.isoformat(), "days": self.days}


@dataclass(frozen=True)
class Coverage:
    """A cluster's days in the period."""

    days: tuple[tuple[date, DayStatus], ...]

    def count(self, status: DayStatus) -> int:
        """Its days of ``status``."""
        return sum(1 for _, s in self.days if s == status)

    @property
    def in_scope(self) -> int:
        """Days that count: in its scope and checked."""
        return sum(1 for _, s in self.days if s not in ("out", "unchecked"))

    @property
    def met(self) -> int:
        """Days met."""
        return self.count("met")

    @property
    def complete(self) -> bool:
        """Every day that counts was met."""
        return self.met == self.in_scope

    @property
    def gaps(self) -> list[Span]:
        """Each run of days not met, oldest first (unchecked days neither break nor
        extend one; a day out of scope ends it)."""
        gaps: list[Span] = []
        first: date | None = None
        last: date | None = None
        for day, status in self.days:
            if status in ("stale", "error", "no-run"):
                first, last = first or day, day
            elif status != "unchecked" and first is not None and last is not None:
                gaps.append(Span(first, last))
                first = last = None
        if first is not None and last is not None:
            gaps.append(Span(first, last))
        return gaps

    @property
    def longest_gap(self) -> Span | None:
        """The longest gap (the first of the longest), None when every day was met."""
        return max(self.gaps, key=lambda g: g.days, default=None)

    def spans(self, status: DayStatus) -> list[Span]:
        """Each run of days of ``status`` in a row (the days backups had stopped)."""
        found: list[Span] = []
        for day, s in self.days:
            if s != status:
                continue
            if found and found[-1].last == day - timedelta(days=1):
                found[-1] = Span(found[-1].first, day)
            else:
                found.append(Span(day, day))
        return found

    @property
    def strip(self) -> str:
        """One character a day (``STRIP``)."""
        return "".join(STRIP[s] for _, s in self.days)


def coverage(
    days: Sequence[date], checks: Sequence[Check], first: date | None, gone: date | None
) -> Coverage:
    """A cluster's coverage over ``days`` from its ``checks``; ``first`` the day the
    ledger first saw it (None: before the period), ``gone`` the day it saw it go."""
    by_day: dict[date, list[Check]] = {}
    for check in checks:
        by_day.setdefault(check.day, []).append(check)
    statuses: list[tuple[date, DayStatus]] = []
    for day in days:
        if (first is not None and day < first) or (gone is not None and day > gone):
            statuses.append((day, "out"))
            continue
        statuses.append((day, _status(by_day.get(day, []))))
    return Coverage(tuple(statuses))


def _status(checks: Sequence[Check]) -> DayStatus:
    if not checks:
        return "no-run"
    if any(c.stale is False and not c.error for c in checks):
        return "met"
    if any(c.stale is True for c in checks):
        return "stale"
    if any(c.error for c in checks):
        return "error"
    return "unchecked"
