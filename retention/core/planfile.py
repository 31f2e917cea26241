"""The plan file (``plan.json``, format ``retention-plan/v2``) and its decisions: their
model, and the JSON Schema generated from it (runfolder/planwrite.py writes the files,
runfolder/planread.py reads them back through this model).

The model is a set of typed records (``PlanHead``, ``ClusterEntry``, ``Change``,
``DecisionRecord``) holding plain values. Every reader (apply, the report, explain) gets them
back validated by the same types, through pydantic's TypeAdapter, and the JSON Schema
shipped with the run folder's modules (runfolder/plan.schema.json) is generated from the
same types (``python -m retention.runfolder.schema`` writes it; a test fails when it is out
of date). A head is plan.json without its cluster entries, which a reader takes from the
file as it needs them (runfolder.planread.PlanFile).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, NotRequired

from pydantic import (
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    with_config,
)
from typing_extensions import TypedDict

from retention.core.freshness import Source
from retention.core.ids import FORBIDDEN_PATTERN, ID_PATTERN, MAX_ID_LENGTH
from retention.core.model import Action, ChangeAction, Reason, SnapshotView, State
from retention.core.restorepoints import Grain
from retention.core.snapshot import Kind
from retention.core.timestamps import AwareUtcDatetime

# v2: plan.json is the head on one line, then its cluster entries; the changes are the
# decisions that carry a body, in decisions.jsonl.zst beside it. v1 (plan.json with its
# lists, plain decisions.jsonl) is refused by name; the schema still names it, as the
# format of plans this version refuses.
FORMAT: Literal["retention-plan/v2"] = "retention-plan/v2"
OLD_FORMAT = "retention-plan/v1"
FormatName = Literal["retention-plan/v1", "retention-plan/v2"]
LISTS = ("changes", "held", "advisory")
ListName = Literal["changes", "held", "advisory"]

# An id apply may put in a path: what retention.core.ids carries (its docstring says why).
Id = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN),
    Field(json_schema_extra={"not": {"pattern": FORBIDDEN_PATTERN}}),
]
# An id the plan names but never puts in a path: a cluster or config server held because
# its id is not an Id (discovery does not walk it), a member of a sharded cluster, a
# snapshot in decisions.jsonl. The planner writes what the service said.
AnyId = str
Timestamp = AwareUtcDatetime

_STRICT = ConfigDict(extra="forbid")


@with_config(_STRICT)
class Observed(TypedDict):
    """A snapshot's state when it was planned: what compare-and-swap checks at apply time."""

    doNotDelete: bool
    expires: Timestamp | None


@with_config(_STRICT)
class Body(TypedDict, total=False):
    """A PATCH body as planned (which members go with which action: ``body_problem``)."""

    doNotDelete: bool
    expires: Timestamp


@with_config(_STRICT)
class Change(TypedDict):
    """One PATCH of a plan and why (an entry of ``changes``, ``held`` or ``advisory``)."""

    projectId: Id
    clusterId: Id
    clusterName: str
    snapshotId: Id
    created: Timestamp
    # The space the snapshot takes (its parts' storageSizeBytes), None when unknown.
    storageBytes: Annotated[int, Field(ge=0)] | None
    action: ChangeAction
    # Whether a safety gate holds it (core.model.is_destructive, the one definition).
    destructive: bool
    # At send time a destructive expiry is max(planned, now + grace): the full grace.
    grace: Annotated[int, Field(ge=0)]
    observed: Observed
    body: Body
    policy: str
    reasons: list[Reason]
    expiresAfter: Timestamp | None
    held: NotRequired[str]
    # As the decision line's cutSeconds: what the change takes off the existing expiry.
    cutSeconds: NotRequired[Annotated[int, Field(ge=1)]]


@with_config(_STRICT)
class DecisionRecord(TypedDict):
    """One line of decisions.jsonl: a snapshot, what the plan decided, and every reason."""

    projectId: Id
    clusterId: Id
    clusterName: str
    kind: Kind
    snapshotId: AnyId
    created: Timestamp
    storageBytes: Annotated[int, Field(ge=0)] | None
    complete: bool
    consistent: bool
    observed: Observed
    state: State
    action: Action
    destructive: bool
    reasons: list[Reason]
    policies: list[str]
    expiresAfter: Timestamp | None
    body: Body | None
    held: str | None
    advisory: bool
    # The cluster's grace in seconds: what a change needs at send time (v2; v1 lines lack it).
    grace: NotRequired[Annotated[int, Field(ge=0)]]
    # How many seconds the change takes off the expiry the snapshot already has
    # (core.approving.cut_seconds): only on a change that writes an earlier expiry.
    cutSeconds: NotRequired[Annotated[int, Field(ge=1)]]


@with_config(_STRICT)
class HoldEntry(TypedDict):
    """Why a cluster's destructive changes are held."""

    kind: Literal["alert", "max_expire_fraction", "walk", "id", "outside"]
    reason: str
    alertId: str | None
    # Where the setting that holds is written ("policies/prod.yaml:24"); None for walk and id.
    # Optional: plans written before it was added still read.
    setting: NotRequired[str | None]


@with_config(_STRICT)
class MemberEntry(TypedDict):
    """A shard or config-server replica set of a sharded cluster: listed, not walked."""

    clusterId: AnyId
    typeName: str | None
    shardName: str | None
    replicaSetName: str | None


@with_config(_STRICT)
class MissingEntry(TypedDict):
    """A hole in a tier of restore points: ``count`` buckets (``unit``) with no restore
    point between two of its points, named from ``first`` to ``last``."""

    after: Timestamp
    before: Timestamp
    count: Annotated[int, Field(ge=1)]
    unit: str
    first: str
    last: str


@with_config(_STRICT)
class TierEntry(TypedDict):
    """A rung of the ladder: "daily for 7 days" (``every`` for ``span`` ``unit``s)."""

    grain: Grain
    every: str
    everySeconds: Annotated[int, Field(ge=0)]
    reaches: Timestamp
    points: Annotated[int, Field(ge=2)]
    span: Annotated[int, Field(ge=1)]
    unit: str
    missing: list[MissingEntry]
    text: str


@with_config(_STRICT)
class LadderEntry(TypedDict):
    """Restore points read off a set of snapshots: how many, the newest and oldest, and the
    ladder."""

    count: Annotated[int, Field(ge=0)]
    newest: Timestamp | None
    oldest: Timestamp | None
    gaps: bool
    tiers: list[TierEntry]
    text: str


@with_config(_STRICT)
class RestorePointsEntry(LadderEntry):
    """What the cluster can be restored to once the plan is applied as it stands (held
    changes not sent), read off the snapshots it leaves in place. A cluster with held
    changes also has its ladder ``today``, ``asPlanned`` (the same as the entry's own) and
    ``ifApproved`` (held changes sent), and what ``approving`` removes in words. Optional:
    plans written before they were added still read."""

    today: NotRequired[LadderEntry]
    asPlanned: NotRequired[LadderEntry]
    ifApproved: NotRequired[LadderEntry]
    approving: NotRequired[str]


@with_config(_STRICT)
class CutEntry(TypedDict):
    """The largest cut of a held cluster's changes: the snapshot, how many seconds come off
    its expiry, the expiry it has and the one the change writes."""

    snapshotId: AnyId
    cutSeconds: Annotated[int, Field(ge=1)]
    expires: Timestamp
    expiresAfter: Timestamp


@with_config(_STRICT)
class HeldChangesEntry(TypedDict):
    """A held cluster's changes summed up (core.approving.held_cost): how many of each
    action, the storage they would give back, the oldest snapshot they touch, the largest
    cut of an existing expiry, and how many cuts are long (30 days or more)."""

    byAction: dict[str, int]
    bytes: Annotated[int, Field(ge=0)]
    oldestSnapshotId: AnyId
    oldestCreated: Timestamp
    largestCut: CutEntry | None
    longCuts: Annotated[int, Field(ge=0)]


@with_config(_STRICT)
class FreshnessEntry(TypedDict):
    """The age of the cluster's newest restorable snapshot against what is expected."""

    newest: Timestamp | None
    ageSeconds: Annotated[int, Field(ge=0)] | None
    withinSeconds: Annotated[int, Field(ge=0)]
    expectedFrom: Source
    stale: bool
    text: str


@with_config(_STRICT)
class ClusterEntry(TypedDict):
    """A cluster (or config server) of the plan: its policies, holds, errors and counts."""

    projectId: Id
    clusterId: AnyId
    name: str
    kind: Kind
    # The clusters list's typeName (None for listed ids and config servers), and the rows
    # that belong to this cluster and were not walked on their own.
    typeName: str | None
    members: list[MemberEntry]
    policies: list[str]
    holds: list[HoldEntry]
    errors: list[str]
    counts: dict[str, int]
    graceSeconds: Annotated[int, Field(ge=0)]
    releaseProtection: bool
    # What the cluster's destructive changes would free: those the plan sends, and those a
    # gate holds (sums of the snapshots' storageBytes; unknown sizes count as 0).
    bytesGivenBack: Annotated[int, Field(ge=0)]
    bytesHeld: Annotated[int, Field(ge=0)]
    # The earliest time from which the service may delete a snapshot this plan expires.
    expiresFrom: Timestamp | None
    # Its restore points once the plan is applied, and whether its backups stopped: absent
    # when its walk failed, and in plans written before they were added. A cluster with no
    # snapshot and no expectation is not checked (no newestRestorable).
    restorePoints: NotRequired[RestorePointsEntry]
    newestRestorable: NotRequired[FreshnessEntry]
    # What approving its held changes costs: only on a cluster with held changes.
    heldChanges: NotRequired[HeldChangesEntry]


@with_config(_STRICT)
class ProjectEntry(TypedDict):
    """A project of the plan: its id and, when the API gave it, its name."""

    projectId: Id
    name: str | None


@with_config(_STRICT)
class PolicyEntry(TypedDict):
    """A policy the plan was made with, and the sha256 of its file."""

    name: str
    sha256: str


@with_config(_STRICT)
class Summary(TypedDict):
    """Counts by state and by action, held and failed clusters."""

    clusters: int
    snapshots: int
    byState: dict[str, int]
    byAction: dict[str, int]
    clustersHeld: int
    clustersWithErrors: int
    # Clusters and config servers no policy matches: never changed, so never cleaned up.
    clustersUnmanaged: int
    bytesGivenBack: int
    bytesHeld: int
    expiresFrom: Timestamp | None
    # Clusters whose newest restorable snapshot is older than expected (backups that
    # stopped). Optional: plans written before it was added still read.
    clustersStale: NotRequired[int]
    # Changes (sent or held) that cut an existing expiry by 30 days or more
    # (core.approving.LONG_CUT). Optional, as clustersStale.
    longCuts: NotRequired[int]


@with_config(_STRICT)
class RetainedEntry(TypedDict):
    """A snapshot's retention fields as the ledger last knew them or the walk found them."""

    complete: bool
    expires: Timestamp | None
    doNotDelete: bool


@with_config(_STRICT)
class OutsideChangeEntry(TypedDict):
    """A change made outside retention since the ledger last looked (core.outside):
    ``changed`` (expires or doNotDelete, before and after), ``deleted-early`` (gone before
    its expiry, before only) or ``gone`` (a cluster whose restore points all went: no
    snapshot id, ``restorePoints`` and ``newest`` say what it had)."""

    kind: Literal["changed", "deleted-early", "gone"]
    projectId: Id
    clusterId: AnyId
    clusterName: str
    snapshotId: AnyId | None
    before: RetainedEntry | None
    after: RetainedEntry | None
    restorePoints: NotRequired[Annotated[int, Field(ge=0)]]
    newest: NotRequired[Timestamp | None]
    # The service's audit alert that names the same cluster and event, when one is open.
    alertId: str | None
    text: str


@with_config(_STRICT)
class LedgerEntry(TypedDict):
    """What the ledger said of the plan's walk: ``baseline`` when it knew nothing before
    (no drift can be told on a first run)."""

    baseline: bool


@with_config(_STRICT)
class HoldRecordEntry(TypedDict):
    """A hold record (an entry of ``protect.ids`` written as a mapping) of a policy that
    matched a cluster of the plan: why, the ticket, the end, whether it still protects at
    ``evaluatedAt``, where it is written, and the cluster and state of its snapshot (null
    when no cluster of the plan that the policy matched has a snapshot of that id)."""

    policy: str
    snapshotId: str
    reason: str
    ticket: str | None
    until: str | None
    ends: Timestamp | None
    inForce: bool
    setting: str
    projectId: Id | None
    clusterId: Id | None
    clusterName: str | None
    state: str | None


@with_config(_STRICT)
class DecisionsEntry(TypedDict):
    """Which decisions file belongs to a plan: the sha256 of its bytes and its records."""

    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    records: Annotated[int, Field(ge=0)]


@with_config(_STRICT)
class PlanHead(TypedDict):
    """The plan without its cluster entries and its decisions: what summaries, reports and
    checks read first."""

    format: FormatName
    createdAt: Timestamp
    evaluatedAt: Timestamp
    # Made with --at: a question about another time, never something to apply.
    whatIf: bool
    baseUrl: Annotated[str, Field(min_length=1)]
    serviceVersion: str | None
    leaseSeconds: Annotated[float, Field(ge=0)]
    projects: list[ProjectEntry]
    policies: list[PolicyEntry]
    # Policies that matched no cluster or config server of this plan (of its shard, when
    # sharded): a glob that matches nothing leaves clusters unmanaged without an error.
    unusedPolicies: list[str]
    summary: Summary
    # Here in the schema (PlanDocument) come the clusters, which the file holds last.
    # Every hold record of the policies that matched, in force or ended. Written only when
    # there is one: plans without hold records (and those written before) lack it.
    holdRecords: NotRequired[list[HoldRecordEntry]]
    # Facts about the plan worth knowing that ask nothing of anyone (its config-server
    # decisions come from deprecated endpoints and are advisory): not warnings. Optional:
    # plans written before it was added still read.
    notices: NotRequired[list[str]]
    # What discovery could not place (a shard whose cluster is not listed, a typeName we do
    # not know): not failures, but worth a look.
    warnings: list[str]
    errors: list[str]
    # The decisions file beside the plan (v2): its sha256 and number of lines, so that a
    # plan is never applied with another plan's decisions.
    decisions: NotRequired[DecisionsEntry]
    # What changed outside retention since the ledger last looked, and what the ledger
    # said: written when the plan was made with a ledger (plans without are still read).
    outsideChanges: NotRequired[list[OutsideChangeEntry]]
    ledger: NotRequired[LedgerEntry]


@with_config(_STRICT)
class PlanDocument(PlanHead):
    """The whole of plan.json: the head and its cluster entries, which the file holds last,
    an entry a line, so that a reader streams them (planwrite.py)."""

    clusters: list[ClusterEntry]


HEAD = TypeAdapter(PlanHead)
CLUSTER = TypeAdapter(ClusterEntry)
CHANGE = TypeAdapter(Change)
DECISION = TypeAdapter(DecisionRecord)


def generated_schema() -> dict[str, Any]:
    """The JSON Schema of plan.json, generated from the model; ``$defs.DecisionRecord`` is
    a line of the decisions file beside it."""
    schema = _clusters_after_summary(TypeAdapter(PlanDocument).json_schema())
    record = DECISION.json_schema()
    defs = {**schema.pop("$defs", {}), **record.pop("$defs", {}), "DecisionRecord": record}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://retention.example/schemas/retention-plan-v2.json",
        **schema,
        "$defs": dict(sorted(defs.items())),
        "title": f"retention plan ({FORMAT})",
        "description": "A saved dry-run plan: what retention would change and why. Its "
        "decisions, one per snapshot, are the lines of decisions.jsonl.zst beside it "
        "(each a DecisionRecord).",
    }


def _clusters_after_summary(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of PlanDocument with ``clusters`` where plan.json's members name it, after
    ``summary`` (a sub-TypedDict's own member comes last)."""

    def placed(names: Iterable[str]) -> list[str]:
        order = []
        for name in names:
            if name != "clusters":
                order.append(name)
            if name == "summary":
                order.append("clusters")
        return order

    properties = schema["properties"]
    schema["properties"] = {name: properties[name] for name in placed(properties)}
    schema["required"] = placed(schema["required"])
    return schema


def list_of(record: DecisionRecord) -> ListName | None:
    """Which kind of change a decision is: ``advisory`` (a config server's, never sent),
    ``held`` (a gate holds it) or ``changes`` (apply sends it); None without a change.
    The one rule the writer counts by and the reader lists by."""
    if record["action"] == "none" or record["body"] is None:
        return None
    return "advisory" if record["advisory"] else "held" if record["held"] else "changes"


def cluster_of(
    entries: Iterable[ClusterEntry], project_id: str, cluster_id: str
) -> ClusterEntry | None:
    """The entry of one cluster (or config server) of a plan, or None."""
    return next(
        (c for c in entries if (c["projectId"], c["clusterId"]) == (project_id, cluster_id)),
        None,
    )


def snapshot_view(record: DecisionRecord) -> SnapshotView:
    """The snapshot of a decision as the planner saw it (what decide reads of it)."""
    observed = record["observed"]
    return SnapshotView(
        record["snapshotId"],
        record["created"],
        record["complete"],
        observed["doNotDelete"],
        observed["expires"],
        record["consistent"],
        record["storageBytes"],
    )
