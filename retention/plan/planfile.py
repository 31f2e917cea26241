"""The plan file (``plan.json``, format ``retention-plan/v1``) and ``decisions.jsonl``.

A saved plan is the unit of review and of apply (DESIGN.md section 6). ``PlanBuilder``
takes cluster plans one at a time, in a fixed order: each decision becomes a line of
decisions.jsonl at once (so memory stays flat), and the plan keeps only what apply and
review need: per-cluster summaries, the changes, the held and the advisory ones. Nothing
in the output depends on set or dict ordering: the same inputs and ``now`` give the same
bytes, ``createdAt`` aside. The JSON Schema ships beside this file (plan.schema.json).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any, TextIO

from retention.plan.model import ClusterPlan, Decision
from retention.timestamps import format_timestamp

FORMAT = "retention-plan/v1"


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of the plan file."""
    text = resources.files("retention.plan").joinpath("plan.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass(frozen=True)
class PolicyDigest:
    """A policy's name and the sha256 of the file it came from."""

    name: str
    sha256: str
    path: str = ""


def _ts(value: datetime | None) -> str | None:
    return format_timestamp(value) if value is not None else None


def decision_record(plan: ClusterPlan, d: Decision) -> dict[str, Any]:
    """One line of decisions.jsonl: everything needed to explain this snapshot."""
    t, s = plan.target, d.snapshot
    return {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "clusterName": t.name,
        "kind": t.kind,
        "snapshotId": s.id,
        "created": _ts(s.created),
        "complete": s.complete,
        "consistent": s.consistent,
        "observed": s.observed(),
        "state": d.state,
        "action": d.action,
        "reasons": d.reasons,
        "policies": d.policies,
        "expiresAfter": _ts(d.expires_after),
        "body": d.patch.to_api() if d.patch is not None else None,
        "held": d.held,
        "advisory": d.advisory,
    }


def change_record(plan: ClusterPlan, d: Decision) -> dict[str, Any]:
    """One entry of ``changes`` (or ``held``/``advisory``): a PATCH and why."""
    assert d.patch is not None  # noqa: S101 - only decisions with a patch get here
    entry: dict[str, Any] = {
        "projectId": plan.target.project_id,
        "clusterId": plan.target.cluster_id,
        "clusterName": plan.target.name,
        "snapshotId": d.snapshot.id,
        "action": d.action,
        "observed": d.snapshot.observed(),
        "body": d.patch.to_api(),
        "policy": ", ".join(d.policies) or "safety",
        "reasons": d.reasons,
        "expiresAfter": _ts(d.expires_after),
    }
    if d.held:
        entry["held"] = d.held
    return entry


@dataclass
class PlanBuilder:
    """Collects cluster plans into a plan document, streaming decisions as they come."""

    evaluated_at: datetime
    created_at: datetime
    base_url: str
    policies: list[PolicyDigest]
    decisions_out: TextIO | None = None
    lease_seconds: float | None = None
    service_version: str | None = None
    clusters: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    advisory: list[dict[str, Any]] = field(default_factory=list)
    by_state: Counter[str] = field(default_factory=Counter)
    by_action: Counter[str] = field(default_factory=Counter)

    def add(self, plan: ClusterPlan) -> None:
        """Take one cluster's plan: write its decisions, keep its summary and changes."""
        for d in plan.decisions:
            if self.decisions_out is not None:
                self.decisions_out.write(json.dumps(decision_record(plan, d)) + "\n")
            self.by_state[d.state] += 1
            if d.action == "none":
                continue
            if d.advisory:
                self.by_action["advisory"] += 1
                self.advisory.append(change_record(plan, d))
            elif d.held:
                self.by_action["held"] += 1
                self.held.append(change_record(plan, d))
            else:
                self.by_action[d.action] += 1
                self.changes.append(change_record(plan, d))
        t = plan.target
        self.clusters.append(
            {
                "projectId": t.project_id,
                "clusterId": t.cluster_id,
                "name": t.name,
                "kind": t.kind,
                "policies": plan.policies,
                "holds": [
                    {"kind": h.kind, "reason": h.reason, "alertId": h.alert_id} for h in plan.holds
                ],
                "errors": plan.errors,
                "counts": plan.counts(),
            }
        )

    def extend(self, plans: Iterable[ClusterPlan]) -> None:
        """Take several cluster plans in order."""
        for plan in plans:
            self.add(plan)

    def document(self) -> dict[str, Any]:
        """The plan file's content (sorted, so that equal inputs give equal bytes)."""

        def change_key(c: dict[str, Any]) -> tuple[str, str, str]:
            return (c["projectId"], c["clusterId"], c["snapshotId"])

        clusters = sorted(self.clusters, key=lambda c: (c["projectId"], c["kind"], c["clusterId"]))
        return {
            "format": FORMAT,
            "createdAt": format_timestamp(self.created_at),
            "evaluatedAt": format_timestamp(self.evaluated_at),
            "baseUrl": self.base_url,
            "serviceVersion": self.service_version,
            "leaseSeconds": self.lease_seconds,
            "policies": [
                {"name": p.name, "sha256": p.sha256}
                for p in sorted(self.policies, key=lambda p: p.name)
            ],
            "summary": self.summary(),
            "clusters": clusters,
            "changes": sorted(self.changes, key=change_key),
            "held": sorted(self.held, key=change_key),
            "advisory": sorted(self.advisory, key=change_key),
        }

    def summary(self) -> dict[str, Any]:
        """Counts by state and by action, holds and errors."""
        return {
            "clusters": len(self.clusters),
            "snapshots": sum(self.by_state.values()),
            "byState": dict(sorted(self.by_state.items())),
            "byAction": dict(sorted(self.by_action.items())),
            "clustersHeld": sum(1 for c in self.clusters if c["holds"]),
            "clustersWithErrors": sum(1 for c in self.clusters if c["errors"]),
        }


def dumps(document: dict[str, Any]) -> str:
    """The plan file's text."""
    return json.dumps(document, indent=2) + "\n"
