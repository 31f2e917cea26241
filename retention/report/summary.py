"""What a run comes to, as data: one ``RunSummary``, built once from the run folder (by
``read.collect``), which report.md, report.html and the notice each render.

``PlanSummary`` is the plan's part: its counts per action and per state, what it gives back
and from when, its notes and errors. The terminal summary renders it too (cli/summary.py),
``retention plan`` included, since a plan has no run. ``RunSummary`` adds the run (its mode,
exit code and the signal that stopped it), the outcomes of its PATCHes, the clusters it
changed and what will expire.

Each output lays the same values out in its own words: the terminal in cli/summary.py,
Markdown in templates/summary.md.j2 (report.md's head and the notice's body, one template
so the two cannot drift apart), HTML in the Summary section of templates/report.html.j2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from retention.core.model import CHANGE_ACTIONS
from retention.core.timestamps import parse_timestamp
from retention.errors import SIGNAL_EXITS

if TYPE_CHECKING:
    from retention.core.planfile import PlanHead

# The actions that send a PATCH, in the order tables show them (docs/glossary.md, Actions).
ACTIONS = CHANGE_ACTIONS
# Counted apart from the actions: destructive changes a safety gate held, and config-server
# decisions that have no PATCH endpoint.
NOT_SENT = ("held", "advisory")
OUTCOMES = ("applied", "unchanged", "stale", "refused", "failed", "held", "not-sent")


@dataclass(frozen=True)
class RunInfo:
    """The run a report belongs to: what the CLI knows and the plan file does not."""

    run_id: str
    mode: str  # "run", "dry-run", "apply" or "plan"
    started_at: datetime  # aware UTC
    finished_at: datetime
    exit_code: int | None
    version: str  # retention's version

    @property
    def dry_run(self) -> bool:
        """True for the modes that never send a PATCH."""
        return self.mode in ("dry-run", "plan")

    @property
    def stopped_by(self) -> str | None:
        """The signal that stopped the run before the end (SIGINT, SIGTERM), or None."""
        return next((name for name, code in SIGNAL_EXITS.items() if code == self.exit_code), None)

    @property
    def duration(self) -> str:
        """The run's duration, e.g. "2m 05s"."""
        seconds = max(0, round((self.finished_at - self.started_at).total_seconds()))
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        if hours:
            return f"{hours}h {minutes:02d}m {secs:02d}s"
        if minutes:
            return f"{minutes}m {secs:02d}s"
        return f"{secs}s"


def _instant(value: object) -> datetime | None:
    """A timestamp of the plan: a plan read through its model holds datetimes, one loaded
    as plain JSON (``json.loads``, which the terminal summary also takes) holds text."""
    if value is None or isinstance(value, datetime):
        return value
    return parse_timestamp(str(value))


def _required(value: object) -> datetime:
    instant = _instant(value)
    if instant is None:
        raise ValueError("a plan's evaluatedAt and createdAt are never null")
    return instant


@dataclass(frozen=True)
class PlanSummary:
    """What a plan says in all: where and when it was made, its counts, what it gives back
    and from when, and its notes, errors and warnings."""

    evaluated_at: datetime
    created_at: datetime
    base_url: str
    service_version: str | None
    what_if: bool
    lease_seconds: float
    by_action: Mapping[str, int]  # the actions, "held" and "advisory"; absent means 0
    by_state: Mapping[str, int]
    clusters: int
    snapshots: int
    clusters_held: int
    bytes_given_back: int
    bytes_held: int
    expires_from: datetime | None  # the earliest a snapshot this plan expires may go
    notices: tuple[str, ...]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    unused_policies: tuple[str, ...]  # policies that matched no cluster or config server

    @classmethod
    def of(cls, head: PlanHead) -> PlanSummary:
        """The summary of a plan's head (or of the whole plan document)."""
        summary = head["summary"]
        return cls(
            evaluated_at=_required(head["evaluatedAt"]),
            created_at=_required(head["createdAt"]),
            base_url=head["baseUrl"],
            service_version=head.get("serviceVersion"),
            what_if=bool(head.get("whatIf")),
            lease_seconds=head["leaseSeconds"],
            by_action=dict(summary["byAction"]),
            by_state=dict(summary["byState"]),
            clusters=summary["clusters"],
            snapshots=summary["snapshots"],
            clusters_held=summary["clustersHeld"],
            bytes_given_back=summary["bytesGivenBack"],
            bytes_held=summary.get("bytesHeld", 0),
            expires_from=_instant(summary.get("expiresFrom")),
            notices=tuple(head.get("notices", [])),
            errors=tuple(head.get("errors", [])),
            warnings=tuple(head.get("warnings", [])),
            unused_policies=tuple(head.get("unusedPolicies", [])),
        )

    def count(self, action: str) -> int:
        """How many decisions have this action (or are held, or advisory)."""
        return self.by_action.get(action, 0)

    @property
    def expiring(self) -> int:
        """Snapshots whose expiry the plan brings forward: shortened or deleted."""
        return self.count("shorten") + self.count("delete")

    @property
    def changes(self) -> int:
        """Changes the plan sends or a gate holds (advisory ones have no PATCH)."""
        return sum(n for action, n in self.by_action.items() if action != "advisory")


@dataclass(frozen=True)
class OutcomeTotals:
    """What results.jsonl says became of the run's PATCHes, in all."""

    counts: Mapping[str, int]  # by outcome; absent means 0
    # Sent, and no answer says the service applied them (core.restore.in_doubt).
    in_doubt: int

    def count(self, outcome: str) -> int:
        """How many PATCHes ended with this outcome."""
        return self.counts.get(outcome, 0)


@dataclass(frozen=True)
class Expiring:
    """How many snapshots expire in the 7 and the 30 days after the plan's evaluatedAt, and
    how many of those expiries this plan set."""

    week: int
    week_planned: int
    month: int
    month_planned: int
    as_planned: bool  # counted as if the plan is applied (no results.jsonl)


@dataclass(frozen=True)
class RunSummary:
    """What a run comes to: its plan's summary, what became of its PATCHes, how many
    clusters it changed, held or failed, and what will expire."""

    run: RunInfo
    plan: PlanSummary
    outcomes: OutcomeTotals | None  # None: no results.jsonl
    clusters_changed: int
    clusters_with_problems: int  # with an error or a failed PATCH
    expiring: Expiring
    hold_records_ended: int  # hold records whose end has passed: they protect nothing any more

    @property
    def nothing_changed(self) -> bool:
        """True when this run sent no PATCH: a dry run, or no results.jsonl."""
        return self.run.dry_run or self.outcomes is None
