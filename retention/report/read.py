"""Read a run folder into a ``ReportData``: plan.json, decisions.jsonl.zst and results.jsonl.

Each file is read through its model: plan.json and decisions.jsonl.zst through
retention.core.planfile's (runfolder/planread.py), results.jsonl through
retention.core.runfiles' (runfolder/journal.py). Memory stays flat on large fleets (600k
decisions): plan.json is the head alone, and the decisions are streamed once into
per-cluster and per-day aggregates, and only the decisions of the clusters that get a
timeline, chosen from plan.json's counts before the stream starts, are kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from itertools import chain, islice
from pathlib import Path
from typing import Literal

from retention.core.guard import to_send
from retention.core.planfile import Change, DecisionRecord, PlanHead
from retention.core.restore import in_doubt, paired
from retention.core.runfiles import ApplyIntent, ApplyOutcome
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted
from retention.report.cells import deciding_first
from retention.report.holdrecords import HoldRecordRow
from retention.report.model import (
    AdvisoryRow,
    ApprovedTally,
    Calendar,
    CalendarDay,
    ChangeRow,
    ClusterExpiries,
    ClusterRow,
    Expiry,
    Outcomes,
    PolicyRow,
    ReportData,
)
from retention.report.summarize import summarize
from retention.report.summary import PlanSummary, RunInfo, StaleCluster
from retention.report.svg import Snap, build_calendar, build_timeline, category
from retention.runfolder.folder import DECISIONS, RESULTS, RunFolder
from retention.runfolder.journal import apply_lines
from retention.runfolder.planread import PlanFile, open_plan, read_decisions
from retention.runfolder.planwrite import jsonable

_CHANGING = frozenset({"extend", "shorten", "delete", "release"})
_DAY = 86400.0
# Timelines drawn in full; the other changed clusters are only in the clusters table.
MAX_TIMELINES = 50
# Rows of long lists (failed PATCHes, advisory decisions) in the HTML; the rest are counted.
MAX_LISTED = 200


def read_results(path: Path, *, max_listed: int) -> Outcomes | None:
    """The outcomes journalled in results.jsonl, or None when the file does not exist."""
    if not path.exists():
        return None
    outcomes = Outcomes()

    def readable() -> Iterator[ApplyIntent | ApplyOutcome]:
        for line in apply_lines(path):
            if line is not None:
                yield line
            else:
                outcomes.unreadable += 1

    for intent, record in paired(readable()):
        outcomes.in_doubt += in_doubt(intent, record)
        line = record if record is not None else intent
        if line is not None and line["approved"]:
            tally = outcomes.approved.setdefault(
                (line["projectId"], line["clusterId"]), ApprovedTally()
            )
            tally.actions[line["action"]] += 1
            if record is not None:
                tally.outcomes[record["outcome"]] += 1
        if record is not None:
            _count(outcomes, record, max_listed)
    return outcomes


def _count(outcomes: Outcomes, record: ApplyOutcome, max_listed: int) -> None:
    """Take one outcome line."""
    outcome = record["outcome"]
    outcomes.counts[outcome] += 1
    snapshot = (record["clusterId"], record["snapshotId"])
    # A resumed run journals a PATCH again: the last outcome is the one that stands.
    # An unchanged snapshot already holds what the change writes, as an applied one.
    if outcome in ("applied", "unchanged"):
        outcomes.not_applied.discard(snapshot)
    else:
        outcomes.not_applied.add(snapshot)
    if outcome == "unchanged":
        outcomes.unchanged.add(snapshot)
    else:
        outcomes.unchanged.discard(snapshot)
    if outcome == "applied" and record["destructive"]:
        outcomes.expired += 1
        sent = (record["body"] or {}).get("expires")
        if sent is not None and (outcomes.expires_from is None or sent < outcomes.expires_from):
            outcomes.expires_from = sent
    if outcome in ("failed", "refused"):
        outcomes.failed_total += 1
        outcomes.failed_by_cluster[(record["projectId"], snapshot[0])] += 1
        if len(outcomes.failures) < max_listed:
            outcomes.failures.append(jsonable(record))  # its timestamps as written


class _DecisionScan:
    """The one pass over decisions.jsonl.zst: calendar, per-policy changes, timeline snapshots."""

    def __init__(
        self,
        evaluated_at: datetime,
        clusters: list[ClusterRow],
        policies: dict[str, PolicyRow],
        drawn: list[ClusterRow],
        outcomes: Outcomes | None,
    ) -> None:
        now = evaluated_at.astimezone(UTC)
        # Expiries are compared as POSIX seconds: each parsed datetime has a zone object of
        # its own, and comparing datetimes of two zone objects costs fourteen times as much.
        self.now = now.timestamp()
        self.week_end = self.now + 7 * _DAY
        self.month_end = self.now + 30 * _DAY
        self.midnight = datetime.combine(now.date(), time(), UTC).timestamp()
        last_day = (now + timedelta(days=30) - timedelta(seconds=1)).date()
        self.days = [
            CalendarDay(now.date() + timedelta(days=i))
            for i in range((last_day - now.date()).days + 1)
        ]
        self.calendar = Calendar(days=list(self.days), as_planned=outcomes is None)
        self.not_applied = outcomes.not_applied if outcomes is not None else set()
        self.unchanged = outcomes.unchanged if outcomes is not None else set()
        # The clusters whose held changes this run sent (--approve): not held any more.
        self.approved = frozenset(outcomes.approved) if outcomes is not None else frozenset()
        # What the destructive changes the service applied take (see add).
        self.bytes_applied = 0
        self.cluster_policies = {c.key: c.policies for c in clusters}
        self.policies = policies
        self.snaps: dict[tuple[str, str], list[Snap]] = {c.key: [] for c in drawn}
        self.unreadable = 0

    def add(self, record: DecisionRecord) -> None:
        """Take one decision record."""
        key = (record["projectId"], record["clusterId"])
        action: str = record["action"]
        held = bool(record["held"]) and key not in self.approved
        not_sent = held or bool(record["advisory"])
        if action != "none":
            counted = "held" if held else "advisory" if record["advisory"] else action
            # A change no rule keeps (a shorten) names no policy: it belongs to the cluster's.
            for name in record["policies"] or self.cluster_policies.get(key) or ["(none)"]:
                if name not in self.policies:
                    self.policies[name] = PolicyRow(name, "")
                self.policies[name].changes[counted] += 1
        if record["state"] == "awaiting-deletion":
            self.calendar.awaiting_deletion += 1
        snapshot = (record["clusterId"], record["snapshotId"])
        applied = not not_sent and (self.calendar.as_planned or snapshot not in self.not_applied)
        # Unchanged: the snapshot holds what the change writes, but not by this run's doing.
        set_here = applied and snapshot not in self.unchanged
        if set_here and record["destructive"]:
            self.bytes_applied += record["storageBytes"] or 0
        expiry = self._resulting_expiry(record, action, applied)
        at = expiry.timestamp() if expiry is not None else -1.0
        if self.now <= at < self.month_end:
            self._count(record, key, at, set_here and action in _CHANGING)
        snaps = self.snaps.get(key)
        if snaps is not None:
            target: datetime | Literal["forever"] | None = None
            if action != "none" and not not_sent:
                target = "forever" if action == "protect" else record["expiresAfter"]
            snaps.append(
                Snap(
                    id=record["snapshotId"],
                    created=record["created"],
                    category=category(record, held=held),
                    changed=action != "none",
                    target=target,
                    label=_label(record, held=held),
                )
            )

    def _count(
        self,
        record: DecisionRecord,
        key: tuple[str, str],
        at: float,
        planned: bool,
    ) -> None:
        """Count one expiry in the window: on its day and for its cluster, by its source."""
        day = self.days[int((at - self.midnight) // _DAY)]
        cluster = self.calendar.clusters.get(key)
        if cluster is None:
            cluster = ClusterExpiries(record["clusterName"], record["projectId"])
            self.calendar.clusters[key] = cluster
        cluster.first_at = min(cluster.first_at, at)
        week = at < self.week_end
        if planned:
            day.planned += 1
            cluster.planned_month += 1
            cluster.planned_week += week
        else:
            day.existing += 1
            cluster.existing_month += 1
            cluster.existing_week += week

    @staticmethod
    def _resulting_expiry(record: DecisionRecord, action: str, applied: bool) -> datetime | None:
        """When the snapshot goes after this run (None: protected or no expiry)."""
        if applied and action == "protect":
            return None
        if applied and action in _CHANGING:
            return record["expiresAfter"] or (record["body"] or {}).get("expires")
        observed = record["observed"]
        if observed["doNotDelete"]:
            return None
        return observed["expires"]


def _label(record: DecisionRecord, *, held: bool) -> str:
    """A snapshot's tooltip on a timeline (``held``: a gate still holds its change)."""
    created = format_timestamp(record["created"])
    parts = [f"{record['snapshotId']}, created {created}: {record['state']}"]
    if record["action"] != "none":
        parts.append(f"{record['action']}")
        if held:
            parts.append("(held)")
        elif record["held"]:
            parts.append("(approved)")
        elif record["advisory"]:
            parts.append("(advisory)")
        if record["expiresAfter"]:
            parts.append(f"to {format_timestamp(record['expiresAfter'])}")
    return " ".join(parts)


MAX_CHANGE_ROWS = 5000


def change_rows(
    plan: PlanFile,
    limit: int = MAX_CHANGE_ROWS,
    approved: frozenset[tuple[str, str]] = frozenset(),
) -> Iterator[ChangeRow]:
    """The plan's changes as rows, cluster by cluster in plan order: the ones this run
    sends first (those of ``changes``, and the held ones of the clusters an --approve let
    through), then those still held, at most ``limit`` in all."""
    still_held = (
        c for c in plan.read_list("held") if (c["projectId"], c["clusterId"]) not in approved
    )
    for change in islice(chain(to_send(plan.read_candidates(), approved), still_held), limit):
        yield _row(change)


def _row(change: Change) -> ChangeRow:
    observed = change["observed"]
    body = change["body"]
    before: Expiry = (
        "doNotDelete" if observed["doNotDelete"] else observed["expires"] or "no expiry"
    )
    after: Expiry = (
        "doNotDelete" if body.get("doNotDelete") is True else body.get("expires") or "no expiry"
    )
    # The service may delete a snapshot from the expiry it is sent; a destructive one is
    # sent no sooner than the send time plus its grace, so this is the earliest it can be.
    delete_from = change["expiresAfter"] if change["destructive"] else None
    held = change.get("held")
    return ChangeRow(
        cluster=change["clusterName"],
        cluster_id=change["clusterId"],
        snapshot_id=change["snapshotId"],
        created=change["created"],
        action=change["action"],
        before=before,
        after=after,
        delete_from=delete_from,
        size=change["storageBytes"],
        reasons=deciding_first(change["reasons"], change["action"]),
        held=held,
        cut_seconds=change.get("cutSeconds"),
    )


def _rank(cluster: ClusterRow) -> tuple[int, str, str, str]:
    return (-cluster.changes, cluster.name, cluster.project_id, cluster.cluster_id)


def _cluster_rows(
    plan: PlanFile, outcomes: Outcomes | None
) -> tuple[list[ClusterRow], tuple[StaleCluster, ...]]:
    """The plan's clusters as report rows, with their project's name and their outcomes;
    and those whose backups stopped (one pass over the clusters)."""
    names = project_names(plan.head)
    clusters, stale = [], []
    for entry in plan.read_clusters():
        clusters.append(ClusterRow.of(entry))
        if (found := StaleCluster.of(entry, names.get(entry["projectId"]))) is not None:
            stale.append(found)
    for row in clusters:
        row.project_name = names.get(row.project_id)
        if outcomes is not None:
            row.failed = outcomes.failed_by_cluster.get(row.key, 0)
            if (tally := outcomes.approved.get(row.key)) is not None:
                row.approve(tally)
    return clusters, tuple(stale)


def project_names(head: PlanHead) -> dict[str, str | None]:
    """The projects' names by id, as the plan recorded them (None: unknown)."""
    return {p["projectId"]: p["name"] for p in head.get("projects", [])}


def _policy_rows(head: PlanHead, clusters: list[ClusterRow]) -> dict[str, PolicyRow]:
    """The plan's policies by name, each with the clusters it matched."""
    policies = {p["name"]: PolicyRow(p["name"], p["sha256"]) for p in head["policies"]}
    for cluster in clusters:
        for name in cluster.policies:
            policies.setdefault(name, PolicyRow(name, "")).clusters.append(cluster.name)
    return policies


def _scan(path: Path, scan: _DecisionScan, names: dict[str, str | None]) -> list[str]:
    """Stream decisions.jsonl.zst through ``scan`` and chart its calendar; return what could
    not be read, in words."""
    problems = []
    if path.exists():
        for record in read_decisions(path):
            if record is None:
                scan.unreadable += 1
            else:
                scan.add(record)
        if scan.unreadable:
            problems.append(f"{DECISIONS}: {counted(scan.unreadable, 'unreadable line')} skipped")
    else:
        problems.append(f"{DECISIONS} is missing: no calendar, timelines or policy counts")
    for expiries in scan.calendar.clusters.values():
        expiries.project_name = names.get(expiries.project_id)
    if scan.calendar.clusters:
        week_end = (scan.week_end - scan.midnight) / _DAY
        scan.calendar.chart = build_calendar(scan.calendar, week_end)
    return problems


def _advisory_rows(plan: PlanFile, limit: int) -> list[AdvisoryRow]:
    """The first ``limit`` advisory decisions of the plan."""
    return [
        AdvisoryRow(
            cluster=c["clusterName"],
            snapshot_id=c["snapshotId"],
            action=c["action"],
            body=c["body"],
            expires=c["observed"]["expires"],
            do_not_delete=c["observed"]["doNotDelete"],
            reasons=deciding_first(c["reasons"], c["action"]),
        )
        for c in islice(plan.read_list("advisory"), limit)
    ]


def collect(run_dir: Path, run: RunInfo, plan_path: Path | None = None) -> ReportData:
    """Read the run folder's files into what the templates show; with ``plan_path``, a plan
    saved under another name (and its decisions beside it), which nothing applied."""
    folder = RunFolder(run_dir)
    plan = open_plan(plan_path or folder.plan)
    head = plan.head
    outcomes = (
        None if plan_path is not None else read_results(folder.results, max_listed=MAX_LISTED)
    )
    clusters, stale = _cluster_rows(plan, outcomes)
    changed = sorted((c for c in clusters if c.changes), key=_rank)
    drawn = changed[:MAX_TIMELINES]
    for number, cluster in enumerate(drawn, 1):
        cluster.anchor = f"timeline-{number}"  # ids from a counter: data never becomes an id
    problems: list[str] = []
    if outcomes is not None and outcomes.unreadable:
        problems.append(f"{RESULTS}: {counted(outcomes.unreadable, 'unreadable line')} skipped")
    policies = _policy_rows(head, clusters)
    scan = _DecisionScan(head["evaluatedAt"], clusters, policies, drawn, outcomes)
    problems += _scan(plan.decisions, scan, project_names(head))
    records = sorted(
        (HoldRecordRow.of(h) for h in head.get("holdRecords", [])), key=lambda h: h.rank
    )
    now = head["evaluatedAt"]
    return ReportData(
        run=run,
        summary=summarize(
            run,
            PlanSummary.of(head, stale),
            outcomes=outcomes,
            clusters=clusters,
            calendar=scan.calendar,
            hold_records=records,
            bytes_applied=scan.bytes_applied if plan.decisions.exists() else None,
            plan_path=plan.path,
        ),
        clusters=clusters,
        changed=changed,
        unchanged=[c for c in clusters if not c.changes],
        policies=sorted(policies.values(), key=lambda p: p.name),
        calendar=scan.calendar,
        timelines=[build_timeline(c, scan.snaps[c.key], now) for c in drawn],
        outcomes=outcomes,
        problems=problems,
        advisory=_advisory_rows(plan, MAX_LISTED),
        changes=list(change_rows(plan, approved=scan.approved)),
        hold_records=records,
    )
