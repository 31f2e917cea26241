"""Undo as a job: read a run's journal, put back what it shortened, journal and report that.

An undo is itself a run. It writes a run folder of its own: ``undo.json`` (which run it
undoes, and every item with its verdict), ``results.jsonl`` (one line per snapshot, flushed
before the next PATCH, as apply's journal), and report.html / report.md. It is refused for
an undo's folder (an undo of an undo would redo the bad run: run the policy again instead)
and for a run made against another service. A run undone already may be undone again (to
finish an undo that was stopped or failed); undo.json names the undos before it, so that
the summary and the reports can say so. The CLI holds the run lock around it.

Its journal is written ahead, as apply's: an intent line (``"intent": true`` and the bodies
about to be sent) before a snapshot's PATCHes, its item after. After a stop no restore
starts and the items left are ``not-sent``; a restore of two PATCHes (protect, then
unprotect: the API's only way to drop an expiry) that has sent its first finishes its
second, since a snapshot left protected would look changed by someone else to the next undo.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from retention.api.client import OpsManagerClient
from retention.api.values import BASE_URL_SETTING
from retention.core.restore import (
    LEFT_ALONE,
    SETTLED,
    Restoration,
    State,
    restorations,
    verdict,
)
from retention.core.runfiles import (
    UNDO_FORMAT,
    EarlierUndo,
    UndoDocument,
    UndoIntent,
    UndoItem,
    UndoOutcome,
)
from retention.core.snapshot import PatchText, json_text
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted
from retention.errors import ApiError, NotFoundError, StopRequestedError, UsageError
from retention.ops.clock import Clock
from retention.ops.stopping import Stop
from retention.ops.window import ordered
from retention.runfolder.folder import RunFolder
from retention.runfolder.journal import JournalFile, read_apply_journal
from retention.runfolder.lineage import (
    applies_of,
    newest_apply,
    unapplied,
    undos_of,
    without_plan,
)
from retention.runfolder.planread import open_plan
from retention.undo.ledgering import RecordedUndo

log = logging.getLogger("retention.undo")


class Listener(Protocol):
    """Who hears how an undo goes (the command line's progress)."""

    def undo(self, total: int) -> None:
        """Undoing starts: ``total`` snapshots to look at (and put back, if they can be)."""

    def undone(self, outcome: UndoOutcome) -> None:
        """One snapshot done: what became of it."""


@dataclass
class Item:
    """One snapshot of the undo: what the run did to it, what undo did about it."""

    restoration: Restoration
    outcome: UndoOutcome
    reason: str = ""
    current: State | None = None
    sent: list[PatchText] = field(default_factory=list)
    status: int | None = None

    def document(self) -> UndoItem:
        """The item as undo.json, results.jsonl and ``--format json`` give it."""
        r = self.restoration
        return {
            "projectId": r.project_id,
            "clusterId": r.cluster_id,
            "clusterName": r.cluster_name,
            "snapshotId": r.snapshot_id,
            "action": r.action,
            "before": r.before.document(),
            "written": r.written.document(),
            "current": self.current.document() if self.current is not None else None,
            "outcome": self.outcome,
            "reason": self.reason,
            "sent": self.sent,
            "status": self.status,
            "inDoubt": r.in_doubt,
        }


@dataclass
class UndoResult:
    """What an undo did, for the exit code, the summary and the report; made when it ends."""

    run_id: str
    run_dir: Path
    undo_of: Path
    dry_run: bool
    started: datetime
    items: list[Item] = field(default_factory=list)
    unreadable: int = 0  # journal lines cut short, or not of the journal's model
    reports: list[Path] = field(default_factory=list)
    interrupted: str | None = None  # the signal that stopped the undo (SIGINT, SIGTERM)
    undone_before: list[EarlierUndo] = field(default_factory=list)  # oldest first
    document: UndoDocument = field(init=False)  # undo.json

    def __post_init__(self) -> None:
        self.document = undo_document(self)

    @property
    def counts(self) -> dict[str, int]:
        """Items by outcome."""
        return dict(sorted(Counter[str](item.outcome for item in self.items).items()))

    @property
    def in_doubt(self) -> int:
        """Snapshots whose PATCH the run's journal could not say was applied or not."""
        return sum(1 for item in self.items if item.restoration.in_doubt)

    @property
    def failed(self) -> bool:
        """Something could not be put back, or the API failed: exit 1."""
        return self.unreadable > 0 or any(i.outcome not in SETTLED for i in self.items)

    @property
    def already_undone(self) -> EarlierUndo | None:
        """The undo before this one that took the run back, when this one found nothing
        left to do (already_undone)."""
        outcomes = [item.outcome for item in self.items]
        return already_undone(self.undone_before, outcomes, self.unreadable)


def already_undone(
    earlier: Sequence[EarlierUndo], outcomes: Sequence[str], unreadable: int
) -> EarlierUndo | None:
    """The undo in ``earlier`` (oldest first) that put the run's snapshots back, when an
    undo found nothing left to do: every snapshot the run shortened is as before the run
    (``outcomes`` all ``unchanged``) and its journal was read whole. The newest undo that
    put any back, else the newest; None when there is something to do, or no undo before."""
    if not earlier or not outcomes or unreadable:
        return None
    if any(outcome != "unchanged" for outcome in outcomes):
        return None
    did = [undo for undo in earlier if undo["restored"]]
    return (did or earlier)[-1]


def check_run_dir(
    run_dir: Path, base_url: str, *, reports: Path | None = None, url_from: str = BASE_URL_SETTING
) -> None:
    """UsageError (exit 2, nothing sent) unless ``run_dir`` is a run that applied changes
    against the service at ``base_url`` (set by ``url_from``), and not an undo. A plan's or
    a dry run's folder is refused with the folders (beside it, or under ``reports``) whose
    apply used its plan."""
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run folder (give a folder under reports.dir)")
    folder = RunFolder(run_dir)
    if folder.undo.exists():
        raise UsageError(
            f"{run_dir} is an undo: an undo is not undone. To apply the policy again, run "
            "`retention run` (or plan and apply)"
        )
    places = _places(run_dir, reports)
    if not folder.plan.is_file():
        said = f"{run_dir} is {without_plan(folder)}, so there is nothing to undo"
        newest = newest_apply(places)
        if newest is None:
            raise UsageError(said)
        raise UsageError(
            f"{said}. The newest run folder that applied changes:\n"
            f"  retention undo {shlex.quote(str(newest))}"
        )
    if (what := unapplied(folder)) is not None:
        raise UsageError(_not_an_apply(run_dir, what, applies_of(folder, places), places))
    head = open_plan(folder.plan).head
    if head["baseUrl"].rstrip("/") != base_url.rstrip("/"):
        raise UsageError(
            f"{run_dir} was a run against {head['baseUrl']}, not {base_url} (from {url_from}): "
            "undo it with the configuration of that service"
        )


def _places(run_dir: Path, reports: Path | None) -> list[Path]:
    """The reports folders where the runs related to ``run_dir`` are: beside it, and
    ``reports`` (reports.dir) when that is elsewhere."""
    places = [run_dir.parent]
    if reports is not None and reports.resolve() != run_dir.parent.resolve():
        places.append(reports)
    return places


def _not_an_apply(run_dir: Path, what: str, applies: list[Path], places: list[Path]) -> str:
    """Why a plan's folder has nothing to undo, and the applies of its plan to undo instead."""
    said = f"{run_dir} is {what}, not an apply: nothing was sent from it, so it has nothing to undo"
    if not applies:
        where = " or ".join(str(place) for place in places)
        return (
            f"{said}. No run folder in {where} applied this plan (an apply copies the plan "
            "into a folder of its own, with the journal undo reads)"
        )
    commands = "\n".join(f"  retention undo {shlex.quote(str(path))}" for path in applies)
    which = "this apply" if len(applies) == 1 else f"these {len(applies)} applies"
    return f"{said}. To take back what {which} of its plan changed:\n{commands}"


def undo_run(  # noqa: PLR0913 - the run undone and where, how, who hears it go, its record
    client: OpsManagerClient,
    run_dir: Path,
    *,
    reports: Path,
    dry_run: bool,
    concurrency: int,
    clock: Clock,
    listener: Listener | None = None,
    ledger: RecordedUndo | None = None,
) -> UndoResult:
    """Put back what the run in ``run_dir`` shortened, in a new run folder under ``reports``.

    Raises UsageError before any request for a folder that is no run to undo; an API that
    cannot be reached (ApiError.stops_everything) is raised; any other API error is the
    item's ``failed`` outcome. After the client's stop is requested no restore starts: the
    items left are ``not-sent`` and the result's ``interrupted`` names the signal.
    """
    stop = client.stop or Stop()
    check_run_dir(run_dir, client.base_url, reports=reports, url_from=client.base_url_setting)
    undone = RunFolder(run_dir).results
    lines, bad = read_apply_journal(undone)
    before = undos_of(run_dir, _places(run_dir, reports))
    started = clock()
    folder = RunFolder.new(reports, started)
    folder.path.mkdir(parents=True)
    if bad:
        log.warning("%s: %s unreadable, not undone", undone, counted(bad, "journal line"))
    journal = JournalFile(folder.results)

    def intent(r: Restoration, bodies: list[PatchText]) -> None:
        journal.append(_intent(format_timestamp(clock()), r, bodies))

    def work(r: Restoration) -> Item:
        item = _undo_one(client, r, dry_run=dry_run, clock=clock, stop=stop, intent=intent)
        # Journalled as it ends, by the worker: not after the items before it in order.
        journal.append({"at": format_timestamp(clock()), **item.document()})
        if listener is not None:
            listener.undone(item.outcome)
        return item

    items: list[Item] = []
    found = restorations(lines)
    if listener is not None:
        listener.undo(len(found))
    if ledger is not None:
        ledger.begin(folder.run_id, started)
        if not dry_run:
            ledger.intend(found)
    try:
        items.extend(ordered(work, found, workers=concurrency, name="undo"))
    except BaseException:
        journal.close()
        _forget_if_empty(folder)
        raise
    finally:
        if ledger is not None and not dry_run:
            ledger.done([(i.restoration, i.outcome, i.status) for i in items])
    journal.close()
    where = Path(os.path.abspath(run_dir))  # the folder undone, whatever the working folder
    result = UndoResult(
        folder.run_id,
        folder.path,
        where,
        dry_run,
        started,
        items,
        unreadable=bad,
        interrupted=stop.name if stop.requested else None,
        undone_before=before,
    )
    folder.write_undo(result.document)
    return result


def _forget_if_empty(folder: RunFolder) -> None:
    """Remove the folder of an undo that failed before its journal had a line (the API
    unreachable, the key refused): it read and sent nothing, and an empty folder would read
    as a run to the next `retention undo "$(ls -d reports/*/ | tail -1)"`. A journal with
    lines stays, to say what was sent."""
    try:
        if folder.results.stat().st_size == 0:
            folder.results.unlink()
            folder.path.rmdir()
    except OSError:
        pass  # gone already, or something more in it: left as it is


def _undo_one(
    client: OpsManagerClient,
    r: Restoration,
    *,
    dry_run: bool,
    clock: Clock,
    stop: Stop,
    intent: Callable[[Restoration, list[PatchText]], None],
) -> Item:
    try:
        stop.check("reading the snapshot")
        current = _state(client, r)
    except StopRequestedError as exc:
        return Item(r, "not-sent", _stopped(exc.signal_name))
    except ApiError as exc:
        if exc.stops_everything:
            raise
        return Item(r, "failed", f"cannot read the snapshot: {exc}", status=exc.status)
    found = verdict(r, current, clock())
    if found != "restore":
        return Item(r, found, LEFT_ALONE[found], current)
    if dry_run:
        return Item(r, "would-restore", f"would put back: {r.before.text()}", current)
    return _restore(
        client, Item(r, "restored", f"put back: {r.before.text()}", current), stop, intent
    )


def _restore(
    client: OpsManagerClient,
    item: Item,
    stop: Stop,
    intent: Callable[[Restoration, list[PatchText]], None],
) -> Item:
    """Send the PATCHes that put ``item`` back, journalled ahead; the item as it ends."""
    r = item.restoration
    if stop.requested:
        item.outcome, item.reason = "not-sent", _stopped(stop.name)
        return item
    steps = r.steps()
    intent(r, [patch.as_text() for patch in steps])
    for patch in steps:
        body = patch.as_text()
        try:
            # The first PATCH is sent: the second finishes the change even after a stop.
            with stop.shield() if item.sent else nullcontext():
                answer = client.patch_snapshot(r.project_id, r.cluster_id, r.snapshot_id, patch)
        except StopRequestedError as exc:
            item.outcome, item.reason = "not-sent", _stopped(exc.signal_name)
            if exc.in_doubt:
                item.outcome = "failed"
                item.reason = f"PATCH {json_text(body)}: {exc}; the service may have applied it"
            return item
        except ApiError as exc:
            if exc.stops_everything:
                raise
            item.outcome, item.status = "failed", exc.status
            done = " after the first of two steps" if item.sent else ""
            item.reason = f"PATCH {json_text(body)} failed{done}: {exc}"
            return item
        item.sent.append(body)
        item.current = State.of(answer)
    return item


def _state(client: OpsManagerClient, r: Restoration) -> State | None:
    try:
        return State.of(client.get_snapshot(r.project_id, r.cluster_id, r.snapshot_id))
    except NotFoundError:
        return None


def _stopped(signal_name: str) -> str:
    return f"not put back: the undo was stopped ({signal_name})"


def _intent(at: str, r: Restoration, bodies: list[PatchText]) -> UndoIntent:
    """The write-ahead line of a restore: what is about to be sent, before it is."""
    return {
        "at": at,
        "intent": True,
        "projectId": r.project_id,
        "clusterId": r.cluster_id,
        "clusterName": r.cluster_name,
        "snapshotId": r.snapshot_id,
        "before": r.before.document(),
        "written": r.written.document(),
        "steps": bodies,
    }


def undo_document(result: UndoResult) -> UndoDocument:
    """undo.json: which run was undone, when, and every item."""
    return {
        "format": UNDO_FORMAT,
        "runId": result.run_id,
        "undoOf": str(result.undo_of),
        "createdAt": format_timestamp(result.started),
        "dryRun": result.dry_run,
        "counts": result.counts,
        "unreadableLines": result.unreadable,
        "inDoubt": result.in_doubt,
        "interrupted": result.interrupted,
        "undoneBefore": result.undone_before,
        "items": [item.document() for item in result.items],
    }
