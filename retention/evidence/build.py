"""The evidence document: the ledger's facts of a period (gather.py) made into the six
sections every format renders (one model, four renderers, as the run reports are).

Pure: facts in, a JSON-ready document out (times as the plan files write them).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from retention.config.policyfiles import parse_policies
from retention.core.policy.holdrecords import HoldRecord
from retention.core.policy.model import Policy
from retention.core.timestamps import format_timestamp
from retention.errors import EXIT_FAILURES, EXIT_HELD, EXIT_OK, PolicyError
from retention.evidence.controls import controls
from retention.evidence.coverage import Check, Coverage, coverage
from retention.evidence.gather import OUTSIDE, ClusterFacts, EventFact, Facts, RunFact
from retention.evidence.promise import Point, RuleCheck, checks, unchecked_rules
from retention.evidence.restorelog import RestoreTest
from retention.ledger.chain import GENESIS

SCHEMA_VERSION = 1


class Lookup(Protocol):
    """What the document asks the ledger beyond the facts: the events of a snapshot whose
    promised point went, and its last known expiry (gather.Reading answers)."""

    def events_of(self, project_id: str, cluster_id: str, snapshot_id: str) -> list[EventFact]:
        """Every event of one snapshot, oldest first."""
        ...

    def expires_of(self, project_id: str, cluster_id: str, snapshot_id: str) -> datetime | None:
        """Its last known expiry."""
        ...


# The modes whose runs walk the fleet (a cluster's day is checked by one of them).
WALKING = ("plan", "run", "dry-run")
# What a change of ours that can take a restore point away does.
DESTRUCTIVE = ("shorten", "delete", "release")
# The outcomes of a change of ours as the ledger records them.
OUTCOMES = ("sent", "refused", "unknown")


def _ts(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def _day(value: datetime) -> date:
    return value.astimezone(UTC).date()


def document(
    facts: Facts,
    generated: datetime,
    ledger: str,
    lookup: Lookup,
    restore_tests: Sequence[RestoreTest] | None = None,
) -> dict[str, Any]:
    """The evidence of ``facts``'s period, generated at ``generated``; its change log is
    the first entries only (gather.PREVIEW): the JSON and the CSV stream every one."""
    policies = _policies(facts)
    clusters = sorted(facts.clusters, key=lambda c: (c.name, c.project_id, c.cluster_id))
    covered = [_coverage(facts, c) for c in clusters]
    promised = [_retention(facts, c, policies, lookup) for c in clusters]
    changes = _changes(facts, {(c.project_id, c.cluster_id): c for c in clusters})
    chain = _chain(facts)
    doc: dict[str, Any] = {
        "kind": "retention-evidence",
        "schemaVersion": SCHEMA_VERSION,
        "generated": _ts(generated),
        "ledger": ledger,
        "period": {
            "from": facts.period.first.isoformat(),
            "to": facts.period.last.isoformat(),
            "days": len(facts.period.days),
        },
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


# -- policies ----------------------------------------------------------------------------


class _Policies:
    """The policies of the period's runs, read from the texts the ledger kept."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._parsed: dict[str, dict[str, Policy] | None] = {}

    def of(self, run: RunFact, name: str) -> Policy | None:
        """Policy ``name`` as run ``run`` was made with it (None: its text not kept)."""
        ref = next((p for p in run.policies if p.get("name") == name), None)
        if ref is None:
            return None
        found = self.parsed(ref["sha256"])
        return None if found is None else found.get(name)

    def parsed(self, sha256: str) -> dict[str, Policy] | None:
        """The policies of the file kept under ``sha256`` (None: not kept, or not valid)."""
        if sha256 not in self._parsed:
            kept = self.facts.texts.get(sha256)
            self._parsed[sha256] = None if kept is None else _parse(*kept)
        return self._parsed[sha256]


def _parse(path: str, text: str) -> dict[str, Policy] | None:
    try:
        loaded = parse_policies([(Path(path), text.encode())])
    except PolicyError:
        return None
    return {p.policy.name: p.policy for p in loaded}


def _policies(facts: Facts) -> _Policies:
    return _Policies(facts)


# -- 1. scope ----------------------------------------------------------------------------


def _scope(facts: Facts, clusters: list[ClusterFacts], policies: _Policies) -> dict[str, Any]:
    period_runs = facts.in_period()
    by_mode = Counter(r.mode for r in period_runs)
    walked = {_day(r.started) for r in period_runs if r.mode in WALKING and r.ended is not None}
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
                    "from": _ts(run.started),
                    "to": _ts(run.started),
                    "runs": 0,
                    "textKept": policies.parsed(key[1]) is not None,
                },
            )
            entry["to"] = _ts(run.started)
            entry["runs"] += 1
    return {
        "projects": sorted({c.project_id for c in clusters}),
        "clusters": [
            {
                "projectId": c.project_id,
                "clusterId": c.cluster_id,
                "name": c.name,
                "kind": c.kind,
                "firstSeen": _ts(facts.started(c.first_run)),
                "gone": _ts(facts.started(c.gone_run)),
            }
            for c in clusters
        ],
        "runs": {
            "total": len(period_runs),
            "byMode": dict(sorted(by_mode.items())),
            "failed": sum(
                1 for r in period_runs if r.exit_code not in (None, 0, 3) and r.signal is None
            ),
            "stopped": sum(1 for r in period_runs if r.signal is not None),
            "unfinished": sum(1 for r in period_runs if r.ended is None),
            "daysWithoutRun": [d.isoformat() for d in facts.period.days if d not in walked],
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
        found.append(Check(_day(run.started), stale, row.error))
    first = facts.started(c.first_run)
    gone = facts.started(c.gone_run)
    # Days before the oldest run the ledger still has (ledger.keep removed the others)
    # say nothing either way: out of scope, not gaps.
    oldest = min((r.started for r in facts.runs.values()), default=None)
    starts = [_day(t) for t in (first, oldest) if t is not None]
    return coverage(
        facts.period.days,
        found,
        max(starts) if starts else None,
        None if gone is None else _day(gone) - timedelta(days=1),
    )


def _coverage(facts: Facts, c: ClusterFacts) -> dict[str, Any]:
    cov = cluster_coverage(facts, c)
    gap = cov.longest_gap
    return {
        **_who(c),
        "daysInScope": cov.in_scope,
        "daysMet": cov.met,
        # No day could be checked: nothing evidences it (not "met").
        "met": cov.complete and cov.in_scope > 0,
        "longestGap": None
        if gap is None
        else {"from": gap.first.isoformat(), "to": gap.last.isoformat(), "days": gap.days},
        "stale": [
            {"from": g.first.isoformat(), "to": g.last.isoformat(), "days": g.days}
            for g in cov.spans("stale")
        ],
        "daysWithoutRun": cov.count("no-run"),
        "daysWithError": cov.count("error"),
        "daysUnchecked": cov.count("unchecked"),
        "strip": cov.strip,
    }


def _who(c: ClusterFacts) -> dict[str, Any]:
    return {"projectId": c.project_id, "clusterId": c.cluster_id, "name": c.name, "kind": c.kind}


# -- 3. retention as promised ------------------------------------------------------------


def moments(facts: Facts) -> list[datetime]:
    """The ends the ladder is checked at: each month's end in the period, and its end."""
    found = []
    for day in facts.period.days:
        after = day + timedelta(days=1)
        if after.day == 1:
            found.append(datetime(after.year, after.month, after.day, tzinfo=UTC))
    if facts.period.end not in found:
        found.append(facts.period.end)
    return found


def _points(facts: Facts, c: ClusterFacts) -> list[Point]:
    oldest = min((r.started for r in facts.runs.values()), default=None)
    points = []
    for s in c.snapshots:  # complete ones (gather)
        # There until a run saw it gone: the ladder is read at the time of a run, and a
        # snapshot a run listed was a restore point then, its expiry passed or not.
        gone = None
        if s.gone_run is not None:
            gone = facts.started(s.gone_run) or oldest
        points.append(Point(s.snapshot_id, s.created, gone))
    return points


def _retention(
    facts: Facts, c: ClusterFacts, policies: _Policies, lookup: Lookup
) -> dict[str, Any]:
    points = _points(facts, c)
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
            for check in checks(policy, points, run.started):
                found.append(_rule_check(facts, c, check, moment, run.started, lookup))
    return {
        **_who(c),
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
        "asOf": _ts(seen),
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
        when = _ts(e.at) or "?"
        if e.kind in OUTSIDE:
            return f"a change outside retention ({e.kind}, {when})"
        if e.kind == "sent" and e.detail.get("action") in DESTRUCTIVE:
            run = facts.runs.get(e.run_seq)
            by = f" by {run.actor}" if run else ""
            return f"retention changed it ({e.detail.get('action')}, {when}{by})"
    expires = lookup.expires_of(c.project_id, c.cluster_id, snapshot_id)
    if expires is not None and expires <= moment:
        return f"its expiry passed ({_ts(expires)})"
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


# -- 4. changes --------------------------------------------------------------------------


def _changes(facts: Facts, by_key: dict[tuple[str, str], ClusterFacts]) -> dict[str, Any]:
    ours = facts.ours
    acks = _acknowledgements(facts)
    return {
        "sent": ours.sent,
        "byAction": dict(sorted(ours.by_action.items())),
        "byCluster": {k: dict(sorted(v.items())) for k, v in sorted(ours.by_cluster.items())},
        "count": ours.total,
        "log": ours.preview,
        "undos": ours.undos,
        "holds": _holds(facts, by_key),
        "holdRecords": _hold_records(facts),
        "outside": [_outside(facts, by_key, e, acks) for e in facts.events if e.kind in OUTSIDE],
    }


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
        "at": _ts(e.at),
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
            "at": _ts(ack.at),
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
                        "from": _ts(run.started),
                        "runs": 0,
                    },
                )
                entry["to"] = _ts(run.started)
                entry["runs"] += 1
    return sorted(found.values(), key=lambda h: (h["cluster"], h["from"]))


def _hold_records(facts: Facts) -> list[dict[str, Any]]:
    """The hold records (protect.ids with a reason) of the policies in force."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    shas = {ref.get("sha256", "") for r in facts.in_period() for ref in r.policies}
    policies = _Policies(facts)
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
        "until": None if until is None else str(until),
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
        "unfinished": [f"{r.run_id} ({r.mode}, {_ts(r.started)})" for r in unfinished],
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
