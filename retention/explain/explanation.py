"""What ``retention explain`` prints: a snapshot's decision as the plan recorded it, then
what every rule of every policy of its cluster did with it, traced again from the plan's
own inputs (the cluster's snapshots in decisions.jsonl.zst, the plan's evaluatedAt).

Only a policy whose file is the one the plan was made with (its sha256 in plan.json) is
traced: for a changed or missing one a line says so and shows what the plan recorded, never
rules the plan did not use. A reason a traced rule shows is not listed again under
"reasons:", which keeps what the rules do not say (safety gates, states, grace). The hold
records (protect: ids) that name the snapshot come from plan.json, traced or not: their
reason, ticket and end, and whether they were still in force at the plan's time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from retention.core.approving import LONG_CUT, cut_words, is_long_cut
from retention.core.explain import trace_snapshot
from retention.core.model import Reason, describe
from retention.core.planfile import (
    ClusterEntry,
    DecisionRecord,
    HoldRecordEntry,
    OutsideChangeEntry,
    PlanHead,
    RestorePointsEntry,
    cluster_of,
    snapshot_view,
)
from retention.core.restore import State
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted, printable
from retention.errors import UsageError
from retention.runfolder.folder import decisions_path
from retention.runfolder.planread import cluster_decisions, find_decision, open_plan
from retention.runfolder.planwrite import jsonable

if TYPE_CHECKING:
    from retention.core.explain import PolicyTrace, SnapshotTrace, TracedRule
    from retention.core.policy.loader import PolicySet

# Why a snapshot's rules were not traced, when the plan says it was not counted.
_UNCOUNTED = {
    "incomplete": "none apply: a snapshot still being created is not counted",
    "awaiting-deletion": "none apply: a snapshot whose expiry has passed is not counted",
    "inconsistent": "none apply: a possibly inconsistent snapshot is not counted",
}

_NO_REASONS = ["  reasons:", "    - (none)"]


@dataclass(frozen=True)
class Policies:
    """The policies explain traces with and where they were read from, or why there are
    none (``problem``)."""

    loaded: PolicySet | None
    source: str
    problem: str | None = None


@dataclass(frozen=True)
class Analysis:
    """What explain found for one snapshot: the cluster's policies, which of them could be
    traced and what they did, and why tracing stopped (``problem``)."""

    record: DecisionRecord
    names: list[str]
    problem: str | None = None
    entry: ClusterEntry | None = None  # the snapshot's cluster in plan.json
    found: SnapshotTrace | None = None
    traced: dict[str, PolicyTrace] = field(default_factory=dict)
    untraced: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)  # where each policy was read from
    policies: Policies | None = None

    @property
    def reasons(self) -> list[Reason]:
        """The plan's reasons that no traced rule or untraced policy shows already."""
        shown = {describe(r) for p in self.traced.values() for r in _reasons_of(p)}
        shown |= {describe(r) for r in self.record["reasons"] if r["policy"] in self.untraced}
        return [r for r in self.record["reasons"] if describe(r) not in shown]


@dataclass(frozen=True)
class Explained:
    """One snapshot of a plan explained: its record, the plan's head and its cluster's
    entry (``listed``; None when the plan lists no such cluster), the records of its cluster as
    decisions.jsonl.zst has them (None for a line that is not a valid record), and the
    policies to trace with."""

    record: DecisionRecord
    head: PlanHead
    listed: ClusterEntry | None
    cluster: Sequence[DecisionRecord | None]
    policies: Policies

    def analyse(self) -> Analysis:
        """Trace the record through the policies of its cluster's entry whose files are the
        plan's."""
        record, head, entry, policies = self.record, self.head, self.listed, self.policies
        names = entry["policies"] if entry is not None else []
        problem = policies.problem or _unusable(self.cluster, entry)
        if not names or problem is not None or policies.loaded is None:
            return Analysis(record, names, problem if names else None, entry)
        sha256 = {p["name"]: p["sha256"] for p in head["policies"]}
        loaded = policies.loaded.by_name
        traceable = [n for n in names if n in loaded and loaded[n].sha256 == sha256.get(n)]
        found = None
        if traceable:  # the cluster's snapshots rebuilt from its records, as decide saw them
            views = [snapshot_view(r) for r in self.cluster if r is not None]
            chosen = [loaded[n] for n in traceable]
            found = trace_snapshot(views, chosen, record["snapshotId"], now=head["evaluatedAt"])
        return Analysis(
            record,
            names,
            entry=entry,
            found=found,
            traced={p.policy: p for p in found.policies} if found is not None else {},
            untraced=[n for n in names if n not in traceable],
            paths={n: str(loaded[n].path) for n in names if n in loaded},
            policies=policies,
        )

    def lines(self) -> list[str]:
        """What explain prints."""
        record, head, found = self.record, self.head, self.analyse()
        lines = [
            *_record_lines(record),
            *(f"  outside:   {c['text']}" for c in outside_changes(record, head)),
            *_restore_points_lines(found),
            *_hold_record_lines(hold_records(record, head)),
        ]
        if found.policies is None:
            # Nothing to trace with: what the plan recorded, and why there is no more.
            lines += _reasons(record["reasons"]) or _NO_REASONS
            problem = found.problem
            return lines + ([f"  rules:     not traced: {problem}"] if problem else [])
        lines += _reasons(found.reasons)
        if found.found is not None and found.found.uncounted is not None:
            lines.append(f"  rules:     {_UNCOUNTED[found.found.uncounted]}")
        elif found.found is not None:
            at = format_timestamp(head["evaluatedAt"])
            what_if = ", a what-if plan (--at)" if head["whatIf"] else ""
            lines.append(f"  rules as of {at} (the plan's evaluatedAt{what_if}):")
        for name in found.names:
            if name in found.traced:
                lines += _policy_lines(found.traced[name], found.paths[name])
            elif name in found.untraced and found.policies.loaded is not None:
                loaded, source = found.policies.loaded, found.policies.source
                lines += _recorded_lines(name, record, loaded, source)
        return lines

    def document(self) -> dict[str, Any]:
        """explain --format json: the plan's record of the snapshot and, per policy, what
        each rule did (or why it was not traced)."""
        record, head, found = self.record, self.head, self.analyse()
        uncounted = found.found.uncounted if found.found is not None else None
        document: dict[str, Any] = {
            "command": "explain",
            "exitCode": 0,  # explain either reports, or fails before it can (stdout empty)
            "evaluatedAt": head["evaluatedAt"],
            "whatIf": head["whatIf"],
            "decision": record,
            "uncounted": uncounted,
            "notTraced": found.problem,
            "holdRecords": hold_records(record, head),
            "outsideChanges": outside_changes(record, head),
            "restorePoints": _restore_points(found),
            "policies": [],
        }
        for name in found.names:
            entry: dict[str, Any] = {"name": name, "file": found.paths.get(name)}
            if name in found.traced:
                policy = found.traced[name]
                entry["traced"] = True
                entry["rules"] = [
                    _rule_document(side, rule)
                    for side, rules in (("keep", policy.keep), ("protect", policy.protect))
                    for rule in rules
                ]
            else:
                entry["traced"] = False
                entry["why"] = (
                    found.problem
                    if found.policies is None
                    else "changed since the plan"
                    if name in found.paths
                    else "not among the policies given"
                )
                entry["recorded"] = [r for r in record["reasons"] if r["policy"] == name]
            document["policies"].append(entry)
        return document


def explain_snapshot(path: Path, snapshot_id: str, policies: Callable[[], Policies]) -> Explained:
    """Find ``snapshot_id`` in the decisions of the plan at ``path``, with its cluster's
    records and entry, and the ``policies`` to trace with; UsageError (exit 2) when the
    decisions are not there or do not hold it."""
    decisions = decisions_path(path)
    if not decisions.is_file():
        raise UsageError(f"{decisions} does not exist (it is written beside the plan)")
    record = find_decision(decisions, snapshot_id)
    if record is None:
        gone = [
            c["text"]
            for c in open_plan(path).head.get("outsideChanges", [])
            if c["snapshotId"] == snapshot_id
        ]
        said = f": it went before this plan, {gone[0]}" if gone else ""
        raise UsageError(f"snapshot {snapshot_id} is not in {decisions}{said}")
    plan = open_plan(path)
    cluster = list(cluster_decisions(decisions, record))
    entry = cluster_of(plan.read_clusters(), record["projectId"], record["clusterId"])
    return Explained(record, plan.head, entry, cluster, policies())


def _restore_points(found: Analysis) -> RestorePointsEntry | None:
    """The restore points of the snapshot's cluster, as plan.json has them (None when it
    has none: a failed walk, or a plan from before they were recorded)."""
    return None if found.entry is None else found.entry.get("restorePoints")


def _restore_points_lines(found: Analysis) -> list[str]:
    """ "restore points of orders: daily for 7 days, ...", under the decision: the
    cluster's restore points once the plan is applied, the snapshot among them or not."""
    points = _restore_points(found)
    if points is None:
        return []
    name = printable(found.record["clusterName"])
    return [f"  restore points of {name}: {points['text']}"]


def _rule_document(side: str, rule: TracedRule) -> dict[str, Any]:
    t = rule.trace
    return {
        "side": side,
        "rule": t.rule,
        "label": t.label,
        "kept": t.kept,
        "counter": t.counter or None,
        "count": t.count or None,
        "horizon": rule.reason["horizon"] if rule.reason is not None else None,
        "why": t.why or None,
        "by": t.by,
        "hold": _hold_record_document(rule),
        "text": _rule_words(rule),
    }


def _hold_record_document(rule: TracedRule) -> dict[str, Any] | None:
    """The hold record behind an ids rule (in force when it kept the snapshot, else ended)."""
    record = rule.trace.record
    if record is None:
        return None
    return {
        "reason": record.reason,
        "ticket": record.ticket,
        "until": record.until,
        "ends": record.ends,
        "inForce": rule.trace.kept,
    }


def outside_changes(record: DecisionRecord, head: PlanHead) -> list[OutsideChangeEntry]:
    """What the plan found changed outside retention of the snapshot since the ledger last
    looked (its outsideChanges entry)."""
    return [c for c in head.get("outsideChanges", []) if c["snapshotId"] == record["snapshotId"]]


def hold_records(record: DecisionRecord, head: PlanHead) -> list[HoldRecordEntry]:
    """The plan's hold records that name the snapshot of ``record``."""
    return [h for h in head.get("holdRecords", []) if h["snapshotId"] == record["snapshotId"]]


def _hold_record_lines(records: list[HoldRecordEntry]) -> list[str]:
    """The hold records of the snapshot: policy, where, reason, ticket, end, in force."""
    lines = ["  hold records (protect: ids):"] if records else []
    for h in records:
        ticket = f"; ticket {h['ticket']}" if h["ticket"] else ""
        if h["until"] is None:
            end = "no end"
        else:
            ends = format_timestamp(h["ends"]) if h["ends"] is not None else "-"
            end = f"until {h['until']}" + (f" (ends {ends})" if ends != h["until"] else "")
        state = "in force" if h["inForce"] else "ENDED: protects no more"
        lines.append(f"    - {h['policy']} ({h['setting']}): {h['reason']}{ticket}; {end}; {state}")
    return lines


def _unusable(cluster: Sequence[DecisionRecord | None], entry: ClusterEntry | None) -> str | None:
    """Why the cluster's snapshots cannot be rebuilt from decisions.jsonl.zst, or None."""
    if entry is None:
        return "plan.json has no entry for this cluster"
    valid = sum(r is not None for r in cluster)
    wanted = entry["counts"].get("snapshots", 0)
    if valid != wanted or valid != len(cluster):
        return (
            f"decisions.jsonl.zst holds {counted(valid, 'valid record')} of the cluster's "
            f"{counted(wanted, 'snapshot')} "
            "(cut short or edited)"
        )
    return None


def _reasons_of(policy: PolicyTrace) -> list[Reason]:
    return [r.reason for r in (*policy.keep, *policy.protect) if r.reason is not None]


def _reasons(reasons: list[Reason]) -> list[str]:
    return ["  reasons:", *(f"    - {describe(r)}" for r in reasons)] if reasons else []


def _policy_lines(policy: PolicyTrace, path: object) -> list[str]:
    """One line per rule: keep or protect, then what the rule did."""
    lines = [f"  policy {policy.policy} ({path}):"]
    for side, rules in (("keep", policy.keep), ("protect", policy.protect)):
        lines.extend(f"    {side:<8} {_rule_words(rule)}" for rule in rules)
    if not policy.keep and not policy.protect:
        lines.append("    (no rules)")
    return lines


def _rule_words(rule: TracedRule) -> str:
    t = rule.trace
    if not t.kept:
        return f"{t.label}: passed by: {t.why}"
    horizon = rule.reason["horizon"] if rule.reason is not None else None
    return t.text + (f", until {format_timestamp(horizon)}" if horizon is not None else "")


def _recorded_lines(
    name: str, record: DecisionRecord, policies: PolicySet, source: str
) -> list[str]:
    """A policy that is not traced: why, in one line, and what the plan recorded for it."""
    loaded = policies.by_name.get(name)
    if loaded is None:
        why = f"  policy {name}: not among the policies in {source} now"
    else:
        why = f"  policy {name} ({loaded.path}): changed since the plan"
    recorded = [f"    - {describe(r)}" for r in record["reasons"] if r["policy"] == name]
    return [
        f"{why}; what the plan recorded:",
        *(recorded or [f"    - (no rule of {name} kept or protected this snapshot)"]),
    ]


def _record_lines(record: DecisionRecord) -> list[str]:
    """The snapshot and the plan's decision, as the plan recorded them."""
    observed = record["observed"]
    state = State(observed["doNotDelete"], observed["expires"]).text()
    created = format_timestamp(record["created"])
    lines = [
        f"snapshot {record['snapshotId']} of {record['kind']} {record['clusterName']} "
        f"({record['clusterId']}, project {record['projectId']})",
        f"  created:   {created}   complete: {record['complete']}   "
        f"consistent: {record['consistent']}",
        f"  now:       {state}",
        f"  decision:  {record['state']}; action: {record['action']}",
    ]
    if record["body"] is not None:
        lines.append(f"  PATCH:     {orjson.dumps(jsonable(record['body'])).decode()}")
        if record["destructive"]:
            lines.append("  destructive: yes (a safety gate may hold it)")
    if record["expiresAfter"]:
        lines.append(f"  expires after: {format_timestamp(record['expiresAfter'])}")
    if (cut := record.get("cutSeconds")) is not None:
        flag = f" (a long cut: {LONG_CUT.days} days or more)" if is_long_cut(cut) else ""
        lines.append(f"  {cut_words(cut)} of the expiry it has{flag}")
    if record["held"]:
        lines.append(f"  HELD:      {record['held']}")
    if record["advisory"]:
        lines.append("  advisory:  config-server snapshots cannot be changed through the API")
    lines.append(f"  policies:  {', '.join(record['policies']) or '-'}")
    return lines
