"""What a run comes to, as data: one ``RunSummary``, built once from the run folder (by
``read.collect``), which report.md, report.html and the notice each render.

``PlanSummary`` is the plan's part: its counts per action and per state, what it gives back
and from when, its notes and errors. The terminal summary renders it too (report/lines.py),
``retention plan`` included, since a plan has no run. ``RunSummary`` adds the run (its mode,
exit code and the signal that stopped it), the outcomes of its PATCHes, the clusters it
changed and what will expire.

Each output lays the same values out in its own words: the terminal in report/lines.py,
Markdown in templates/summary.md.j2 (report.md's head and the notice's body, one template
so the two cannot drift apart), HTML in the Summary section of templates/report.html.j2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from retention.core.approving import LONG_CUT
from retention.core.model import CHANGE_ACTIONS
from retention.core.outside import tally
from retention.core.timestamps import format_timestamp, parse_timestamp
from retention.core.wording import counted
from retention.errors import SIGNAL_EXITS
from retention.runfolder.approvelist import apply_command, approve_hint, approve_names
from retention.runfolder.folder import PLAN

if TYPE_CHECKING:
    from retention.core.planfile import ClusterEntry, HoldEntry, OutsideChangeEntry, PlanHead
    from retention.report.heldview import HeldView

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
    # The head of the ledger's chain once this run was recorded (None: not recorded).
    ledger_head: str | None = None

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
        """The run's duration: "0.8 s" and "12.4 s" under a minute, then "3 min 05 s" and
        "1 h 02 min 05 s"."""
        seconds = max(0.0, (self.finished_at - self.started_at).total_seconds())
        if round(seconds, 1) < 60:
            return f"{seconds:.1f} s"
        hours, rest = divmod(round(seconds), 3600)
        minutes, secs = divmod(rest, 60)
        if hours:
            return f"{hours} h {minutes:02d} min {secs:02d} s"
        return f"{minutes} min {secs:02d} s"


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
class StaleCluster:
    """A cluster whose backups stopped: its newest restorable snapshot is older than
    expected (plan.json's ``newestRestorable``; retention.core.freshness says how)."""

    name: str
    project_id: str
    cluster_id: str
    project_name: str | None
    newest: datetime | None  # None: no restorable snapshot at all
    age_seconds: int | None
    within_seconds: int
    expected_from: str  # policy, cadence or default
    text: str  # "newest restorable snapshot 3 days 2 h old; expected within 13 h (...)"

    @classmethod
    def of(cls, cluster: ClusterEntry, project_name: str | None) -> StaleCluster | None:
        """The cluster as a stale one, or None when its backups are on time (or it is
        not checked: no ``newestRestorable``)."""
        fresh = cluster.get("newestRestorable")
        if fresh is None or not fresh["stale"]:
            return None
        return cls(
            name=cluster["name"],
            project_id=cluster["projectId"],
            cluster_id=cluster["clusterId"],
            project_name=project_name,
            newest=_instant(fresh["newest"]),
            age_seconds=fresh["ageSeconds"],
            within_seconds=fresh["withinSeconds"],
            expected_from=fresh["expectedFrom"],
            text=fresh["text"],
        )

    def document(self) -> dict[str, object]:
        """The cluster in ``--format json`` (``staleBackups``)."""
        return {
            "projectId": self.project_id,
            "clusterId": self.cluster_id,
            "name": self.name,
            "newest": None if self.newest is None else format_timestamp(self.newest),
            "ageSeconds": self.age_seconds,
            "withinSeconds": self.within_seconds,
            "expectedFrom": self.expected_from,
            "text": self.text,
        }


def stale_clusters(head: PlanHead, clusters: Iterable[ClusterEntry]) -> tuple[StaleCluster, ...]:
    """The ``clusters`` of a plan whose backups stopped, in plan order."""
    names = {p["projectId"]: p["name"] for p in head.get("projects", [])}
    found = (StaleCluster.of(c, names.get(c["projectId"])) for c in clusters)
    return tuple(c for c in found if c is not None)


def stale_text(stale: Sequence[StaleCluster], listed: int = 10) -> str:
    """The clusters whose backups stopped in one line: "2 clusters whose backups stopped:
    prod-a (newest restorable snapshot 3 days 2 h old; expected within 13 h (twice its
    cadence)), prod-b (...)", the first ``listed`` named, then "and N more"."""
    count = len(stale)
    named = ", ".join(f"{c.name} ({c.text})" for c in stale[:listed])
    more = f", and {count - listed} more" if count > listed else ""
    return f"{counted(count, 'cluster')} whose backups stopped: {named}{more}"


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
    # Clusters whose newest restorable snapshot is older than expected, in plan order.
    stale: tuple[StaleCluster, ...] = ()
    # Changes (sent or held) that cut an existing expiry by LONG_CUT or more.
    long_cuts: int = 0
    # What changed outside retention since the ledger last looked (outsideChanges), and
    # whether this plan was the ledger's first (None: made without a ledger).
    outside: tuple[OutsideChangeEntry, ...] = ()
    baseline: bool | None = None

    @classmethod
    def of(cls, head: PlanHead, stale: tuple[StaleCluster, ...] = ()) -> PlanSummary:
        """The summary of a plan's head, with its clusters whose backups stopped."""
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
            stale=stale,
            long_cuts=summary.get("longCuts", 0),
            outside=tuple(head.get("outsideChanges", [])),
            baseline=head["ledger"]["baseline"] if "ledger" in head else None,
        )

    def count(self, action: str) -> int:
        """How many decisions have this action (or are held, or advisory)."""
        return self.by_action.get(action, 0)

    @property
    def outside_text(self) -> str | None:
        """The changes made outside retention, counted by kind ("3 changes since the last
        run (2 expiries changed, 1 deleted early)"), or None when there is none."""
        if not self.outside:
            return None
        tallied = tally(self.outside)
        return f"{counted(len(self.outside), 'change')} since the last run ({tallied})"

    @property
    def long_cuts_text(self) -> str | None:
        """The sentence that counts the long cuts, or None when there is none."""
        if not self.long_cuts:
            return None
        return (
            f"{counted(self.long_cuts, 'change')} (sent or held) "
            f"{'cuts' if self.long_cuts == 1 else 'cut'} an expiry the snapshot already has "
            f"by {LONG_CUT.days} days or more"
        )

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
    """What became of the run's changes, in all: results.jsonl's outcomes, and as "held"
    also the destructive changes a safety gate held and no --approve let through (never
    sent, so never journalled)."""

    counts: Mapping[str, int]  # by outcome; absent means 0
    # Sent, and no answer says the service applied them (core.restore.in_doubt).
    in_doubt: int

    def count(self, outcome: str) -> int:
        """How many changes ended with this outcome."""
        return self.counts.get(outcome, 0)


@dataclass(frozen=True)
class Expiring:
    """How many snapshots expire in the 7 and the 30 days after the plan's evaluatedAt, and
    how many of those expiries this plan set (this run, once it applied them)."""

    week: int
    week_planned: int
    month: int
    month_planned: int
    as_planned: bool  # counted as if the plan is applied (no results.jsonl)


@dataclass(frozen=True)
class Deletion:
    """The snapshots whose expiry this run brought forward, so that the service may delete
    them: how many, from when, and the storage they take. A run counts the destructive
    changes the service applied (results.jsonl); a dry run, those its plan would send."""

    count: int
    expires_from: datetime | None  # the earliest expiry among them
    bytes: int | None  # None: unknown (decisions.jsonl.zst could not be read)
    as_planned: bool  # True: the plan's figures, nothing was sent


@dataclass(frozen=True)
class ClusterNote:
    """One cluster a summary names: its name and ids, and its changes by action (the
    actions, "held" while a gate holds them and "advisory")."""

    name: str
    project_id: str
    cluster_id: str
    by_action: Mapping[str, int]

    @property
    def sent(self) -> int:
        """The changes it sends (held and advisory ones are not sent)."""
        return sum(n for action, n in self.by_action.items() if action in ACTIONS)


@dataclass(frozen=True)
class HeldCluster(ClusterNote):
    """A cluster a safety gate still holds after this run, and why."""

    holds: tuple[HoldEntry, ...]
    approvable: bool  # held by max_expire_fraction only: --approve may let it through
    view: HeldView | None = None  # its ladders and held changes, for the person deciding

    @property
    def held(self) -> int:
        """Its destructive changes the gate holds: not sent."""
        return self.by_action.get("held", 0)


@dataclass(frozen=True)
class ApprovedCluster(ClusterNote):
    """A cluster whose held changes this run's --approve let through, and what became of
    them (results.jsonl)."""

    outcomes: Mapping[str, int]

    @property
    def let_through(self) -> int:
        """Its held changes this run took on: sent, or journalled as not sent."""
        return sum(self.outcomes.values())


@dataclass(frozen=True)
class FailedCluster(ClusterNote):
    """A cluster with errors (its walk or checks) or PATCHes that failed or were refused,
    and the first of them in words."""

    errors: int
    failed: int
    first: str


@dataclass(frozen=True)
class RunSummary:
    """What a run comes to: its plan's summary, what became of its changes, the clusters
    it held, let through, changed most and failed on, what the service may delete from
    when, and what will expire.

    ``by_action`` counts what the run did: the plan's decisions, with the held changes an
    --approve let through under their actions. Lists are complete; each output shows the
    first few of each and counts the rest.
    """

    run: RunInfo
    plan: PlanSummary
    outcomes: OutcomeTotals | None  # None: no results.jsonl
    by_action: Mapping[str, int]
    clusters_changed: int
    clusters_with_problems: int  # with an error or a failed PATCH
    held: tuple[HeldCluster, ...]  # in plan order
    held_bytes: int  # the storage the held changes would free
    approved: tuple[ApprovedCluster, ...]  # in plan order
    busiest: tuple[ClusterNote, ...]  # the clusters that send changes, the most first
    failed: tuple[FailedCluster, ...]  # in plan order
    unmanaged: tuple[str, ...]  # clusters and config servers no policy matches
    deletion: Deletion
    expiring: Expiring
    hold_records_ended: int  # hold records whose end has passed: they protect nothing any more
    # The plan this run applied (its run folder's plan.json), and how many of its clusters
    # bear each name: what the approve command names.
    plan_path: Path | None = None
    names: Mapping[str, int] = field(default_factory=dict)

    @property
    def nothing_changed(self) -> bool:
        """True when this run sent no PATCH: a dry run, or no results.jsonl."""
        return self.run.dry_run or self.outcomes is None

    def count(self, action: str) -> int:
        """How many of this run's changes have this action (or are held, or advisory)."""
        return self.by_action.get(action, 0)

    @property
    def stale(self) -> tuple[StaleCluster, ...]:
        """The clusters whose backups stopped, as its plan found them."""
        return self.plan.stale

    @property
    def held_changes(self) -> int:
        """Destructive changes a gate holds after this run: not sent."""
        return self.count("held")

    @property
    def approvable(self) -> tuple[HeldCluster, ...]:
        """The held clusters an --approve may let through, after review."""
        return tuple(c for c in self.held if c.approvable)

    @property
    def approve_command(self) -> str | None:
        """The command that approves every approvable cluster, with the plan's path (None:
        none is, or the plan is not known)."""
        if not self.approvable or self.plan_path is None:
            return None
        chosen = approve_names(((c.name, c.cluster_id) for c in self.approvable), self.names)
        return approve_hint(self.plan_path, chosen)

    @property
    def finish_command(self) -> str:
        """The command that finishes this run or apply after a stop: apply its run folder's
        copy of the plan, with an --approve for each cluster it approved (without them, what
        the person approved would be held again). What was done is skipped as unchanged."""
        plan = self._plan
        target = plan.parent if plan.name == PLAN else plan
        chosen = approve_names(((c.name, c.cluster_id) for c in self.approved), self.names)
        return apply_command(target, chosen)

    @property
    def apply_plan_command(self) -> str:
        """The command that applies this run's plan as it stands (nothing approved)."""
        return apply_command(self._plan)

    def approve_one(self, name: str, cluster_id: str) -> str:
        """The command that approves one cluster of this run's plan."""
        return apply_command(self._plan, approve_names([(name, cluster_id)], self.names))

    @property
    def _plan(self) -> Path:
        # A summary made without its run folder (a test's) names the plan as the docs do.
        return self.plan_path or Path("PLAN")


def action_counts(by_action: Mapping[str, int], number: Callable[[int], str] = str) -> str:
    """The changes sent by action, in the actions' order, e.g. "1 protect, 265 shorten"
    (``number`` writes a count)."""
    return ", ".join(f"{number(by_action[a])} {a}" for a in ACTIONS if by_action.get(a))


def outcome_counts(outcomes: Mapping[str, int], number: Callable[[int], str] = str) -> str:
    """Outcomes in their order, "applied" always, the others when any, e.g. "0 applied,
    265 stale" (``number`` writes a count)."""
    return ", ".join(
        f"{number(outcomes.get(o, 0))} {o}" for o in OUTCOMES if o == "applied" or outcomes.get(o)
    )


def holds_text(holds: Sequence[HoldEntry]) -> str:
    """A cluster's holds in one line: "alert: OPEN alert ...; max_expire_fraction: ..."."""
    return "; ".join(f"{h['kind']}: {h['reason']}" for h in holds)
