"""pydantic v2 models of every resource of the Ops Manager API that retention reads.

Parsing is tolerant where the spec is vague and strict where our safety depends on it:
- unknown fields are ignored, so a newer server cannot break us;
- every optional field may be absent; a snapshot with no ``complete`` flag counts as
  incomplete and one with no ``doNotDelete`` as unprotected, so a missing field never makes
  a snapshot look safe to expire;
- strings whose values the spec lists as "not shown" (replicaState, compressionSetting,
  event types beyond the listed ones, alert status) stay plain strings;
- timestamps accept offsets and are normalised to UTC (``UtcDatetime``).

The body of a snapshot PATCH is the core's (``retention.core.snapshot.SnapshotPatch``).
These models are the only code the simulator shares with the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from retention.api.walked import total_storage
from retention.core.timestamps import UtcDatetime


class ApiModel(BaseModel):
    """Base of the resource models: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )

    def to_api(self) -> dict[str, Any]:
        """Return the resource as the API would send it (aliases, UTC strings, no None fields)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Link(ApiModel):
    """A hyperlink; every ``links`` array holds at least one with rel ``self``."""

    href: str
    rel: str


class BsonTimestamp(ApiModel):
    """A creation or oplog point: the wall time and the operation order at that time."""

    date: UtcDatetime
    increment: int | None = None


class NamespaceFilterList(ApiModel):
    """Namespaces included or excluded from a snapshot; filterType spellings vary, kept as-is."""

    filter_list: list[str] = Field(default_factory=list)
    filter_type: str | None = None


class SnapshotPart(ApiModel):
    """One replica set's part of a cluster snapshot."""

    cluster_id: str | None = None
    completed_time: str | None = None
    compression_setting: str | None = None
    data_size_bytes: float | None = None
    encryption_enabled: bool | None = None
    fcv: str | None = None
    file_size_bytes: float | None = None
    machine_id: str | None = None
    # The spec spells it masterKeyUUID, which the camelCase generator would not produce.
    master_key_uuid: str | None = Field(default=None, alias="masterKeyUUID")
    # The real service writes mongodVersion; the API document serverVersion.
    server_version: str | None = Field(
        default=None,
        validation_alias=AliasChoices("mongodVersion", "serverVersion"),
        serialization_alias="mongodVersion",
    )
    replica_set_name: str | None = None
    replica_state: str | None = None
    storage_size_bytes: float | None = None
    type_name: str | None = None


class MissingShard(ApiModel):
    """A shard left out of a sharded snapshot because it could not be reached."""

    id: str
    group_id: str | None = None
    type_name: str | None = None
    cluster_name: str | None = None
    shard_name: str | None = None
    replica_set_name: str | None = None
    last_heartbeat: UtcDatetime | None = None
    links: list[Link] = Field(default_factory=list)


class SnapshotState(ApiModel):
    """The fields of a snapshot (cluster or config server) the two kinds share, and what a
    plan works out of them; the base of the full models. Walks read whole fleets into the
    msgspec structs of retention.api.walked instead, with the same rules."""

    id: str
    cluster_name: str | None = None
    complete: bool = False
    created: BsonTimestamp
    do_not_delete: bool = False
    expires: UtcDatetime | None = None
    is_possibly_inconsistent: bool | None = None
    missing_shards: list[MissingShard] | None = None
    # Each full model narrows this to its own kind of part.
    parts: Sequence[SnapshotPart] = Field(default_factory=list)
    group_id: str | None = None
    cluster_id: str | None = None
    last_oplog_applied_timestamp: BsonTimestamp | None = None
    links: list[Link] = Field(default_factory=list)

    @property
    def storage_bytes(self) -> int | None:
        """The space the snapshot takes: the sum of its parts' storageSizeBytes (None when
        no part says)."""
        return total_storage(p.storage_size_bytes for p in self.parts)

    @property
    def created_at(self) -> datetime:
        """When the snapshot was taken (UTC)."""
        return self.created.date

    @property
    def is_consistent(self) -> bool:
        """False when the service flags the snapshot possibly inconsistent or missing shards."""
        return not self.is_possibly_inconsistent and not self.missing_shards


class Snapshot(SnapshotState):
    """A cluster snapshot (endpoints 1-3)."""

    namespace_filter_list: NamespaceFilterList | None = None
    parts: list[SnapshotPart] = Field(default_factory=list)


class ConfigServerPart(SnapshotPart):
    """The single part of a legacy config-server snapshot."""

    host_id: str | None = None
    host_id_upper: str | None = Field(default=None, alias="HOST-ID")


class ConfigServerSnapshot(SnapshotState):
    """A legacy mirrored config-server snapshot (endpoints 4-5, deprecated, read-only).

    The spec types namespaceFilterList as an object array here and spells filterType
    ``denyList``; both a single object and an array are accepted.
    """

    namespace_filter_list: list[NamespaceFilterList] | NamespaceFilterList | None = None
    parts: list[ConfigServerPart] = Field(default_factory=list)
    host_id_upper: str | None = Field(default=None, alias="HOST-ID")


class CurrentValue(ApiModel):
    """The metric value behind an OUTSIDE_METRIC_THRESHOLD alert."""

    number: float | None = None
    units: str | None = None


class AlertStatus:
    """The alert statuses the spec lists (kept as plain strings on the model)."""

    TRACKING = "TRACKING"
    OPEN = "OPEN"
    CLOSED = "CLOSED"
    CANCELLED = "CANCELLED"


class Alert(ApiModel):
    """An alert of a project; which optional fields are present depends on its type."""

    id: str
    group_id: str | None = None
    alert_config_id: str | None = None
    event_type_name: str
    status: str
    created: UtcDatetime | None = None
    updated: UtcDatetime | None = None
    tags: list[str] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    acknowledged_until: UtcDatetime | None = None
    acknowledgement_comment: str | None = None
    acknowledging_username: str | None = None
    cluster_id: str | None = None
    cluster_name: str | None = None
    current_value: CurrentValue | None = None
    host_id: str | None = None
    hostname_and_port: str | None = None
    last_notified: UtcDatetime | None = None
    metric_name: str | None = None
    replica_set_name: str | None = None
    resolved: UtcDatetime | None = None
    source_type_name: str | None = None
    human_readable: str | None = None
    type_name: str | None = None


class AgentLinks(ApiModel):
    """The answer of endpoint 9: only links, with vendor-prefixed relation names."""

    links: list[Link] = Field(default_factory=list)

    def relation(self, name: str) -> Link | None:
        """Return the link whose rel is ``name`` or ends with ``/name`` (any vendor prefix)."""
        for link in self.links:
            if link.rel == name or link.rel.endswith("/" + name):
                return link
        return None


class Project(ApiModel):
    """A project (group), as ``GET /groups/{id}`` answers: retention reads its name."""

    id: str
    name: str | None = None
    org_id: str | None = None


class Cluster(ApiModel):
    """A cluster of a project, as ``GET /groups/{id}/clusters`` lists it."""

    id: str
    group_id: str | None = None
    cluster_name: str | None = None
    type_name: str | None = None
    replica_set_name: str | None = None
    shard_name: str | None = None
    links: list[Link] = Field(default_factory=list)


class Host(ApiModel):
    """A host of a project, as ``GET /groups/{id}/hosts`` lists it."""

    id: str
    group_id: str | None = None
    hostname: str | None = None
    port: int | None = None
    type_name: str | None = None
    replica_set_name: str | None = None
    links: list[Link] = Field(default_factory=list)

    @property
    def is_legacy_config_server(self) -> bool:
        """True for a mirrored config server, the only kind endpoints 4-5 serve."""
        return self.type_name == "SHARD_CONFIG"


class SnapshotSchedule(ApiModel):
    """A cluster's snapshot schedule, as ``GET .../backupConfigs/{id}/snapshotSchedule``
    answers: how often snapshots are taken and how long each kind is kept.

    Every field may be absent: the documented examples leave out the reference time and the
    checkpoint interval. A daily, weekly or monthly retention of 0 turns that rule off.
    Ops Manager stores every reference time in UTC (``referenceTimeZoneOffset`` "+0000").
    """

    cluster_id: str | None = None
    group_id: str | None = None
    snapshot_interval_hours: int | None = None
    snapshot_retention_days: int | None = None
    daily_snapshot_retention_days: int | None = None
    weekly_snapshot_retention_weeks: int | None = None
    monthly_snapshot_retention_months: int | None = None
    point_in_time_window_hours: int | None = None
    reference_hour_of_day: int | None = None
    reference_minute_of_hour: int | None = None
    reference_time_zone_offset: str | None = None
    cluster_checkpoint_interval_min: int | None = None
    full_incremental_day_of_week: str | None = None
    links: list[Link] = Field(default_factory=list)


ItemT = TypeVar("ItemT")


class ListPage(ApiModel, Generic[ItemT]):
    """One page of a list endpoint; ``status`` is only present in envelope mode."""

    results: list[ItemT] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    total_count: int | None = None
    status: int | None = None


class AlertAcknowledgement(ApiModel):
    """The body of an alert PATCH; without ``acknowledged_until`` it removes the acknowledgement."""

    acknowledged_until: UtcDatetime | None = None
    acknowledgement_comment: str | None = None


CompletedFilter = Literal["true", "false", "all"]

# Adapters built once: validate_json parses a page's raw bytes in one pass in pydantic-core,
# 1.5 times as fast as json.loads followed by model construction (benchmarks/parse.py).
SNAPSHOT_PAGE: TypeAdapter[ListPage[Snapshot]] = TypeAdapter(ListPage[Snapshot])
CONFIG_SERVER_SNAPSHOT_PAGE: TypeAdapter[ListPage[ConfigServerSnapshot]] = TypeAdapter(
    ListPage[ConfigServerSnapshot]
)
ALERT_PAGE: TypeAdapter[ListPage[Alert]] = TypeAdapter(ListPage[Alert])
CLUSTER_PAGE: TypeAdapter[ListPage[Cluster]] = TypeAdapter(ListPage[Cluster])
HOST_PAGE: TypeAdapter[ListPage[Host]] = TypeAdapter(ListPage[Host])
SNAPSHOT_SCHEDULE: TypeAdapter[SnapshotSchedule] = TypeAdapter(SnapshotSchedule)
