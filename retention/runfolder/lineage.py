"""What a run folder without an apply in it holds, which applies used its plan, which
undos took it back already, and the newest plans of a reports folder.

A folder with plan.json and no results.jsonl sent nothing: it is a plan (`retention plan`,
which writes plan.json and decisions.jsonl only) or a dry run (`retention run --dry-run`,
which also writes the reports). A command stopped while planning leaves interrupted.json
and no plan. An apply of such a plan sent from a folder of its own, into which it copied
the plan byte for byte (apply.applying.apply_saved): the applies of a plan are the folders
whose plan.json has the same bytes and that have a journal.

A plan, run or undo that fails removes the folder it made when it leaves nothing in it;
``without_plan`` says what any other folder without a plan is (an empty one from an older
version, an undo cut short), in the words undo, explain, apply and prune use.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from retention.core.runfiles import EarlierUndo, InterruptedDocument
from retention.errors import UsageError
from retention.runfolder.folder import PLAN, REPORTS, RunFolder, made_at

log = logging.getLogger("retention.runfolder")

# What a folder with a plan and no journal is: its reports say whether a dry run or a plan
# wrote it; without them it may be either (``reports.formats: []``).
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


# What an empty run folder is: a command that failed before its first file (older versions
# left one behind when a plan could not reach the API or its key was refused).
EMPTY = (
    "an empty run folder, left by a plan or run that failed before it wrote its plan (an "
    "unreachable API, a refused key): nothing was sent from it"
)


def without_plan(folder: RunFolder) -> str:
    """What ``folder`` is, in words, when it has no plan.json (and is no undo): a command a
    signal stopped while planning, an undo cut short before its undo.json, an empty folder,
    or no run folder at all."""
    stopped = interrupted(folder)
    if stopped is not None and stopped["step"] == "plan":
        return (
            f"a {stopped['mode']} that {stopped['signal']} stopped while planning: no plan was "
            "written and nothing was sent"
        )
    if folder.results.is_file():
        return (
            "an undo cut short before it wrote undo.json (the API failed under it): its "
            "results.jsonl lists what it read and sent"
        )
    try:
        empty = not any(folder.path.iterdir())
    except OSError:
        empty = False
    if empty and made_at(folder.path.name) is not None:
        return EMPTY
    return f"not a run folder: it has no {PLAN}"


def plan_file(path: Path, option: str = "") -> Path:
    """The plan ``path`` names (given as ``option``, when it is one): the file itself, or
    the plan.json of a run folder. UsageError (exit 2) when it names nothing, or a folder
    without a plan (saying what that folder is)."""
    folder, given = RunFolder(path), f"{option} " if option else ""
    if path.is_dir() and not folder.plan.is_file():
        what = "an undo: it has no plan" if folder.undo.exists() else without_plan(folder)
        raise UsageError(
            f"{given}{path} is {what}; give a plan file, or a run folder with its {PLAN}"
        )
    found = folder.plan if path.is_dir() else path
    if not found.is_file():
        raise UsageError(f"{given}{found}: no such plan file")
    return found


def unapplied(folder: RunFolder) -> str | None:
    """What ``folder`` is, in words, when it has a plan and no apply journal: a dry run
    (``DRY_RUN``) or a plan (``PLAN_ONLY``); None when it has a journal (an apply, a run,
    an undo) or no plan."""
    if folder.results.exists() or not folder.plan.is_file():
        return None
    return DRY_RUN if _reported_mode(folder) == "dry-run" else PLAN_ONLY


def _reported_mode(folder: RunFolder) -> str | None:
    """The mode its reports were written for ("plan", "dry-run"...), read off the head of
    report.md or report.html; None when it has neither (or they cannot be read)."""
    for output in REPORTS:
        try:
            with folder.report(output).open(encoding="utf-8") as report:
                head = report.read(2048)
        except (OSError, UnicodeDecodeError):
            continue
        # report.md opens "**retention MODE RUN_ID: ...", report.html has a meta of it.
        found = re.search(
            r'^\*\*retention (\S+) |<meta name="retention-mode" content="([^"]+)"', head
        )
        if found:
            return found.group(1) or found.group(2)
    return None


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


def undos_of(run_dir: Path, places: Iterable[Path]) -> list[EarlierUndo]:
    """The undos in ``places`` (reports folders) that took back the run in ``run_dir``, dry
    runs aside (they sent nothing): the folders whose undo.json names it. Oldest first; an
    undo.json that cannot be read is passed over with a warning."""
    wanted = run_dir.resolve()
    found: dict[Path, EarlierUndo] = {}
    for place in places:
        for candidate in map(RunFolder, _folders(place)):
            where = candidate.path.resolve()
            if where in found or not candidate.undo.is_file():
                continue
            try:
                document = candidate.read_undo()
            except (OSError, ValidationError) as exc:
                log.warning("%s cannot be read: %s", candidate.undo, exc)
                continue
            if document["dryRun"] or Path(document["undoOf"]).resolve() != wanted:
                continue
            found[where] = {
                "runDir": str(candidate.path.absolute()),
                "createdAt": document["createdAt"],
                "restored": document["counts"].get("restored", 0),
                "interrupted": document["interrupted"],
            }
    return sorted(found.values(), key=lambda undo: (undo["createdAt"], undo["runDir"]))


def newest_apply(places: Iterable[Path]) -> Path | None:
    """The newest run folder in ``places`` (reports folders) that applied a plan: a plan
    and a journal, and no undo (the name starts with the UTC time); None when none did."""
    found = [
        candidate.path
        for place in places
        for candidate in map(RunFolder, _folders(place))
        if candidate.plan.is_file() and candidate.results.is_file() and not candidate.undo.exists()
    ]
    return max(found, key=lambda path: path.name, default=None)


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
