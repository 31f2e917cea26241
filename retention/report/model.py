"""What a report shows, as plain data: the run's summary, per-cluster and per-policy rows,
the expiry calendar, the outcomes of the PATCHes and the timelines to draw.

The templates only lay these out; every count is computed here (in ``read.collect``), so
the HTML and the Markdown can never disagree about a number. Timestamps stay datetimes
until a template formats them (render.py's ``timestamp`` and ``minutes`` filters).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal

from retention.core.approving import cut_words, is_long_cut
from retention.core.guard import APPROVABLE
from retention.core.planfile import Body, ClusterEntry, HoldEntry, MemberEntry
from retention.report.heldview import HeldView
from retention.report.holdrecords import HoldRecordRow
from retention.report.ladder import LadderLine
from retention.report.summary import ACTIONS, NOT_SENT, RunInfo, RunSummary


def _member(member: MemberEntry) -> str:
    """A member row in words: "shard sh0 (5e4e...)" or "config servers cfg-rs (5e4e...)"."""
    if member.get("shardName"):
        what = f"shard {member['shardName']}"
    elif str(member.get("typeName") or "").startswith("CONFIG"):
        what = f"config servers {member.get('replicaSetName') or ''}".rstrip()
    else:
        what = str(member.get("typeName") or "member")
    return f"{what} ({member['clusterId']})"


@dataclass
class ClusterRow:
    """One cluster or config server of the plan, with its counts and problems."""

    project_id: str
    cluster_id: str
    name: str
    kind: str
    snapshots: int
    by_action: dict[str, int]  # every key of ACTIONS and NOT_SENT, zero when absent
    policies: list[str]
    holds: list[HoldEntry]
    errors: list[str]
    # A sharded cluster's shards and config-server replica set, listed not walked.
    members: list[str] = field(default_factory=list)
    bytes_given_back: int = 0  # the storage its sent destructive changes free
    bytes_held: int = 0  # the storage its held destructive changes would free
    project_name: str | None = None  # from GET /groups/{id}, when it answered
    # What became of its held changes an --approve let through, by outcome (results.jsonl);
    # empty when this run approved nothing of it.
    approval: Counter[str] = field(default_factory=Counter)
    failed: int = 0  # PATCHes of this cluster that failed (results.jsonl)
    anchor: str | None = None  # the id of its timeline, when one is drawn
    ladder: LadderLine | None = None  # its restore points; None when the plan has none
    held_view: HeldView | None = None  # what approving its held changes costs

    @classmethod
    def of(cls, cluster: ClusterEntry) -> ClusterRow:
        """The row of a plan.json cluster entry."""
        counts = cluster["counts"]
        return cls(
            project_id=cluster["projectId"],
            cluster_id=cluster["clusterId"],
            name=cluster["name"],
            kind=cluster["kind"],
            snapshots=counts.get("snapshots", 0),
            by_action={a: counts.get(f"action:{a}", 0) for a in (*ACTIONS, *NOT_SENT)},
            policies=list(cluster["policies"]),
            holds=list(cluster["holds"]),
            errors=list(cluster["errors"]),
            members=[_member(m) for m in cluster.get("members", [])],
            bytes_given_back=cluster.get("bytesGivenBack", 0),
            bytes_held=cluster.get("bytesHeld", 0),
            ladder=LadderLine.of(points) if (points := cluster.get("restorePoints")) else None,
            held_view=HeldView.of(cluster),
        )

    def approve(self, tally: ApprovedTally) -> None:
        """This run sent its held changes (an --approve): they count under their actions,
        and what they free as given back."""
        self.approval = Counter(tally.outcomes)
        moved = sum(tally.actions.values())
        self.by_action["held"] = max(0, self.by_action["held"] - moved)
        for action, count in tally.actions.items():
            self.by_action[action] = self.by_action.get(action, 0) + count
        self.bytes_given_back += self.bytes_held
        self.bytes_held = 0

    @property
    def held_now(self) -> bool:
        """A gate holds it and this run did not let its held changes through."""
        return bool(self.holds) and not self.approval

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the cluster across plan.json, decisions.jsonl.zst and results.jsonl."""
        return (self.project_id, self.cluster_id)

    @property
    def changes(self) -> int:
        """Every decision that is not "none": sent, held or advisory."""
        return sum(self.by_action.values())

    @property
    def problems(self) -> int:
        """Cluster errors and failed PATCHes."""
        return len(self.errors) + self.failed


@dataclass
class PolicyRow:
    """One policy: which clusters it matched and the changes attributed to it."""

    name: str
    sha256: str
    clusters: list[str] = field(default_factory=list)
    changes: Counter[str] = field(default_factory=Counter)


@dataclass
class CalendarDay:
    """The snapshots whose resulting expiry falls on one UTC day of the window."""

    day: date  # a UTC day
    planned: int = 0  # expiries this plan sets (or this run set)
    existing: int = 0  # expiries the snapshots already had and keep

    @property
    def count(self) -> int:
        """Every expiry of the day."""
        return self.planned + self.existing


@dataclass
class ClusterExpiries:
    """One cluster's expiries in the calendar's window, by who set them."""

    name: str
    project_id: str
    project_name: str | None = None
    planned_week: int = 0
    planned_month: int = 0
    existing_week: int = 0
    existing_month: int = 0
    first_at: float = math.inf  # the first expiry in the window, in POSIX seconds

    @property
    def first(self) -> datetime:
        """The first expiry in the window."""
        return datetime.fromtimestamp(self.first_at, UTC)

    @property
    def month(self) -> int:
        """Every expiry of the cluster in 30 days."""
        return self.planned_month + self.existing_month


@dataclass
class Calendar:
    """What will be deleted in the 7 and the 30 days after the plan's evaluatedAt, told
    apart: expiries this plan sets, and expiries the snapshots already had."""

    days: list[CalendarDay]  # every UTC day the 30-day window touches, in order
    clusters: dict[tuple[str, str], ClusterExpiries] = field(default_factory=dict)
    awaiting_deletion: int = 0  # already past their expiry: the service deletes them anyway
    as_planned: bool = True  # False: results.jsonl said which changes really happened
    chart: CalendarChart | None = None

    def total(self, window: str, source: str = "") -> int:
        """Expiries in "week" or "month", of one source ("planned", "existing") or both."""
        sources = (source,) if source else ("planned", "existing")
        return sum(getattr(c, f"{s}_{window}") for c in self.clusters.values() for s in sources)

    def clusters_in(self, window: str) -> int:
        """How many clusters have an expiry in "week" or "month"."""
        return sum(
            1
            for c in self.clusters.values()
            if getattr(c, f"planned_{window}") or getattr(c, f"existing_{window}")
        )

    def busiest(self, limit: int) -> list[ClusterExpiries]:
        """The clusters with the most expiries in 30 days, most first, ties by name."""
        ranked = sorted(self.clusters.values(), key=lambda c: (-c.month, c.name, c.project_id))
        return ranked[:limit]


@dataclass(frozen=True)
class Bar:
    """One day of the calendar chart: a stacked bar, this plan's part at the bottom."""

    x: float
    width: float
    planned_y: float
    planned_height: float
    existing_y: float
    existing_height: float
    title: str


@dataclass(frozen=True)
class CalendarChart:
    """The geometry of the expiry calendar's bar chart; the template only draws it."""

    width: int
    height: int
    plot_left: float
    plot_right: float
    plot_top: float
    base_y: float
    bars: list[Bar]
    y_ticks: list[Tick]  # x holds the y coordinate: one label per gridline
    days: list[Tick]  # day-of-month labels under the bars
    months: list[Tick]  # month names under the first day and each first of a month
    week_x: float  # where the first 7 days end


@dataclass
class ApprovedTally:
    """The held changes of one cluster an apply's --approve let through: what became of
    them, and their actions (results.jsonl's lines marked approved)."""

    outcomes: Counter[str] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)


@dataclass
class Outcomes:
    """What results.jsonl says happened to the PATCHes."""

    counts: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)  # the first few, for the table
    failed_total: int = 0
    failed_by_cluster: Counter[tuple[str, str]] = field(default_factory=Counter)
    # The clusters whose held changes an apply's --approve let through, by (project, id).
    approved: dict[tuple[str, str], ApprovedTally] = field(default_factory=dict)
    # Destructive changes the service applied, and the earliest expiry among those sent:
    # from then on it may delete what this run expired.
    expired: int = 0
    expires_from: datetime | None = None
    # (clusterId, snapshotId) of changes whose last outcome was neither "applied" nor
    # "unchanged": their snapshots keep the expiry they had, which the calendar needs.
    not_applied: set[tuple[str, str]] = field(default_factory=set)
    # (clusterId, snapshotId) of changes whose last outcome was "unchanged": an earlier
    # apply (or someone) set what they write, so this run neither set nor gave back anything.
    unchanged: set[tuple[str, str]] = field(default_factory=set)
    unreadable: int = 0
    # PATCHes sent that no answer says were applied (plan.restore.in_doubt): an intent
    # with no outcome after it (the run was killed while it was on the wire), or failed.
    in_doubt: int = 0


@dataclass(frozen=True)
class Segment:
    """The part of a column one category takes: its top and height."""

    y: float
    height: float
    category: str  # keep | expire | held | other


@dataclass(frozen=True)
class Column:
    """The snapshots that fall in one bin of a lane, stacked by category, with a tooltip
    that counts them (and names them when there are few)."""

    x: float
    width: float
    count: int
    segments: list[Segment]
    title: str


@dataclass(frozen=True)
class Lane:
    """A row of a timeline: snapshots by creation time, or new expiries by their date."""

    label: str
    top: float
    base: float
    peak: int  # the count of the fullest bin: the lane's scale
    columns: list[Column]


@dataclass(frozen=True)
class Link:
    """A change's line from its snapshot to its new expiry (``beyond``: past the right edge)."""

    x1: float
    y1: float
    x2: float
    y2: float
    category: str
    beyond: bool


@dataclass(frozen=True)
class Beyond:
    """New expiries later than the axis reaches (or never: protect), counted at the right."""

    y: float
    count: int
    category: str
    label: str


@dataclass(frozen=True)
class Tick:
    """A label on an axis at ``x`` (a y coordinate for a vertical axis)."""

    x: float
    label: str


@dataclass(frozen=True)
class Timeline:
    """The geometry of one cluster's SVG timeline; the template only draws it."""

    cluster: ClusterRow
    width: int
    height: int
    axis_y: float
    now_x: float
    now_anchor: str  # "start" or "end": the "now" label stays inside the picture
    plot_left: float
    plot_right: float
    bin_span: str  # how much time one column covers, in words
    taken: Lane
    expiry: Lane
    links: list[Link]  # drawn only while few enough to follow
    beyond: list[Beyond]
    ticks: list[Tick]


# An expiry as a change table shows it: an instant, never deleted, or none.
Expiry = datetime | Literal["doNotDelete", "no expiry"]


@dataclass(frozen=True)
class ChangeRow:
    """One change of the plan as a reviewer reads it: what happens to which snapshot, from
    when the service may delete it, and why."""

    cluster: str
    cluster_id: str
    snapshot_id: str
    created: datetime
    action: str
    before: Expiry
    after: Expiry
    delete_from: datetime | None  # when the service may delete it; None: the change keeps it
    size: int | None
    reasons: list[str]  # in words, the one that decided the change first
    held: str | None  # the hold that stops it, or None when it is sent
    cut_seconds: int | None = None  # what it takes off the existing expiry

    @property
    def long_cut(self) -> str | None:
        """ "cut by 306 days" for a change that cuts an existing expiry by LONG_CUT or more;
        else None."""
        cut = self.cut_seconds
        return cut_words(cut) if cut is not None and is_long_cut(cut) else None


@dataclass(frozen=True)
class AdvisoryRow:
    """A config-server decision that has no PATCH endpoint: what it would write, and why."""

    cluster: str
    snapshot_id: str
    action: str
    body: Body  # what it would write
    expires: datetime | None  # the expiry the snapshot has
    do_not_delete: bool
    reasons: list[str]  # in words, the one that decided first


@dataclass
class ReportData:
    """Everything the templates show."""

    run: RunInfo
    summary: RunSummary
    clusters: list[ClusterRow]
    changed: list[ClusterRow]  # most changes first, ties by name
    unchanged: list[ClusterRow]
    policies: list[PolicyRow]
    calendar: Calendar
    timelines: list[Timeline]
    outcomes: Outcomes | None  # None: no results.jsonl
    problems: list[str]  # reading problems (unreadable lines, missing files)
    advisory: list[AdvisoryRow]  # the first few advisory decisions
    changes: list[ChangeRow] = field(default_factory=list)  # the first MAX_CHANGE_ROWS
    # The hold records of the policies that matched: ended first, then by end.
    hold_records: list[HoldRecordRow] = field(default_factory=list)

    @property
    def more_changed(self) -> int:
        """Changed clusters without a drawn timeline."""
        return len(self.changed) - len(self.timelines)

    @property
    def held(self) -> list[ClusterRow]:
        """The clusters a gate still holds after this run: one row each, whatever the
        number of holds (a cluster's held changes are counted once, not once per hold).
        Those --approve can let through come first, in plan order: they are the decision
        the page is read for; then those an alert or a failed walk holds. A cluster an
        --approve let through is not among them."""
        held = [c for c in self.clusters if c.held_now]
        return sorted(held, key=lambda c: any(h["kind"] not in APPROVABLE for h in c.holds))

    @property
    def unmanaged(self) -> list[ClusterRow]:
        """Clusters and config servers no policy matches: never changed."""
        return [c for c in self.clusters if not c.policies]

    def error_lines(self, limit: int) -> list[str]:
        """The first ``limit`` errors as one line each: plan, reading, cluster, failed PATCH."""
        lines = [*self.summary.plan.errors, *self.problems]
        lines += [f"{c.name}: {e}" for c in self.clusters for e in c.errors]
        if self.outcomes is not None:
            for f in self.outcomes.failures[: max(0, limit - len(lines))]:
                status = f.get("status") if f.get("status") is not None else "no answer"
                lines.append(
                    f"{f.get('clusterName') or f.get('clusterId')} {f.get('snapshotId')}: "
                    f"{f.get('action')} failed ({status}): {f.get('error') or ''}"
                )
        return lines[:limit]

    @property
    def error_total(self) -> int:
        """Every error: plan, reading, cluster, failed PATCH."""
        failed = self.outcomes.failed_total if self.outcomes is not None else 0
        cluster = sum(len(c.errors) for c in self.clusters)
        return len(self.summary.plan.errors) + len(self.problems) + cluster + failed
