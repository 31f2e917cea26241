"""What a person deciding whether to approve a held cluster reads, the same in the terminal,
report.md and report.html: its restore points today, as the plan stands (held changes not
sent) and if approved, what approving removes, and its held changes summed up. Read off
the cluster's entry in plan.json (``restorePoints`` and ``heldChanges``, which the planner
wrote from retention.core.approving).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from retention.core.approving import LONG_CUT, cut_span
from retention.core.planfile import ClusterEntry, HeldChangesEntry
from retention.core.timestamps import to_utc
from retention.core.wording import counted, size
from retention.report.ladder import LadderLine

# The ladders' names, as every output labels them.
TODAY = "today"
AS_PLANNED = "as planned (held changes not sent)"
IF_APPROVED = "if approved (held changes sent)"


@dataclass(frozen=True)
class HeldView:
    """A held cluster's decision: its three ladders with their names, today first (none
    for a cluster whose snapshots were not all read), what approving removes, and its held
    changes."""

    ladders: tuple[tuple[str, LadderLine], ...]
    approving: str | None
    changes: HeldChangesEntry | None

    @classmethod
    def of(cls, cluster: ClusterEntry) -> HeldView | None:
        """The view of a cluster with held changes (None: it holds none)."""
        changes = cluster.get("heldChanges")
        points = cluster.get("restorePoints")
        if changes is None and (points is None or "today" not in points):
            return None
        if points is None or "today" not in points or "ifApproved" not in points:
            return cls((), None, changes)
        ladders = (
            (TODAY, LadderLine.of(points["today"])),
            (AS_PLANNED, LadderLine.of(points)),
            (IF_APPROVED, LadderLine.of(points["ifApproved"])),
        )
        return cls(ladders, points.get("approving"), changes)

    def cost_parts(self) -> list[str]:
        """The held changes summed up, a phrase each: "263 shorten, 2 delete", "giving back
        1.2 TiB", "oldest affected 2025-11-01 (6905...)", "largest cut 306 days (6ae6...:
        2027-12-01 to 2026-11-22)", "12 expiries cut by 30 days or more"."""
        c = self.changes
        if c is None:
            return []
        actions = ", ".join(f"{n} {action}" for action, n in c["byAction"].items())
        parts = [actions, f"giving back {size(c['bytes'])}"]
        parts.append(f"oldest affected {_day(c['oldestCreated'])} ({c['oldestSnapshotId']})")
        if (cut := c["largestCut"]) is not None:
            span = f"{_day(cut['expires'])} to {_day(cut['expiresAfter'])}"
            parts.append(f"largest cut {cut_span(cut['cutSeconds'])} ({cut['snapshotId']}: {span})")
        if c["longCuts"]:
            parts.append(f"{counted(c['longCuts'], 'expiry')} cut by {LONG_CUT.days} days or more")
        return parts

    def cost_text(self) -> str:
        """The held changes summed up in one line ("" when unknown)."""
        return "; ".join(self.cost_parts())


def _day(moment: datetime) -> str:
    return to_utc(moment).date().isoformat()


def held_lines(name: str, view: HeldView, indent: str = "    ") -> list[str]:
    """The decision of one held cluster for a terminal: its held changes, its three ladders
    and what approving removes, a line each."""
    lines = []
    if cost := view.cost_text():
        lines.append(f"{indent}{name} held changes: {cost}")
    width = max((len(label) for label, _ in view.ladders), default=0)
    for label, ladder in view.ladders:
        lines.append(f"{indent}restore points {label.ljust(width)}  {ladder.text}")
    if view.approving:
        lines.append(f"{indent}{view.approving}")
    return lines
