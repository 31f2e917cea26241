"""report.html and report.md of an undo, from its undo.json document: what was put back,
and what was left alone and why, per cluster and per snapshot, and the undos of the same
run before it. Written as the run's reports are (render.write_reports)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from retention.core.restore import SETTLED, State
from retention.core.runfiles import UndoDocument, UndoItem, UndoOutcome
from retention.core.snapshot import StateText
from retention.report.render import write_reports
from retention.report.summary import RunInfo
from retention.undo.restoring import already_undone

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
# report.md lists the snapshots of an outcome only when they all fit (a chat message): past
# this, the counts per cluster stand for them, and report.html and undo.json list them all.
MD_LISTED = 20


@dataclass(frozen=True)
class ClusterCounts:
    """One cluster's snapshots of an undo by outcome (a row of "By cluster")."""

    name: str
    cluster_id: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        """Every snapshot of the cluster the undone run shortened."""
        return sum(self.counts.values())


def by_cluster(items: Sequence[UndoItem]) -> list[ClusterCounts]:
    """The undo's items counted by outcome per cluster, by cluster name (then id)."""
    counted: dict[tuple[str, str], Counter[str]] = {}
    names: dict[tuple[str, str], str] = {}
    for item in items:
        key = (item["projectId"], item["clusterId"])
        counted.setdefault(key, Counter())[item["outcome"]] += 1
        names[key] = item["clusterName"]
    rows = [ClusterCounts(names[key], key[1], dict(n)) for key, n in counted.items()]
    return sorted(rows, key=lambda row: (row.name, row.cluster_id))


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
    present = [item["outcome"] for item in document["items"]]
    earlier = document.get("undoneBefore", [])
    return write_reports(
        run_dir,
        formats,
        UNDO_TEMPLATES,
        undo=document,
        items=items,
        run=run,
        settled=SETTLED,
        clusters=by_cluster(document["items"]),
        outcomes=[outcome for outcome in ORDER if outcome in present],
        earlier=earlier,
        already_by=already_undone(earlier, present, document["unreadableLines"]),
        md_listed=MD_LISTED,
    )


def state_text(state: StateText | None) -> str:
    """A snapshot state of undo.json in words ("gone" when there is none)."""
    return "gone" if state is None else State.from_document(state).text()
