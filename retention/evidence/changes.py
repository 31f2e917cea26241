"""Section 4, every change with who and why: retention's (summed, the first ones and the
undos whole: the JSON and the CSV stream the rest), the holds and hold records, and the
changes made outside retention with who acknowledged them."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

from retention.core.policy.holdrecords import HoldRecord, until_text
from retention.evidence.gather import OUTSIDE, ClusterFacts, EventFact, Facts
from retention.evidence.policies import Policies
from retention.evidence.values import ts, who


def changes_of(facts: Facts, by_key: dict[tuple[str, str], ClusterFacts]) -> dict[str, Any]:
    ours = facts.ours
    acks = _acknowledgements(facts)
    return {
        "sent": ours.sent,
        "byAction": dict(sorted(ours.by_action.items())),
        "byCluster": [
            {**who(c), "byAction": dict(sorted(ours.by_cluster[key].items()))}
            for key, c in sorted(by_key.items(), key=lambda kv: (kv[1].name, kv[0]))
            if key in ours.by_cluster
        ],
        "count": ours.total,
        "log": ours.preview,
        "undos": ours.undos,
        "holds": _holds(facts, by_key),
        "holdRecords": _hold_records(facts),
        "outside": [_outside(facts, by_key, e, acks) for e in _once(facts.events)],
    }


def _once(found: list[EventFact]) -> list[EventFact]:
    """Each change made outside retention once: a run killed after finding one left it in
    its unfinished record, and the next run carried it into its own (``foundBy``)."""
    seen: set[tuple[str, str, str, str | None]] = set()
    listed = []
    for e in found:
        key = (e.kind, e.project_id, e.cluster_id, e.snapshot_id)
        if e.kind not in OUTSIDE or (key in seen and e.detail.get("foundBy")):
            continue
        seen.add(key)
        listed.append(e)
    return listed


def _name(by_key: dict[tuple[str, str], ClusterFacts], e: EventFact) -> str:
    c = by_key.get((e.project_id, e.cluster_id))
    return c.name if c else e.cluster_id


def _acknowledgements(facts: Facts) -> dict[tuple[str, str], list[EventFact]]:
    """Each cluster's acknowledgements, in the order written."""
    found: dict[tuple[str, str], list[EventFact]] = defaultdict(list)
    for a in facts.events:
        if a.kind == "acknowledged":
            found[a.project_id, a.cluster_id].append(a)
    return found


def _outside(
    facts: Facts,
    by_key: dict[tuple[str, str], ClusterFacts],
    e: EventFact,
    acks: dict[tuple[str, str], list[EventFact]],
) -> dict[str, Any]:
    mine = acks.get((e.project_id, e.cluster_id), [])
    after = bisect.bisect_right([a.seq for a in mine], e.seq)
    ack = mine[after] if after < len(mine) else None
    ack_run = None if ack is None else facts.runs.get(ack.run_seq)
    return {
        "at": ts(e.at),
        "kind": e.kind,
        "projectId": e.project_id,
        "clusterId": e.cluster_id,
        "cluster": _name(by_key, e),
        "snapshotId": e.snapshot_id,
        "before": e.before,
        "after": e.after,
        "alertId": e.detail.get("alertId"),
        "acknowledged": None
        if ack is None
        else {
            "at": ts(ack.at),
            "by": ack_run.actor if ack_run else None,
            "note": ack.detail.get("note"),
        },
    }


def _holds(facts: Facts, by_key: dict[tuple[str, str], ClusterFacts]) -> list[dict[str, Any]]:
    """Each hold of each cluster: its kind and reason, its first and last run."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in by_key.values():
        for row in c.rows:
            run = facts.runs.get(row.run_seq)
            if run is None:
                continue
            for kind, reason in row.holds:
                entry = found.setdefault(
                    (c.cluster_id, kind, reason),
                    {
                        "cluster": c.name,
                        "clusterId": c.cluster_id,
                        "kind": kind,
                        "reason": reason,
                        "from": ts(run.started),
                        "runs": 0,
                    },
                )
                entry["to"] = ts(run.started)
                entry["runs"] += 1
    return sorted(found.values(), key=lambda h: (h["cluster"], h["from"]))


def _hold_records(facts: Facts) -> list[dict[str, Any]]:
    """The hold records (protect.ids with a reason) of the policies in force."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    shas = {ref.get("sha256", "") for r in facts.in_period() for ref in r.policies}
    policies = Policies(facts)
    for sha in sorted(shas):
        for name, policy in sorted((policies.parsed(sha) or {}).items()):
            records = policy.protect.records if policy.protect is not None else []
            for _, record in records:
                found.setdefault((name, record.id), _record(name, record))
    return list(found.values())


def _record(policy: str, record: HoldRecord) -> dict[str, Any]:
    until = record.until
    return {
        "policy": policy,
        "snapshotId": record.id,
        "reason": record.reason,
        "ticket": record.ticket,
        # As the plans and reports write it: a day, or a UTC timestamp.
        "until": None if until is None else until_text(until),
    }
