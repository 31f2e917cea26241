"""Fleet files: hand-written scenarios for the simulator, validated all at once.

A fleet file (YAML, or the same structure as JSON) describes a scenario by hand. Unknown keys
are errors, and every problem is reported at once in one ``FleetFileError``. Times are
absolute ("2026-11-20T00:00:00Z") or relative to ``now`` ("now", "now-6h", "now+2d"):

    projects:
      - id: "5e2211c17a3e5a48f5497de3"          # optional, as are all other ids
        name: demo
        clusters:
          - name: prod-rs0                       # type REPLICA_SET by default
            generate: {six_hourly_days: 2}       # optional: a generated history
            snapshots:                           # optional: added to any generated ones
              - {id: s1, created: "now-6h", expires: "now+2d"}
              - {id: s2, created: "now-3d", doNotDelete: true}
              - {id: s3, created: "now-1h", complete: false}
          - name: prod-stopped                   # backups stopped: none for 3 days
            generate: {six_hourly_days: 2, stopped_days_ago: 3}
          - name: prod-daily                     # takes snapshots as the clock moves
            schedule: {snapshotIntervalHours: 24, referenceHourOfDay: 3}
          - name: prod-unscheduled               # no backup configured: the schedule 404s
            backup: false
          - name: prod-sh
            type: SHARDED_REPLICA_SET
            shards: [prod-sh-shard0, prod-sh-shard1]
            snapshots:
              - {id: s4, created: "2026-01-01T00:00:00Z", expires: "now+30d",
                 isPossiblyInconsistent: true, missingShards: [prod-sh-shard1]}
        hosts:
          - {hostname: cfg0.example.net, port: 27019, typeName: SHARD_CONFIG,
             snapshots: [{id: c1, created: "now-1d", expires: "now+6d"}]}
        alerts:                                  # any fields of the spec's Alert resource
          - {eventTypeName: BAD_CLUSTERSHOTS, status: OPEN, clusterName: prod-rs0}
          - {eventTypeName: OPLOG_BEHIND, status: CLOSED, replicaSetName: prod-rs0,
             created: "now-2d", resolved: "now-1d"}

``missingShards`` lists shard names; the API's missing-shard documents are filled in.
``schedule`` takes the fields of the service's snapshot schedule (snapshotIntervalHours 6, 8,
12 or 24; snapshotRetentionDays; dailySnapshotRetentionDays, weeklySnapshotRetentionWeeks,
monthlySnapshotRetentionMonths, 0 turning a kind off; pointInTimeWindowHours;
referenceHourOfDay, referenceMinuteOfHour, referenceTimeZoneOffset, which is converted to
UTC as the service does; clusterCheckpointIntervalMin for sharded clusters) and ``taking``
(true by default): the cluster takes the snapshots its schedule gives as the simulator's
clock moves (schedule.py); ``stopsInDays: N`` (not a field of the service's) stops that N
days after the fleet is built, as a backup agent that stops while its schedule stays. A
cluster without ``schedule`` has the default schedule, with
snapshotRetentionDays its ``six_hourly_days``, and takes snapshots only when the file says
``taking: true`` at its top. ``backup: false``: no backup configured, so no schedule (the
schedule GET answers 404) and no snapshot taken. A stopped cluster (``stopped_days_ago``)
takes none.
``stopped_days_ago`` (0 by default) makes a cluster whose backups stopped that many days ago:
its generated history ends then, and what it took before expires as usual.
Ids left out are filled in as fleet.py describes: project, cluster, shard, host and alert ids
from the seed and the names (the same on every run, whatever the clock), snapshot ids from
their creation time and the seed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    with_config,
)
from pydantic.alias_generators import to_camel
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from retention.core import validation, yamldoc
from retention.core.timestamps import format_timestamp, parse_timestamp, to_utc
from retention.simulator.fleet import BENCH, DEFAULT_BASE_URL, DEMO, FleetBuilder, generate
from retention.simulator.schedule import SimSchedule
from retention.simulator.store import Fleet, SimCluster, SimHost, SimSnapshot


class FleetFileError(ValueError):
    """A fleet file that cannot be used; one line per problem: ``FILE:LINE: FIELD: MESSAGE``."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path, self.problems = path, problems
        super().__init__("\n".join(problems))


_RELATIVE = re.compile(r"now(?:([+-])(\d+)([hd]))?")


def _when(value: Any, info: ValidationInfo) -> datetime:
    """A fleet-file time: a timestamp, or now with an optional offset in hours or days."""
    if isinstance(value, datetime):  # YAML turns unquoted timestamps into datetimes
        return to_utc(value)
    match = _RELATIVE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match and isinstance(info.context, dict):
        sign, amount, unit = match.groups()
        offset = timedelta(hours=int(amount or 0) * (24 if unit == "d" else 1))
        now: datetime = info.context["now"]
        return now - offset if sign == "-" else now + offset
    try:
        return parse_timestamp(value)
    except (ValueError, AttributeError):
        raise ValueError("not a timestamp (2026-11-20T00:00:00Z, now, now+Nh, now-Nd)") from None


When = Annotated[datetime, BeforeValidator(_when)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel)


class _Snapshot(_Spec):
    id: str | None = None
    created: When
    expires: When | None = None
    increment: int = 1
    do_not_delete: bool = False
    complete: bool = True
    is_possibly_inconsistent: bool | None = None
    missing_shards: list[str] | None = None


class _Generate(_Spec):
    six_hourly_days: int = Field(default=2, ge=1, le=400, alias="six_hourly_days")
    stopped_days_ago: int = Field(default=0, ge=0, le=400, alias="stopped_days_ago")


class _Schedule(_Spec):
    snapshot_interval_hours: Literal[6, 8, 12, 24] = 6
    snapshot_retention_days: int = Field(default=2, ge=1, le=400)
    daily_snapshot_retention_days: int = Field(default=7, ge=0, le=365)
    weekly_snapshot_retention_weeks: int = Field(default=4, ge=0, le=52)
    monthly_snapshot_retention_months: int = Field(default=13, ge=0, le=36)
    point_in_time_window_hours: int = Field(default=24, ge=0, le=720)
    reference_hour_of_day: int = Field(default=0, ge=0, le=23)
    reference_minute_of_hour: int = Field(default=0, ge=0, le=59)
    reference_time_zone_offset: str = Field(default="+0000", pattern=r"^(Z|[+-]\d{4})$")
    cluster_checkpoint_interval_min: Literal[15, 30, 60] | None = None
    taking: bool = True
    stops_in_days: int | None = Field(default=None, ge=1, le=3650)


class _Cluster(_Spec):
    id: str | None = None
    name: str = Field(min_length=1)
    type: Literal["REPLICA_SET", "SHARDED_REPLICA_SET"] = "REPLICA_SET"
    replica_set_name: str | None = None
    shards: list[str] | None = None
    generate: _Generate | None = None
    backup: bool = True
    schedule: _Schedule | None = None
    snapshots: list[_Snapshot] = []


class _Host(_Spec):
    id: str | None = None
    hostname: str
    port: int = 27019
    type_name: str = "SHARD_CONFIG"
    replica_set_name: str | None = None
    snapshots: list[_Snapshot] = []


@with_config(ConfigDict(extra="forbid"))
class _Link(TypedDict):
    href: str
    rel: str


@with_config(ConfigDict(extra="forbid"))
class _Value(TypedDict):
    number: float
    units: str


@with_config(ConfigDict(extra="forbid"))
class _Alert(TypedDict):
    """The spec's Alert resource, keys exactly as on the wire."""

    eventTypeName: str
    status: Literal["TRACKING", "OPEN", "CLOSED", "CANCELLED"]
    id: NotRequired[str]
    groupId: NotRequired[str]
    alertConfigId: NotRequired[str]
    created: NotRequired[When]
    updated: NotRequired[When]
    tags: NotRequired[list[str]]
    links: NotRequired[list[_Link]]
    acknowledgedUntil: NotRequired[When]
    acknowledgementComment: NotRequired[str]
    acknowledgingUsername: NotRequired[str]
    clusterId: NotRequired[str]
    clusterName: NotRequired[str]
    currentValue: NotRequired[_Value]
    hostId: NotRequired[str]
    hostnameAndPort: NotRequired[str]
    lastNotified: NotRequired[When]
    metricName: NotRequired[str]
    replicaSetName: NotRequired[str]
    resolved: NotRequired[When]
    sourceTypeName: NotRequired[str]
    humanReadable: NotRequired[str]
    typeName: NotRequired[str]


class _Project(_Spec):
    id: str | None = None
    name: str
    clusters: list[_Cluster] = []
    hosts: list[_Host] = []
    alerts: list[_Alert] = []


class _FleetFile(_Spec):
    projects: list[_Project] = Field(min_length=1)
    taking: bool = False  # clusters without a ``schedule`` take snapshots too


def _items(parent: Any, key: str) -> list[tuple[int, dict[str, Any]]]:
    children = parent.get(key) if isinstance(parent, dict) else None
    return [(i, c) for i, c in enumerate(children or []) if isinstance(c, dict)]


def _rule_errors(data: Any) -> list[tuple[validation.Loc, str]]:
    """Rules across fields, checked on the raw data so they are reported with schema errors."""
    errors: list[tuple[validation.Loc, str]] = []
    first: dict[str, str] = {}
    owners = [
        (("projects", p, kind, o), owner.get("type") == "SHARDED_REPLICA_SET", owner)
        for p, project in _items(data, "projects")
        for kind in ("clusters", "hosts")
        for o, owner in _items(project, kind)
    ]
    for loc, sharded, owner in owners:
        if "shards" in owner and not sharded:
            errors.append(((*loc, "shards"), "only for SHARDED_REPLICA_SET clusters"))
        schedule, checkpoint = owner.get("schedule"), "clusterCheckpointIntervalMin"
        if isinstance(schedule, dict) and checkpoint in schedule and not sharded:
            errors.append(((*loc, "schedule", checkpoint), "only for sharded clusters"))
        if owner.get("backup") is False and "schedule" in owner:
            errors.append(((*loc, "schedule"), "not allowed with backup false"))
        for s, raw in _items(owner, "snapshots"):
            where, sid = (*loc, "snapshots", s), raw.get("id")
            if isinstance(sid, str) and sid in first:
                message = f"duplicate snapshot id {sid!r} (first at {first[sid]})"
                errors.append(((*where, "id"), message))
            elif isinstance(sid, str):
                first[sid] = validation.field_path(where) or ""
            errors += [
                ((*where, key), "only for snapshots of sharded clusters")
                for key in ("isPossiblyInconsistent", "missingShards")
                if key in raw and not sharded
            ]
            if raw.get("doNotDelete") is True and raw.get("expires") is not None:
                errors.append(((*where, "expires"), "not allowed with doNotDelete true"))
    return errors


def _parse_file(path: Path, now: datetime) -> _FleetFile:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FleetFileError(str(path), [f"{path}: cannot read: {exc.strerror or exc}"]) from None
    # JSON is YAML, so one parser reads both and gives lines to the problems of either.
    document, found = yamldoc.parse(data, "a mapping with projects")
    spec = None
    if document is not None:
        spec, invalid = validation.validate(
            _FleetFile, document.value, document.lines, context={"now": now}
        )
        found += invalid + [
            document.lines.problem(loc, message) for loc, message in _rule_errors(document.value)
        ]
    if spec is None or found:
        problems = [problem.at(str(path)) for problem in validation.in_file_order(found)]
        raise FleetFileError(str(path), problems)
    return spec


def load_fleet_file(
    path: str | Path, *, seed: int, now: datetime, base_url: str = DEFAULT_BASE_URL
) -> Fleet:
    """A fleet from a YAML or JSON fleet file; raises FleetFileError listing every problem."""
    b = FleetBuilder(seed, now, base_url)
    spec = _parse_file(Path(path), b.now)
    for p in spec.projects:  # explicit ids first, so that no generated id can take one
        owners: list[_Cluster | _Host] = [*p.clusters, *p.hosts]
        b.seen.update(x.id for x in [p, *owners] if x.id)
        b.seen.update(s.id for x in owners for s in x.snapshots if s.id)
    for p in spec.projects:
        project = b.project(p.name, p.id)
        for c in p.clusters:
            sharded = c.type == "SHARDED_REPLICA_SET"
            shards = (c.shards or [f"{c.name}-shard{k}" for k in range(2)]) if sharded else None
            cluster = b.cluster(project, c.name, shards, c.id, c.replica_set_name)
            if c.generate:
                b.history(cluster, c.generate.six_hourly_days, c.generate.stopped_days_ago)
            cluster.schedule = _schedule(c, b.now, taking=spec.taking)
            for s in c.snapshots:
                cluster.add(_snapshot(b, s, cluster))
        for h in p.hosts:
            hid = h.id or b.host_id(project, h.hostname, h.port)
            host = SimHost(hid, project.id, h.hostname, h.port, h.type_name)
            host.replica_set_name = h.replica_set_name
            for s in h.snapshots:
                host.add(_snapshot(b, s, None))
            project.hosts[host.id] = host
        by_name = {c.name: c.id for c in project.clusters.values()}
        for alert in p.alerts:
            given: dict[str, Any] = {
                k: format_timestamp(v) if isinstance(v, datetime) else v for k, v in alert.items()
            }
            if given.get("clusterName") in by_name:
                given.setdefault("clusterId", by_name[given["clusterName"]])
            b.alert(project, given)
    return b.fleet


def _schedule(c: _Cluster, now: datetime, *, taking: bool) -> SimSchedule | None:
    """The cluster's schedule: as written, or the default one its history follows."""
    stopped = bool(c.generate and c.generate.stopped_days_ago)
    days = c.generate.six_hourly_days if c.generate else 2
    s = c.schedule
    if not c.backup:
        return None
    if s is None:
        return SimSchedule(retention_days=days, taking=taking and not stopped, taken_until=now)
    offset = s.reference_time_zone_offset
    # The service stores the reference time in UTC: "+0200" at 05:00 is kept as 03:00.
    shift = 0 if offset == "Z" else int(offset[0] + "1") * (int(offset[1:3]) * 60 + int(offset[3:]))
    minutes = (s.reference_hour_of_day * 60 + s.reference_minute_of_hour - shift) % (24 * 60)
    return SimSchedule(
        interval_hours=s.snapshot_interval_hours,
        retention_days=(
            s.snapshot_retention_days if "snapshot_retention_days" in s.model_fields_set else days
        ),
        daily_days=s.daily_snapshot_retention_days,
        weekly_weeks=s.weekly_snapshot_retention_weeks,
        monthly_months=s.monthly_snapshot_retention_months,
        point_in_time_hours=s.point_in_time_window_hours,
        reference_hour=minutes // 60,
        reference_minute=minutes % 60,
        checkpoint_minutes=s.cluster_checkpoint_interval_min,
        taking=s.taking and not stopped,
        taken_until=now,
        stops_at=None if s.stops_in_days is None else now + timedelta(days=s.stops_in_days),
    )


def _snapshot(b: FleetBuilder, s: _Snapshot, cluster: SimCluster | None) -> SimSnapshot:
    snapshot = SimSnapshot(
        s.id or b.snapshot_id(int(s.created.timestamp())), s.created, s.increment, s.complete,
        s.do_not_delete, s.expires,
    )  # fmt: skip
    if cluster is not None and cluster.sharded:
        snapshot.possibly_inconsistent = bool(s.is_possibly_inconsistent)
        missing = s.missing_shards or []
        snapshot.missing_shards = [b.missing_shard(cluster, s.created, m) for m in missing]
    return snapshot


def build_fleet(
    spec: str | Path, *, seed: int, now: datetime, base_url: str = DEFAULT_BASE_URL
) -> Fleet:
    """The fleet named by ``spec``: "demo", "bench", or a .yaml/.yml/.json fleet file."""
    if spec in ("demo", "bench"):
        return generate(DEMO if spec == "demo" else BENCH, seed=seed, now=now, base_url=base_url)
    if isinstance(spec, str) and spec.startswith("bench:") and spec[6:].isdigit():
        # The bench shape with N clusters (100 a project), for benchmarks at several sizes.
        clusters = int(spec[6:])
        shape = replace(BENCH, clusters=clusters, projects=max(1, clusters // 100))
        return generate(shape, seed=seed, now=now, base_url=base_url)
    if Path(spec).suffix in {".yaml", ".yml", ".json"}:
        return load_fleet_file(spec, seed=seed, now=now, base_url=base_url)
    raise ValueError(f"unknown fleet {str(spec)!r}: use demo, bench or a .yaml/.yml/.json file")
