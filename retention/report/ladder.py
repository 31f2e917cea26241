"""A cluster's restore points as the reports show them: each tier's rung ("daily for 7
days") apart from its holes, so a template can mark the holes, in the words of
``retention.core.restorepoints`` (the tiers are rebuilt from plan.json's entry by
``planfile.tier_of``: the entry's ``text`` joins each rung and its holes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from retention.core.planfile import LadderEntry
from retention.core.planvalues import tier_of


@dataclass(frozen=True)
class Rung:
    """One tier: "daily for 7 days", and what it misses ("" when nothing)."""

    words: str
    holes: str


@dataclass(frozen=True)
class LadderLine:
    """A cluster's restore points in one line: the rungs, newest first, and the oldest."""

    rungs: tuple[Rung, ...]
    oldest: str | None  # the day of the oldest restore point, "2026-01-01" (UTC)
    text: str  # the whole line, as plan.json's ``text``
    count: int = 0  # how many restore points

    @property
    def has_gaps(self) -> bool:
        """True when a rung misses a bucket."""
        return any(r.holes for r in self.rungs)

    @classmethod
    def of(cls, entry: LadderEntry) -> LadderLine:
        """The line of a plan.json ``restorePoints`` entry."""
        rungs = tuple(Rung(t.rung(), t.holes()) for t in map(tier_of, entry["tiers"]))
        oldest = entry["oldest"]
        day = None if oldest is None else oldest.astimezone(UTC).date().isoformat()
        return cls(rungs, day, entry["text"], entry["count"])
