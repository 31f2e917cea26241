"""The evidence document: the ledger's facts of a period (gather.py) made into the six
sections every format renders (one model, four renderers, as the run reports are).

Pure: facts in, a JSON-ready document out (times as the plan files write them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from retention.errors import EXIT_FAILURES, EXIT_HELD, EXIT_OK
from retention.evidence.changes import changes_of
from retention.evidence.controls import controls
from retention.evidence.coverage import Check, Coverage, coverage
from retention.evidence.gather import ClusterFacts, Facts, RunFact
from retention.evidence.ladders import Lookup, retention_of
from retention.evidence.policies import Policies
from retention.evidence.restorelog import RestoreTest
from retention.evidence.values import WALKING, day, ts, who
from retention.ledger.chain import GENESIS

SCHEMA_VERSION = 1


def document(
    facts: Facts,
    generated: datetime,
    ledger: str,
    lookup: Lookup,
    restore_tests: Sequence[RestoreTest] | None = None,
) -> dict[str, Any]:
    """The evidence of ``facts``'s period, generated at ``generated``; its change log is
    the first entries only (log.PREVIEW): the JSON and the CSV stream every one."""
    policies = Policies(facts)
    clusters = sorted(facts.clusters, key=lambda c: (c.name, c.project_id, c.cluster_id))
    covered = [_coverage(facts, c) for c in clusters]
    promised = [retention_of(facts, c, policies, lookup) for c in clusters]
    changes = changes_of(facts, {(c.project_id, c.cluster_id): c for c in clusters})
    chain = _chain(facts)
    doc: dict[str, Any] = {
        "kind": "retention-evidence",
        "schemaVersion": SCHEMA_VERSION,
        "generated": ts(generated),
        "ledger": ledger,
        "period": facts.period.document(),
        "scope": _scope(facts, clusters, policies),
        "coverage": covered,
        "retention": promised,
        "changes": changes,
        "chain": chain,
        "restoreTests": None
        if restore_tests is None
        else [t.document() for t in sorted(restore_tests, key=lambda t: (t.day, t.cluster))],
    }
    doc["notMet"] = _not_met(doc)
    doc["controls"] = controls(doc)
    doc["exitCode"] = (
        EXIT_FAILURES if not chain["verified"] else EXIT_HELD if doc["notMet"] else EXIT_OK
    )
    return doc


# -- 1. scope ----------------------------------------------------------------------------


def _scope(facts: Facts, clusters: list[ClusterFacts], policies: Policies) -> dict[str, Any]:
    period_runs = facts.in_period()
    by_mode = Counter(r.mode for r in period_runs)
    walked = {day(r.started) for r in period_runs if r.mode in WALKING and r.ended is not None}
    in_force: dict[tuple[str, str], dict[str, Any]] = {}
    for run in period_runs:
        for ref in run.policies:
            key = (ref.get("name", ""), ref.get("sha256", ""))
            entry = in_force.setdefault(
                key,
                {
                    "name": key[0],
                    "sha256": key[1],
                    "path": ref.get("path"),
                    "from": ts(run.started),
                    "to": ts(run.started),
                    "runs": 0,
                    "textKept": policies.parsed(key[1]) is not None,
                },
            )
            entry["to"] = ts(run.started)
            entry["runs"] += 1
    return {
        "projects": sorted({c.project_id for c in clusters}),
        "clusters": [
            {
                "projectId": c.project_id,
                "clusterId": c.cluster_id,
                "name": c.name,
                "kind": c.kind,
                "firstSeen": ts(facts.started(c.first_run)),
                "gone": ts(facts.started(c.gone_run)),
            }
            for c in clusters
        ],
        "runs": {
            "total": len(period_runs),
            "byMode": dict(sorted(by_mode.items())),
            "failed": sum(
                1
                for r in period_runs
                if r.exit_code not in (None, EXIT_OK, EXIT_HELD) and r.signal is None
            ),
            "stopped": sum(1 for r in period_runs if r.signal is not None),
            "unfinished": sum(1 for r in period_runs if r.ended is None),
            "daysWithoutRun": [d.isoformat() for d in facts.period.dates if d not in walked],
        },
        "policies": sorted(in_force.values(), key=lambda p: (p["name"], p["from"])),
        "actors": _actors(facts, period_runs),
    }


def _actors(facts: Facts, period_runs: list[RunFact]) -> list[dict[str, Any]]:
    sent_by_run = facts.ours.sent_by_run
    roles: dict[str, set[str]] = defaultdict(set)
    counts: Counter[str] = Counter()
    for run in period_runs:
        counts[run.actor] += 1
        if sent_by_run[run.seq]:
            roles[run.actor].add("undid" if run.mode == "undo" else "applied")
        approver = run.approvals.get("by")
        if run.approvals.get("clusters") and approver:
            roles[str(approver)].add("approved")
        if run.mode == "ack":
            roles[run.actor].add("acknowledged")
        roles[run.actor].add("ran")
    return [
        {"actor": actor, "roles": sorted(roles[actor]), "runs": counts[actor]}
        for actor in sorted(roles)
    ]


# -- 2. coverage -------------------------------------------------------------------------


def cluster_coverage(facts: Facts, c: ClusterFacts) -> Coverage:
    """The coverage of cluster ``c`` over the period."""
    found = []
    checked = False
    for row in c.rows:
        run = facts.runs.get(row.run_seq)
        if run is None or run.mode not in WALKING:
            continue
        stale = row.stale
        # A cluster that had a freshness check and has none now lost its last restorable
        # snapshot (with nothing expected, a plan checks nothing): stale, not unchecked.
        if stale is None and checked and not row.error:
            stale = True
        checked = checked or stale is not None
        found.append(Check(day(run.started), stale, row.error))
    first = facts.started(c.first_run)
    gone = facts.started(c.gone_run)
    # Days before the oldest run the ledger still has (ledger.keep removed the others)
    # say nothing either way: out of scope, not gaps.
    starts = [day(t) for t in (first, facts.oldest) if t is not None]
    return coverage(
        facts.period.dates,
        found,
        max(starts) if starts else None,
        None if gone is None else day(gone) - timedelta(days=1),
    )


def _coverage(facts: Facts, c: ClusterFacts) -> dict[str, Any]:
    cov = cluster_coverage(facts, c)
    gap = cov.longest_gap
    return {
        **who(c),
        "daysInScope": cov.in_scope,
        "daysMet": cov.met,
        # No day could be checked: nothing evidences it (not "met").
        "met": cov.complete and cov.in_scope > 0,
        "longestGap": None if gap is None else gap.document(),
        "stale": [g.document() for g in cov.spans("stale")],
        "daysWithoutRun": cov.count("no-run"),
        "daysWithError": cov.count("error"),
        "daysUnchecked": cov.count("unchecked"),
        "strip": cov.strip,
    }


# -- 5. the chain ------------------------------------------------------------------------


def _chain(facts: Facts) -> dict[str, Any]:
    """Whether the chain holds, and per shard its head before the period and at its end:
    a record is chained when its run ends, so the heads go by the runs' ends; a shard
    whose oldest records ledger.keep removed starts at its anchor."""
    p = facts.period
    shards = sorted({r.shard for r in facts.runs.values()})
    pruned = facts.chain.pruned if facts.chain is not None else {}
    heads = []
    for shard in shards:
        chained = [
            r
            for r in facts.runs.values()
            if r.shard == shard and r.hash is not None and r.ended is not None
        ]
        chained.sort(key=lambda r: r.position or 0)
        anchor = pruned.get(shard)
        start = anchor[1] if anchor is not None else GENESIS
        before = [r for r in chained if r.ended is not None and r.ended < p.start]
        through = [r for r in chained if r.ended is not None and r.ended < p.end]
        start = before[-1].hash or start if before else start
        heads.append(
            {
                "shard": shard,
                "headAtStart": start,
                "headAtEnd": (through[-1].hash or start) if through else start,
                "records": len(through) - len(before),
            }
        )
    unfinished = [r for r in facts.in_period() if r.position is None]
    altered = [{"sha256": sha, "path": path} for sha, path in sorted(facts.altered.items())]
    return {
        "verified": facts.broken is None and not altered,
        "problem": facts.broken
        or (
            f"{len(altered)} policy texts the ledger keeps do not hash to their sha256: "
            "they were edited in the database"
            if altered
            else None
        ),
        "brokenAt": facts.broken_at,
        "shards": heads,
        "unfinished": [f"{r.run_id} ({r.mode}, {ts(r.started)})" for r in unfinished],
        "policyTexts": {"kept": len(facts.texts), "altered": altered},
    }


# -- what was not met ------------------------------------------------------------------


def _not_met(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if not doc["chain"]["verified"]:
        found.append({"section": "chain", "cluster": None, "text": doc["chain"]["problem"]})
    for cov in doc["coverage"]:
        if not cov["met"]:
            gap = cov["longestGap"]
            text = f"coverage {cov['daysMet']} of {cov['daysInScope']} days"
            if not cov["daysInScope"]:
                text = "no day could be checked: no run recorded a freshness check of it"
            if gap:
                text += f", longest gap {gap['days']} days ({gap['from']} to {gap['to']})"
            found.append({"section": "coverage", "cluster": cov["name"], "text": text})
    for ret in doc["retention"]:
        if ret["policiesWithoutText"]:
            names = ", ".join(ret["policiesWithoutText"])
            text = f"the ledger has not the text of {names}: what it promised cannot be checked"
            found.append({"section": "retention", "cluster": ret["name"], "text": text})
        for rule in ret["rules"]:
            if rule["met"] < rule["of"]:
                found.append(
                    {
                        "section": "retention",
                        "cluster": ret["name"],
                        "text": f"{rule['policy']}: {rule['text']}",
                    }
                )
    return found


def listed(values: Iterable[str]) -> str:
    """Names in a sentence."""
    items = list(values)
    return ", ".join(items) if items else "none"
