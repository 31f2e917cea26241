"""Pruning as a step of its own: at the end of `retention run` when ``reports.keep`` is set,
and by hand (`retention prune`). The caller holds the run lock, so no run writes a folder
while it is looked at.

Every removal is logged (event ``run-folder-removed`` on the run logger: a collector's
record, and in json mode on stderr); a folder that cannot be removed is a warning and never
fails the run that pruned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from retention.core.policy.duration import RetentionDuration
from retention.core.pruning import prune_verdicts
from retention.core.wording import counted
from retention.ops.logs import RUN_LOGGER
from retention.prune.folders import Listener, Pruned, remove, survey

log = logging.getLogger(RUN_LOGGER)


def prune_reports(
    reports: Path,
    keep: RetentionDuration,
    *,
    now: datetime,
    dry_run: bool = False,
    listener: Listener | None = None,
) -> Pruned:
    """Remove the run folders of ``reports`` that ``keep`` lets go (retention.core.pruning);
    with ``dry_run`` only say which. The ``listener`` hears the folders being read."""
    verdicts = prune_verdicts(survey(reports, listener), now=now, keep=keep)
    if dry_run:
        return Pruned(verdicts)
    pruned = remove(reports, verdicts)
    why = {v.name: v.why for v in verdicts}
    for name in pruned.removed:
        fields = {"event": "run-folder-removed", "folder": str(reports / name), "why": why[name]}
        log.info("removed run folder %s: %s", reports / name, why[name], extra={"fields": fields})
    return pruned


@dataclass(frozen=True)
class PruneResult:
    """A prune by hand: what it found and did in ``reports``, with the keep duration it
    judged by, and whether it only said (``dry_run``)."""

    pruned: Pruned
    reports: Path
    keep: RetentionDuration
    dry_run: bool

    @property
    def code(self) -> int:
        """1 when a folder that should have gone could not be removed, else 0."""
        return 1 if self.pruned.failed else 0

    def document(self) -> dict[str, Any]:
        """prune --format json."""
        pruned = self.pruned
        return {
            "command": "prune",
            "exitCode": self.code,
            "dryRun": self.dry_run,
            "reportsDir": str(self.reports),
            "keep": str(self.keep),
            "folders": [
                {"name": v.name, "remove": v.remove, "why": v.why, "what": v.what, "bytes": v.size}
                for v in pruned.verdicts
            ],
            "removed": pruned.removed,
            "failed": [{"name": name, "error": error} for name, error in pruned.failed],
        }

    def lines(self) -> list[str]:
        """What a person reads: each folder and its verdict, then the totals."""
        pruned, reports = self.pruned, self.reports
        going = [v for v in pruned.verdicts if v.remove]
        lines = [
            f"  {'remove' if v.remove else 'keep  '}  {v.name}  {v.why}"
            + (f"; it is {v.what}" if v.what else "")
            for v in pruned.verdicts
        ]
        size = sum(v.size for v in going if self.dry_run or v.name in pruned.removed)
        folders = counted(len(going) if self.dry_run else len(pruned.removed), "run folder")
        verb = "Would remove" if self.dry_run else "Removed"
        lines.append(
            f"{verb} {folders} of {len(pruned.verdicts)} in {reports} "
            f"({size / 1e6:,.1f} MB); keep: {self.keep}."
        )
        return lines

    def failures(self) -> list[str]:
        """The folders that could not be removed, a line each (for stderr)."""
        return [
            f"Could not remove {self.reports / name}: {error}" for name, error in self.pruned.failed
        ]
