"""Pruning as a step of its own: at the end of `retention run` when ``reports.keep`` is set,
and by hand (`retention prune`). The caller holds the run lock, so no run writes a folder
while it is looked at.

Every removal is logged (event ``run-folder-removed`` on the run logger: a collector's
record, and in json mode on stderr); a folder that cannot be removed is a warning and never
fails the run that pruned.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from retention.core.policy.duration import RetentionDuration
from retention.core.pruning import prune_verdicts
from retention.ops.logs import RUN_LOGGER
from retention.prune.folders import Pruned, remove, survey

log = logging.getLogger(RUN_LOGGER)


def prune_reports(
    reports: Path, keep: RetentionDuration, *, now: datetime, dry_run: bool = False
) -> Pruned:
    """Remove the run folders of ``reports`` that ``keep`` lets go (retention.core.pruning);
    with ``dry_run`` only say which."""
    verdicts = prune_verdicts(survey(reports), now=now, keep=keep)
    if dry_run:
        return Pruned(verdicts)
    pruned = remove(reports, verdicts)
    why = {v.name: v.why for v in verdicts}
    for name in pruned.removed:
        fields = {"event": "run-folder-removed", "folder": str(reports / name), "why": why[name]}
        log.info("removed run folder %s: %s", reports / name, why[name], extra={"fields": fields})
    return pruned
