"""A cluster's restore points as the reports show them: each tier's rung ("daily for 7
days") apart from its holes, so a template can mark the holes, in the words of
``retention.core.restorepoints`` (the tiers are rebuilt from plan.json's entry)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from retention.core.planfile import RestorePointsEntry, TierEntry
from retention.core.restorepoints import Missing, Tier


@dataclass(frozen=True)
class Rung:
    """One tier: "daily for 7 days", and what it misses ("" when nothing)."""

    words: str
    holes: str


@dataclass(frozen=True)
class LadderLine:
    """A cluster's restore points in one line: the rungs, newest first, and the oldest."""

    count: int
    rungs: tuple[Rung, ...]
    oldest: str | None  # the day of the oldest restore point, "2026-01-01" (UTC)
    text: str  # the whole line, as plan.json's ``text``

    @property
    def has_gaps(self) -> bool:
        """True when a rung misses a bucket."""
        return any(r.holes for r in self.rungs)

    @classmethod
    def of(cls, entry: RestorePointsEntry) -> LadderLine:
        """The line of a plan.json ``restorePoints`` entry."""
        rungs = tuple(Rung(t.rung(), t.holes()) for t in map(_tier, entry["tiers"]))
        oldest = entry["oldest"]
        day = None if oldest is None else oldest.astimezone(UTC).date().isoformat()
        return cls(entry["count"], rungs, day, entry["text"])


def _tier(entry: TierEntry) -> Tier:
    missing = tuple(
        Missing(m["after"], m["before"], m["count"], m["unit"], m["first"], m["last"])
        for m in entry["missing"]
    )
    return Tier(
        entry["grain"],
        entry["everySeconds"],
        entry["reaches"],
        entry["points"],
        entry["span"],
        entry["unit"],
        missing,
    )
