"""The evidence document as typed data: what ``retention evidence --format json`` writes,
and the JSON Schema shipped beside this module (evidence.schema.json), generated from it.

build.py makes the document; a test validates every document it builds against this
model (extra keys forbidden), so the schema cannot drift from what is written.
``python -m retention.evidence.model`` writes the schema again after the model changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict

from retention.runfolder.schema import shipped_schema

_STRICT = ConfigDict(extra="forbid")
SCHEMA_FILE = "evidence.schema.json"
Day = str  # YYYY-MM-DD (UTC)
Time = str  # YYYY-MM-DDTHH:MM:SSZ
Section = Literal["chain", "coverage", "retention"]


PeriodEntry = TypedDict("PeriodEntry", {"from": Day, "to": Day, "days": int})
PeriodEntry.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


@with_config(_STRICT)
class NotMet(TypedDict):
    """Something that was not met, listed first."""

    section: Section
    cluster: str | None
    text: str


@with_config(_STRICT)
class ScopeCluster(TypedDict):
    """A cluster in scope."""

    projectId: str
    clusterId: str
    name: str
    kind: str
    firstSeen: Time | None
    gone: Time | None


@with_config(_STRICT)
class Runs(TypedDict):
    """The runs of the period."""

    total: int
    byMode: dict[str, int]
    failed: int
    stopped: int
    unfinished: int
    daysWithoutRun: list[Day]


PolicyInForce = TypedDict(  # the functional form: ``from`` is a keyword
    "PolicyInForce",
    {
        "name": str,
        "sha256": str,
        "path": str | None,
        "from": Time,
        "to": Time,
        "runs": int,
        "textKept": bool,
    },
)
PolicyInForce.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


@with_config(_STRICT)
class Actor(TypedDict):
    """Who ran, applied, approved, undid or acknowledged."""

    actor: str
    roles: list[str]
    runs: int


@with_config(_STRICT)
class Scope(TypedDict):
    """Section 1."""

    projects: list[str]
    clusters: list[ScopeCluster]
    runs: Runs
    policies: list[PolicyInForce]
    actors: list[Actor]


Span = TypedDict("Span", {"from": Day, "to": Day, "days": int})
Span.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


@with_config(_STRICT)
class ClusterCoverage(TypedDict):
    """Section 2, one cluster: its days."""

    projectId: str
    clusterId: str
    name: str
    kind: str
    daysInScope: int
    daysMet: int
    met: bool
    longestGap: Span | None
    stale: list[Span]
    daysWithoutRun: int
    daysWithError: int
    daysUnchecked: int
    strip: str


@with_config(_STRICT)
class MissingPoint(TypedDict):
    """A promised restore point that was not there, and why."""

    bucket: str
    snapshotId: str
    why: str


@with_config(_STRICT)
class RuleCheck(TypedDict):
    """One rule of one policy at one month's (or the period's) end."""

    at: Day
    asOf: Time | None
    policy: str
    rule: str
    count: int
    promised: int
    had: int
    status: Literal["met", "short", "missed"]
    missing: list[MissingPoint]


@with_config(_STRICT)
class RuleSummary(TypedDict):
    """One rule over the period's ends."""

    policy: str
    rule: str
    met: int
    of: int
    text: str


@with_config(_STRICT)
class ClusterRetention(TypedDict):
    """Section 3, one cluster."""

    projectId: str
    clusterId: str
    name: str
    kind: str
    checks: list[RuleCheck]
    rules: list[RuleSummary]
    met: bool
    notChecked: list[str]
    policiesWithoutText: list[str]


@with_config(_STRICT)
class Retained(TypedDict):
    """A snapshot's retention fields."""

    expires: Time | None
    doNotDelete: bool | None


@with_config(_STRICT)
class ChangeEntry(TypedDict):
    """A change of ours: an apply's, a run's or an undo's."""

    at: Time | None
    runId: str | None
    mode: str | None
    actor: str | None
    projectId: str
    clusterId: str
    cluster: str
    snapshotId: str | None
    action: str | None
    outcome: Literal["sent", "refused", "unknown", "pending"]
    status: int | None
    before: Retained
    after: Retained
    approval: str | None
    policy: str | None
    why: str | None


@with_config(_STRICT)
class Acknowledged(TypedDict):
    """Who looked at a change made outside retention."""

    at: Time | None
    by: str | None
    note: str | None


@with_config(_STRICT)
class OutsideEntry(TypedDict):
    """A change made outside retention that a plan caught."""

    at: Time | None
    kind: Literal["changed", "deleted-early", "gone"]
    projectId: str
    clusterId: str
    cluster: str
    snapshotId: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    alertId: str | None
    acknowledged: Acknowledged | None


HoldEntry = TypedDict(  # the functional form: ``from`` is a keyword
    "HoldEntry",
    {
        "cluster": str,
        "clusterId": str,
        "kind": str | None,
        "reason": str | None,
        "from": Time,
        "to": Time,
        "runs": int,
    },
)
HoldEntry.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]


@with_config(_STRICT)
class HoldRecordEntry(TypedDict):
    """A hold record of a policy in force."""

    policy: str
    snapshotId: str
    reason: str
    ticket: str | None
    until: str | None


@with_config(_STRICT)
class ClusterSent(TypedDict):
    """The changes retention sent to one cluster, by action."""

    projectId: str
    clusterId: str
    name: str
    kind: str
    byAction: dict[str, int]


@with_config(_STRICT)
class Changes(TypedDict):
    """Section 4."""

    sent: int
    byAction: dict[str, int]
    byCluster: list[ClusterSent]  # by name, then project: names repeat across projects
    count: int  # changes in the log
    log: list[ChangeEntry]
    undos: list[ChangeEntry]
    holds: list[HoldEntry]
    holdRecords: list[HoldRecordEntry]
    outside: list[OutsideEntry]


@with_config(_STRICT)
class ShardHeads(TypedDict):
    """A shard's chain over the period."""

    shard: str
    headAtStart: str
    headAtEnd: str
    records: int


@with_config(_STRICT)
class AlteredText(TypedDict):
    """A policy text the ledger keeps that does not hash to its sha256."""

    sha256: str
    path: str


@with_config(_STRICT)
class PolicyTexts(TypedDict):
    """The policy texts the ledger keeps, checked against their sha256."""

    kept: int
    altered: list[AlteredText]


@with_config(_STRICT)
class Chain(TypedDict):
    """Section 5."""

    verified: bool
    problem: str | None
    brokenAt: str | None
    shards: list[ShardHeads]
    unfinished: list[str]
    policyTexts: PolicyTexts


@with_config(_STRICT)
class Control(TypedDict):
    """Section 6, one control."""

    control: str
    asks: str
    sections: list[str]
    status: Literal["evidenced", "partly", "not evidenced"]
    why: str


@with_config(_STRICT)
class RestoreTest(TypedDict):
    """A restore test the team recorded (--restore-log)."""

    date: Day
    cluster: str
    result: str
    snapshotId: str | None
    by: str | None
    note: str | None


@with_config(_STRICT)
class EvidenceDocument(TypedDict):
    """The whole evidence of a period."""

    kind: Literal["retention-evidence"]
    schemaVersion: Literal[1]
    generated: Time | None
    ledger: str
    period: PeriodEntry
    exitCode: Literal[0, 1, 3]
    notMet: list[NotMet]
    scope: Scope
    coverage: list[ClusterCoverage]
    retention: list[ClusterRetention]
    changes: Changes
    chain: Chain
    controls: list[Control]
    restoreTests: list[RestoreTest] | None


DOCUMENT: TypeAdapter[EvidenceDocument] = TypeAdapter(EvidenceDocument)


def generated_schema() -> dict[str, Any]:
    """The JSON Schema of the evidence document, generated from the model."""
    schema = DOCUMENT.json_schema()
    schema["$id"] = "https://retention.example/schemas/retention-evidence-v1.json"
    schema["title"] = "retention evidence"
    return schema


def evidence_json_schema() -> dict[str, Any]:
    """The JSON Schema of the evidence document, as shipped."""
    return shipped_schema("retention.evidence", SCHEMA_FILE)


if __name__ == "__main__":  # pragma: no cover - regenerates the shipped schema
    target = Path(__file__).with_name(SCHEMA_FILE)
    target.write_text(json.dumps(generated_schema(), indent=2) + "\n")
    sys.stdout.write(f"wrote {target}\n")
