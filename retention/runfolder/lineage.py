"""What a run folder without an apply in it holds, which applies used its plan, and the
newest plans of a reports folder.

A folder with plan.json and no results.jsonl sent nothing: it is a plan (`retention plan`,
which writes plan.json and decisions.jsonl only) or a dry run (`retention run --dry-run`,
which also writes the reports). A command stopped while planning leaves interrupted.json
and no plan. An apply of such a plan sent from a folder of its own, into which it copied
the plan byte for byte (apply.applying.apply_saved): the applies of a plan are the folders
whose plan.json has the same bytes and that have a journal.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from retention.core.runfiles import InterruptedDocument
from retention.runfolder.folder import REPORTS, RunFolder

log = logging.getLogger("retention.runfolder")

# What a folder with a plan and no journal is: reports show a dry run (`retention plan`
# writes none); without them it may still be a dry run under ``reports.formats: []``.
DRY_RUN = "a dry run (`retention run --dry-run`)"
PLAN_ONLY = "a plan (`retention plan`, or a dry run without reports)"


def interrupted(folder: RunFolder) -> InterruptedDocument | None:
    """interrupted.json of ``folder``, or None when it has none or it cannot be read."""
    if not folder.interrupted.is_file():
        return None
    try:
        return folder.read_interrupted()
    except (OSError, ValidationError) as exc:
        log.warning("%s cannot be read: %s", folder.interrupted, exc)
        return None


def unapplied(folder: RunFolder) -> str | None:
    """What ``folder`` is, in words, when it has a plan and no apply journal: a dry run
    (``DRY_RUN``) or a plan (``PLAN_ONLY``); None when it has a journal (an apply, a run,
    an undo) or no plan."""
    if folder.results.exists() or not folder.plan.is_file():
        return None
    if any(folder.report(output).exists() for output in REPORTS):
        return DRY_RUN
    return PLAN_ONLY


def applies_of(folder: RunFolder, places: Iterable[Path]) -> list[Path]:
    """The run folders in ``places`` (reports folders) whose apply sent the plan of
    ``folder``: a journal, and a plan.json with the same bytes. Oldest first (a run
    folder's name starts with its UTC time)."""
    plan = folder.plan
    size = plan.stat().st_size
    digest: str | None = None
    found: dict[Path, Path] = {}
    for place in places:
        for candidate in map(RunFolder, _folders(place)):
            where = candidate.path.resolve()
            if where == folder.path.resolve() or where in found:
                continue
            copy = candidate.plan
            if not candidate.results.is_file() or not _same_size(copy, size):
                continue
            digest = digest or _sha256(plan)
            if digest is not None and _sha256(copy) == digest:
                found[where] = candidate.path
    return sorted(found.values(), key=lambda path: path.name)


def newest_plans(reports: Path) -> list[Path]:
    """The plan.json of each run folder in ``reports``, the newest first (a run folder's
    name starts with its UTC time, to the second; the file's time decides between two of
    one second); none when the folder does not exist (yet)."""
    plans = [RunFolder(path).plan for path in _folders(reports)]
    return sorted((p for p in plans if p.is_file()), key=_made, reverse=True)


def _made(plan: Path) -> tuple[str, float]:
    try:
        written = plan.stat().st_mtime
    except OSError:
        written = 0.0  # gone since it was listed: opening it says so
    return plan.parent.name.partition("-")[0], written


def _folders(place: Path) -> list[Path]:
    try:
        return [path for path in place.iterdir() if path.is_dir()]
    except OSError:
        return []  # no such reports folder (yet), or not readable: no apply there


def _same_size(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except OSError:
        return False


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None  # gone or unreadable since it was listed: not a copy we can tell
    return digest.hexdigest()
