"""The notice of a run names the clusters a person has to look at, so it can be acted on
from a chat window: those held (with why), those with the most changes and those with
errors, ten of each, then how many more."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from retention.core.planfile import HoldEntry, PlanHead
from retention.notices.send import run_notice
from retention.report.model import Calendar, ClusterRow, Outcomes
from retention.report.summarize import summarize
from retention.report.summary import ACTIONS, NOT_SENT, PlanSummary, RunInfo
from tests.support.reportpage import bullets
from tests.support.simfleet import NOW, P


def notice_of(rows: Sequence[ClusterRow], outcomes: Outcomes) -> str:
    """The body of the notice of a run (exit 1) whose plan has ``rows``."""
    head: PlanHead = {  # type: ignore[typeddict-item] # the head's parts a summary reads
        "evaluatedAt": NOW,
        "createdAt": NOW,
        "baseUrl": "https://om.example/api/public/v1.0",
        "leaseSeconds": 3600.0,
        "summary": {
            "clusters": len(rows),
            "snapshots": sum(r.snapshots for r in rows),
            "byState": {},
            "byAction": {a: sum(r.by_action.get(a, 0) for r in rows) for a in ("shorten", "held")},
            "clustersHeld": sum(bool(r.holds) for r in rows),
            "clustersWithErrors": sum(bool(r.errors) for r in rows),
            "clustersUnmanaged": 0,
            "bytesGivenBack": 0,
            "bytesHeld": 0,
            "expiresFrom": None,
        },
    }
    run = RunInfo("1a2b3c4d", "run", NOW, NOW + timedelta(seconds=12.4), 1, "0.1.0")
    summary = summarize(
        run,
        PlanSummary.of(head),
        outcomes=outcomes,
        clusters=rows,
        calendar=Calendar(days=[]),
        hold_records=[],
        bytes_applied=0,
    )
    notice = run_notice(
        mode="run",
        run_id="1a2b3c4d",
        code=1,
        why={"holds", "failure"},
        summary=summary,
        run_dir=Path("/reports/run"),
    )
    return notice.body


def row(name: str, *, shorten: int = 0, held: int = 0, error: str | None = None) -> ClusterRow:
    """A cluster of the plan: its shortens, its held changes (held by the fraction gate) and
    an error of its walk."""
    holds: list[HoldEntry] = (
        [
            {
                "kind": "max_expire_fraction",
                "reason": f"{held} of {held + 1} would expire",
                "alertId": None,
            }
        ]
        if held
        else []
    )
    by_action = dict.fromkeys((*ACTIONS, *NOT_SENT), 0) | {"shorten": shorten, "held": held}
    return ClusterRow(
        project_id=P,
        cluster_id=hashlib.sha256(name.encode()).hexdigest()[:24],
        name=name,
        kind="cluster",
        snapshots=held + shorten + 1,
        by_action=by_action,
        policies=["prod"],
        holds=holds,
        errors=[error] if error else [],
    )


def test_the_notice_names_the_clusters_held_changed_and_failed_ten_of_each() -> None:
    """The notice names the clusters held (with the reason), those with the most changes
    (the most first) and those with errors, ten of each, then counts the rest."""
    held = [row(f"held-{i:02d}", held=i + 1) for i in range(12)]
    busy = [row(f"busy-{i:02d}", shorten=100 - i) for i in range(12)]
    broken = [row(f"broken-{i:02d}", error=f"cannot list snapshots ({i})") for i in range(13)]
    patchy = row("patchy", shorten=1)
    patchy.failed = 1
    outcomes = Outcomes(failed_total=1)
    outcomes.failures.append(
        {
            "projectId": P,
            "clusterId": patchy.cluster_id,
            "snapshotId": "s1",
            "action": "shorten",
            "outcome": "failed",
            "status": 500,
            "error": "HTTP 500",
        }
    )

    body = notice_of([patchy, *held, *busy, *broken], outcomes)

    lines = body.splitlines()
    held_lines = bullets(body, "- Held by a safety gate, not sent:")
    assert held_lines[0] == "- Held by a safety gate, not sent: 78 changes of 12 clusters (0 B):"
    assert held_lines[1] == r"  - held-00, 1 held: max\_expire\_fraction: 1 of 2 would expire"
    assert held_lines[10] == r"  - held-09, 10 held: max\_expire\_fraction: 10 of 11 would expire"
    assert held_lines[11] == "  - and 2 more held clusters"
    assert len(held_lines) == 12
    [most] = [line for line in lines if line.startswith("- Most changes: ")]
    named = re.findall(r"(busy-\d\d) \((\d+) shorten\)", most)
    assert named == [(f"busy-{i:02d}", str(100 - i)) for i in range(10)]
    assert most.endswith(", and 3 more clusters.")  # the other two busy ones, and patchy
    failed = bullets(body, "- With errors:")
    assert failed[0] == "- With errors: 14 clusters:"
    assert failed[1] == "  - patchy: shorten of s1 failed (500): HTTP 500"
    assert failed[2] == "  - broken-00: cannot list snapshots (0)"
    assert failed[11] == "  - and 4 more clusters with errors"
    assert len(failed) == 12
