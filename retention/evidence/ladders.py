"""Section 3, retention as promised: at each month's end and the period's, each rule of
the policies a cluster had then, against the restore points it had (promise.py says how a
rule is read); and why a promised point was missing."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from retention.evidence.gather import OUTSIDE, ClusterFacts, EventFact, Facts
from retention.evidence.policies import Policies
from retention.evidence.promise import History, Point, RuleCheck, checks, unchecked_rules
from retention.evidence.values import DESTRUCTIVE, WALKING, ts, who


class Lookup(Protocol):
    """What the document asks the ledger beyond the facts: the events of a snapshot whose
    promised point went, and its last known expiry (gather.Reading answers)."""

    def events_of(self, project_id: str, cluster_id: str, snapshot_id: str) -> list[EventFact]:
        """Every event of one snapshot, oldest first."""
        ...

    def expires_of(self, project_id: str, cluster_id: str, snapshot_id: str) -> datetime | None:
        """Its last known expiry."""
        ...


def moments(facts: Facts) -> list[datetime]:
    """The ends the ladder is checked at: each month's end in the period, and its end."""
    found = []
    for day in facts.period.dates:
        after = day + timedelta(days=1)
        if after.day == 1:
            found.append(datetime(after.year, after.month, after.day, tzinfo=UTC))
    if facts.period.end not in found:
        found.append(facts.period.end)
    return found


def _points(facts: Facts, c: ClusterFacts) -> list[Point]:
    points = []
    for s in c.snapshots:  # complete ones (gather)
        # There until a run saw it gone: the ladder is read at the time of a run, and a
        # snapshot a run listed was a restore point then, its expiry passed or not.
        gone = None
        if s.gone_run is not None:
            gone = facts.started(s.gone_run) or facts.oldest
        points.append(Point(s.snapshot_id, s.created, gone))
    return points


def retention_of(
    facts: Facts, c: ClusterFacts, policies: Policies, lookup: Lookup
) -> dict[str, Any]:
    history = History(_points(facts, c))
    rows = [(facts.runs[r.run_seq], r) for r in c.rows if r.run_seq in facts.runs]
    found: list[dict[str, Any]] = []
    unchecked: set[str] = set()
    unknown: set[str] = set()
    for moment in moments(facts):
        before = [(run, row) for run, row in rows if run.started < moment and run.mode in WALKING]
        if not before:
            continue
        # As the last run by then saw the cluster: the ledger knows nothing of the
        # snapshots made after it, so the ladder is read at its time.
        run, row = before[-1]
        for name in row.policies:
            policy = policies.of(run, name)
            if policy is None:
                unknown.add(name)
                continue
            unchecked.update(f"{name}: {r}" for r in unchecked_rules(policy))
            for check in checks(policy, history, run.started):
                found.append(_rule_check(facts, c, check, moment, run.started, lookup))
    return {
        **who(c),
        "checks": found,
        "rules": _rule_summaries(found),
        # A policy whose text the ledger does not have promised what nobody can say.
        "met": all(f["status"] != "missed" for f in found) and not unknown,
        "notChecked": sorted(unchecked),
        "policiesWithoutText": sorted(unknown),
    }


def _rule_check(
    facts: Facts,
    c: ClusterFacts,
    check: RuleCheck,
    moment: datetime,
    seen: datetime,
    lookup: Lookup,
) -> dict[str, Any]:
    at = (moment - timedelta(days=1)).date()
    return {
        "at": at.isoformat(),
        "asOf": ts(seen),
        "policy": check.policy,
        "rule": f"{check.section}.{check.rule}",
        "count": check.count,
        "promised": check.promised,
        "had": check.had,
        "status": check.status,
        "missing": [
            {
                "bucket": m.bucket,
                "snapshotId": m.snapshot_id,
                "why": _why_missing(facts, c, m.snapshot_id, seen, lookup),
            }
            for m in check.missing
        ],
    }


def _why_missing(
    facts: Facts, c: ClusterFacts, snapshot_id: str, moment: datetime, lookup: Lookup
) -> str:
    """Why a promised point was not there, from what the ledger recorded of it."""
    for e in reversed(lookup.events_of(c.project_id, c.cluster_id, snapshot_id)):
        if e.at is not None and e.at > moment:
            continue  # after the check: not why it was missing then
        when = ts(e.at) or "?"
        if e.kind in OUTSIDE:
            return f"a change outside retention ({e.kind}, {when})"
        if e.kind == "sent" and e.detail.get("action") in DESTRUCTIVE:
            run = facts.runs.get(e.run_seq)
            by = f" by {run.actor}" if run else ""
            return f"retention changed it ({e.detail.get('action')}, {when}{by})"
    expires = lookup.expires_of(c.project_id, c.cluster_id, snapshot_id)
    if expires is not None and expires <= moment:
        return f"its expiry passed ({ts(expires)})"
    return "it went between two runs without a trace"


def _rule_summaries(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per policy rule: met on how many of its checks, and the checks that missed."""
    by_rule: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for f in found:
        by_rule[f["policy"], f["rule"]].append(f)
    summaries = []
    for (policy, rule), items in sorted(by_rule.items()):
        ok = sum(1 for i in items if i["status"] != "missed")
        missed = [i for i in items if i["status"] == "missed"]
        text = f"{rule} {_count(items[-1]['count'])}: met on {ok} of {len(items)} ends"
        if missed:
            text += "; " + ", ".join(f"{i['at']} had {i['had']} of {i['promised']}" for i in missed)
        short = [i for i in items if i["status"] == "short"]
        if short:
            text += f"; history too short on {len(short)}"
        summaries.append(
            {"policy": policy, "rule": rule, "met": ok, "of": len(items), "text": text}
        )
    return summaries


def _count(value: int) -> str:
    return "all" if value < 0 else str(value)
