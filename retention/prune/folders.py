"""Pruning a reports folder: the facts of each run folder in it, and their removal
(retention.core.pruning decides which go).

Only folders named as RunFolder.new names them (``<UTC time>-<8 hex digits>``,
folder.made_at) are looked at: anything else in reports.dir (the locks, a user's own
files) is never touched. A folder is first renamed to a hidden name and then deleted, so a
reader never meets half a folder, and a deletion cut short is finished by the next prune.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from retention.core.pruning import FolderFacts, Verdict
from retention.core.restore import in_doubt, paired, restorations
from retention.core.wording import counted
from retention.runfolder.folder import RunFolder, made_at
from retention.runfolder.journal import read_apply_journal
from retention.runfolder.lineage import without_plan

log = logging.getLogger("retention.prune")

# A folder being removed: renamed first, so that it never reads as a run folder again.
REMOVING = ".removing-"


class Listener(Protocol):
    """Who hears how a prune goes (the command line's progress)."""

    def folders(self, total: int) -> None:
        """Reading starts: ``total`` run folders to read."""

    def folder(self, name: str) -> None:
        """One more run folder read."""


@dataclass
class Pruned:
    """What a prune found and did."""

    verdicts: list[Verdict]
    removed: list[str] = field(default_factory=list)
    # Folders that should have gone and could not be removed, with the error.
    failed: list[tuple[str, str]] = field(default_factory=list)


def survey(reports: Path, listener: Listener | None = None) -> list[FolderFacts]:
    """The facts of every run folder in ``reports`` (none when it does not exist); the
    ``listener`` hears how many there are, then each one read."""
    try:
        paths = [path for path in reports.iterdir() if path.is_dir()]
    except FileNotFoundError:
        return []
    runs = [(path, made) for path in sorted(paths) if (made := made_at(path.name)) is not None]
    if listener is not None:
        listener.folders(len(runs))
    found = []
    for path, made in runs:
        facts = facts_of(RunFolder(path), made)
        found.append(replace(facts, size=_size(path)))
        if listener is not None:
            listener.folder(path.name)
    return found


def _size(path: Path) -> int:
    total = 0
    for file in path.rglob("*"):
        try:
            total += file.stat().st_size if file.is_file() else 0
        except OSError:
            continue  # gone since it was listed
    return total


def facts_of(folder: RunFolder, made: datetime) -> FolderFacts:
    """What pruning needs to know of ``folder``, from its files."""
    name = folder.path.name
    whole = folder.plan.is_file() and not folder.interrupted.exists()
    if not folder.plan.is_file() and not folder.undo.exists():
        # Nothing to undo from it: no plan was sent, and an undo cut short is not undone.
        return FolderFacts(name, made, successful=False, what=without_plan(folder))
    if folder.undo.exists() or not folder.results.exists():
        # An undo is not undone; a plan or a dry run sent nothing.
        return FolderFacts(name, made, successful=whole)
    lines, bad = read_apply_journal(folder.results)
    if bad:
        why = f"{counted(bad, 'journal line')} of results.jsonl cannot be read"
        return FolderFacts(name, made, successful=False, undo_unknown=why)
    doubtful = any(in_doubt(intent, outcome) for intent, outcome in paired(lines))
    successful = whole and not doubtful
    ends = [r.written.expires for r in restorations(lines)]
    if any(end is None for end in ends):
        why = "a change it made left a snapshot without an expiry: undo may still restore it"
        return FolderFacts(name, made, successful=successful, undo_unknown=why)
    until = max((end for end in ends if end is not None), default=None)
    return FolderFacts(name, made, successful=successful, undo_until=until)


def remove(reports: Path, verdicts: list[Verdict]) -> Pruned:
    """Remove the folders the verdicts let go (and any removal an earlier prune left)."""
    pruned = Pruned(verdicts)
    for leftover in sorted(reports.glob(REMOVING + "*")):
        shutil.rmtree(leftover, ignore_errors=True)
    for verdict in verdicts:
        if not verdict.remove:
            continue
        path = reports / verdict.name
        hidden = reports / (REMOVING + verdict.name)
        try:
            path.rename(hidden)
            shutil.rmtree(hidden)
        except OSError as exc:
            pruned.failed.append((verdict.name, exc.strerror or str(exc)))
            log.warning("cannot remove run folder %s: %s", path, exc.strerror or exc)
            continue
        pruned.removed.append(verdict.name)
    return pruned
