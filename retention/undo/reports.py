"""report.html and report.md of an undo, from its undo.json document: what was put back,
and what was left alone and why. Written as the run's reports are (render.write_reports)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from retention.core.restore import SETTLED, State
from retention.core.runfiles import UndoDocument, UndoOutcome
from retention.core.snapshot import StateText
from retention.report.render import write_reports
from retention.report.summary import RunInfo

# Outcomes in the order the report lists them: what needs a look first.
ORDER: tuple[UndoOutcome, ...] = (
    "failed",
    "not-sent",
    "stale",
    "gone",
    "expired",
    "lapsed",
    "protected",
    "restored",
    "would-restore",
    "unchanged",
)
UNDO_TEMPLATES = {"html": "undo.html.j2", "markdown": "undo.md.j2"}


def render_undo_reports(
    run_dir: Path,
    document: UndoDocument,
    run: RunInfo,
    formats: Sequence[str] = ("html", "markdown"),
) -> list[Path]:
    """Write report.html and/or report.md of the undo in ``run_dir`` from its undo.json
    ``document``; return the paths."""
    items = [
        {
            **item,
            "beforeText": state_text(item["before"]),
            "writtenText": state_text(item["written"]),
            "currentText": state_text(item["current"]),
        }
        for item in sorted(
            document["items"], key=lambda i: (ORDER.index(i["outcome"]), i["clusterName"])
        )
    ]
    return write_reports(
        run_dir, formats, UNDO_TEMPLATES, undo=document, items=items, run=run, settled=SETTLED
    )


def state_text(state: StateText | None) -> str:
    """A snapshot state of undo.json in words ("gone" when there is none)."""
    return "gone" if state is None else State.from_document(state).text()
