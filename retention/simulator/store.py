"""The simulator's state: projects, clusters, hosts, snapshots and alerts, its clock, and the
rules of the API contract that change them (PATCH of snapshots and alerts, the reaper).

Snapshots are small slotted records rendered to JSON by string templates, not by pydantic:
a list page of 500 must render in about a millisecond for the simulator not to be the
bottleneck of our benchmarks. The rendered shape is checked against the shared pydantic
models in the tests.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from retention.core.snapshot import StateText, state_document
from retention.core.timestamps import format_timestamp
from retention.simulator.messages import ApiFailure
from retention.simulator.schedule import SimSchedule


def q(text: str) -> str:
    """A JSON string literal (plain ids, the common case, skip the encoder)."""
    if text.isascii() and text.isalnum():
        return f'"{text}"'
    return json.dumps(text)


def _segment(text: str) -> str:
    return text if text.isascii() and text.isalnum() else quote(text, safe="")


class SimClock:
    """The simulator's notion of now: the real clock plus an offset, or frozen at a time."""

    def __init__(self, start: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._offset = 0.0
        self._frozen: datetime | None = None
        if start is not None:
            self.set(start, frozen=False)

    def now(self) -> datetime:
        """The current simulated time (UTC)."""
        with self._lock:
            if self._frozen is not None:
                return self._frozen
            offset = self._offset
        return datetime.fromtimestamp(time.time() + offset, UTC)

    def set(self, when: datetime, *, frozen: bool) -> None:
        """Make ``when`` the current time; frozen stops the clock there."""
        with self._lock:
            if frozen:
                self._frozen = when.astimezone(UTC)
            else:
                self._frozen = None
                self._offset = when.timestamp() - time.time()

    @property
    def frozen(self) -> bool:
        """True when the clock stands still."""
        with self._lock:
            return self._frozen is not None

    def advance(self, seconds: float) -> None:
        """Move the clock forward (or back, with a negative value)."""
        with self._lock:
            if self._frozen is not None:
                self._frozen += timedelta(seconds=seconds)
            else:
                self._offset += seconds


@dataclass(slots=True)
class SimSnapshot:
    """One snapshot's state. ``possibly_inconsistent``/``missing_shards`` are None for
    replica-set snapshots, where the fields are absent."""

    id: str
    created: datetime
    increment: int = 1
    complete: bool = True
    do_not_delete: bool = False
    expires: datetime | None = None
    possibly_inconsistent: bool | None = None
    missing_shards: list[dict[str, Any]] | None = None
    created_text: str = ""

    def __post_init__(self) -> None:
        self.created_text = format_timestamp(self.created)

    def state(self) -> StateText:
        """doNotDelete and expires as the API shows them (for the PATCH log)."""
        return state_document(self.do_not_delete, self.expires)


def _age_key(snapshot: SimSnapshot) -> tuple[float, int]:
    return (-snapshot.created.timestamp(), -snapshot.increment)


def insert_newest_first(snapshots: list[SimSnapshot], snapshot: SimSnapshot) -> None:
    """Insert into a newest-first list in O(log n) comparisons (ties go after their equals)."""
    bisect.insort_right(snapshots, snapshot, key=_age_key)


@dataclass
class SimCluster:
    """A replica set or sharded cluster and its snapshots, newest first."""

    id: str
    group_id: str
    name: str
    type_name: str = "REPLICA_SET"
    replica_set_name: str | None = None
    shard_name: str | None = None
    shard_names: list[str] = field(default_factory=list)
    snapshots: list[SimSnapshot] = field(default_factory=list)
    index: dict[str, SimSnapshot] = field(default_factory=dict)
    # The shardName a sharded cluster's own row shows: real answers carry its first shard's.
    listed_shard_name: str | None = None
    # Its snapshot schedule (schedule.py); None: backup not configured, the schedule GET 404s.
    schedule: SimSchedule | None = None

    @property
    def sharded(self) -> bool:
        """True for a sharded cluster, whose snapshots carry the shard fields."""
        return self.type_name == "SHARDED_REPLICA_SET"

    def add(self, snapshot: SimSnapshot) -> None:
        """Insert a snapshot, keeping newest-first order."""
        insert_newest_first(self.snapshots, snapshot)
        self.index[snapshot.id] = snapshot

    def remove(self, snapshot_id: str) -> None:
        """Delete a snapshot."""
        snapshot = self.index.pop(snapshot_id)
        self.snapshots.remove(snapshot)

    def reap(self, now: datetime, delay: timedelta) -> int:
        """Delete unprotected snapshots whose expiry passed at least ``delay`` ago."""
        cutoff = now - delay
        doomed = [
            s
            for s in self.snapshots
            if not s.do_not_delete and s.expires is not None and s.expires <= cutoff
        ]
        for snapshot in doomed:
            self.remove(snapshot.id)
        return len(doomed)


@dataclass
class SimHost:
    """A host; SHARD_CONFIG hosts (legacy mirrored config servers) have snapshots."""

    id: str
    group_id: str
    hostname: str
    port: int = 27019
    type_name: str = "SHARD_CONFIG"
    replica_set_name: str | None = None
    snapshots: list[SimSnapshot] = field(default_factory=list)
    index: dict[str, SimSnapshot] = field(default_factory=dict)

    def add(self, snapshot: SimSnapshot) -> None:
        """Insert a snapshot, keeping newest-first order."""
        insert_newest_first(self.snapshots, snapshot)
        self.index[snapshot.id] = snapshot

    def remove(self, snapshot_id: str) -> None:
        """Delete a snapshot."""
        snapshot = self.index.pop(snapshot_id)
        self.snapshots.remove(snapshot)


@dataclass
class SimProject:
    """A project (group): its clusters, hosts and alerts (alerts kept in wire form)."""

    id: str
    name: str
    clusters: dict[str, SimCluster] = field(default_factory=dict)
    hosts: dict[str, SimHost] = field(default_factory=dict)
    alerts: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Fleet:
    """Everything the simulator serves."""

    projects: dict[str, SimProject] = field(default_factory=dict)

    def clusters(self) -> Iterable[SimCluster]:
        """Every cluster of every project."""
        for project in self.projects.values():
            yield from project.clusters.values()

    def snapshot_count(self) -> int:
        """How many cluster and config-server snapshots the fleet holds."""
        total = sum(len(c.snapshots) for c in self.clusters())
        return total + sum(
            len(h.snapshots) for p in self.projects.values() for h in p.hosts.values()
        )


class SnapshotRenderer:
    """Renders snapshots of one cluster or config server to JSON text, fast."""

    def __init__(self, base_url: str, group_id: str, owner: SimCluster | SimHost) -> None:
        self.config_server = isinstance(owner, SimHost)
        collection = "hosts" if self.config_server else "clusters"
        self._href = (
            f"{base_url}/groups/{quote(group_id, safe='')}/{collection}/"
            f"{quote(owner.id, safe='')}/snapshots/"
        )
        self._head = f',"groupId":{q(group_id)},"clusterId":{q(owner.id)}'
        if isinstance(owner, SimHost):
            self._head += f',"HOST-ID":{q(owner.id)}'
        name = owner.hostname if isinstance(owner, SimHost) else owner.name
        self._name = f',"clusterName":{q(name)}'
        self._parts = self._parts_template(owner)

    @staticmethod
    def _parts_template(owner: SimCluster | SimHost) -> str:
        """The parts array, its completedTime left as @DONE@: one per shard (or the replica
        set), or the config server's one."""
        if isinstance(owner, SimHost):
            return (
                '[{"completedTime":"@DONE@","dataSizeBytes":52428800,'
                f'"encryptionEnabled":false,"fcv":"3.2","fileSizeBytes":67108864,'
                f'"hostId":{q(owner.id)},"HOST-ID":{q(owner.id)},'
                f'"machineId":"cfg.example.net:27019","mongodVersion":"3.2.22",'
                f'"replicaState":"PRIMARY","storageSizeBytes":62914560,'
                f'"typeName":"CONFIG_SERVER"}}]'
            )
        return (
            "["
            + ",".join(
                f'{{"clusterId":{q(owner.id)},"completedTime":"@DONE@",'
                f'"compressionSetting":"GZIP","dataSizeBytes":1073741824,'
                f'"encryptionEnabled":false,"fcv":"7.0","fileSizeBytes":2147483648,'
                f'"machineId":{q(rs + "-0.example.net:27017")},"mongodVersion":"7.0.12",'
                f'"replicaSetName":{q(rs)},"replicaState":"SECONDARY",'
                f'"storageSizeBytes":1610612736,"typeName":"REPLICA_SET"}}'
                for rs in owner.shard_names or [owner.replica_set_name or owner.name]
            )
            + "]"
        )

    def render(self, snapshot: SimSnapshot) -> str:
        """The snapshot resource as JSON text."""
        out = [
            f'{{"id":{q(snapshot.id)}',
            self._head,
            self._name,
            f',"complete":{"true" if snapshot.complete else "false"}',
            f',"created":{{"date":"{snapshot.created_text}","increment":{snapshot.increment}}}',
            f',"doNotDelete":{"true" if snapshot.do_not_delete else "false"}',
        ]
        if snapshot.expires is not None and not snapshot.do_not_delete:
            out.append(f',"expires":"{format_timestamp(snapshot.expires)}"')
        if snapshot.complete:
            out.append(
                f',"lastOplogAppliedTimestamp":{{"date":"{snapshot.created_text}",'
                f'"increment":{snapshot.increment}}}'
            )
        out.append(f',"links":[{{"href":{q(self._href + _segment(snapshot.id))},"rel":"self"}}]')
        if self.config_server:
            out.append(',"namespaceFilterList":[{"filterList":[],"filterType":"denyList"}]')
        else:
            out.append(',"namespaceFilterList":{"filterList":[],"filterType":"denylist"}')
        if snapshot.possibly_inconsistent is not None:
            flag = "true" if snapshot.possibly_inconsistent else "false"
            out.append(f',"isPossiblyInconsistent":{flag}')
        if snapshot.missing_shards is not None:
            out.append(f',"missingShards":{json.dumps(snapshot.missing_shards)}')
        done = format_timestamp(snapshot.created + timedelta(minutes=4))
        out.append(f',"parts":{self._parts.replace("@DONE@", done)}}}')
        return "".join(out)


INVALID_FIELDS = "Cannot modify snapshot because of invalid fields"


def apply_snapshot_patch(snapshot: SimSnapshot, body: Any, now: datetime) -> None:
    """Change a snapshot as the API does, or raise ApiFailure (the snapshot is unchanged).

    Rules (spec, "States and transitions"): doNotDelete true with a timestamp expires is
    refused; an expiry already in the past cannot be edited; doNotDelete true removes
    expires; an expires at or before now schedules deletion (the reaper deletes it);
    ``"expires": null`` clears the expiry. While doNotDelete stays true, a new expires is
    dropped, because the spec removes expires whenever doNotDelete is true.
    """
    if not isinstance(body, dict) or not body:
        raise ApiFailure(400, "INVALID_JSON", "the body must be a JSON object with fields")
    unknown = sorted(set(body) - {"doNotDelete", "expires"})
    if unknown:
        raise ApiFailure(400, "INVALID_ATTRIBUTE", f"unknown fields: {', '.join(unknown)}")
    do_not_delete = body.get("doNotDelete")
    if "doNotDelete" in body and not isinstance(do_not_delete, bool):
        raise ApiFailure(400, "INVALID_ATTRIBUTE", "doNotDelete must be true or false")
    expires: datetime | None = None
    if body.get("expires") is not None:
        expires = _parse_expires(body["expires"])
    if do_not_delete is True and expires is not None:
        raise ApiFailure(400, "INVALID_ATTRIBUTE", INVALID_FIELDS)
    if snapshot.expires is not None and snapshot.expires <= now and not snapshot.do_not_delete:
        raise ApiFailure(
            400,
            "SNAPSHOT_EXPIRED",
            "Cannot modify snapshot: its expiry has already passed and it awaits deletion",
        )
    if do_not_delete is not None:
        snapshot.do_not_delete = do_not_delete
    if snapshot.do_not_delete:
        snapshot.expires = None
    elif "expires" in body:
        snapshot.expires = expires


def _parse_expires(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ApiFailure(400, "INVALID_ATTRIBUTE", "expires must be a timestamp string")
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ApiFailure(
            400, "INVALID_ATTRIBUTE", f"expires is not a timestamp: {value!r}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def acknowledge(alert: dict[str, Any], body: Any, username: str) -> None:
    """Acknowledge (with acknowledgedUntil) or unacknowledge (without) an alert in place."""
    if not isinstance(body, dict):
        raise ApiFailure(400, "INVALID_JSON", "the body must be a JSON object")
    unknown = sorted(set(body) - {"acknowledgedUntil", "acknowledgementComment"})
    if unknown:
        raise ApiFailure(400, "INVALID_ATTRIBUTE", f"unknown fields: {', '.join(unknown)}")
    comment = body.get("acknowledgementComment")
    if comment is not None and not isinstance(comment, str):
        raise ApiFailure(400, "INVALID_ATTRIBUTE", "acknowledgementComment must be a string")
    until = body.get("acknowledgedUntil")
    if until is None:
        for key in ("acknowledgedUntil", "acknowledgementComment", "acknowledgingUsername"):
            alert.pop(key, None)
        return
    alert["acknowledgedUntil"] = format_timestamp(_parse_expires(until))
    alert["acknowledgementComment"] = comment or ""
    alert["acknowledgingUsername"] = username


def take_due(cluster: SimCluster, now: datetime) -> int:
    """Add the snapshots the cluster's schedule took up to ``now``; return how many."""
    schedule = cluster.schedule
    if schedule is None or not schedule.taking:
        return 0
    since = schedule.taken_until
    if since is not None and now <= since:
        return 0
    schedule.taken_until = now
    if since is None:  # nothing to catch up with: the first look starts the count
        return 0
    taken = 0
    until = now if schedule.stops_at is None else min(now, schedule.stops_at)
    for created in schedule.ticks(since, until):  # none once it has stopped
        snapshot = SimSnapshot(
            _snapshot_id(cluster.id, created), created, expires=schedule.expires(created)
        )
        if cluster.sharded:  # the shard fields a sharded cluster's snapshots always carry
            snapshot.possibly_inconsistent, snapshot.missing_shards = False, []
        if snapshot.id not in cluster.index:
            cluster.add(snapshot)
            taken += 1
    return taken


def _snapshot_id(cluster_id: str, created: datetime) -> str:
    """An ObjectId-shaped id: the creation's epoch seconds, then a hash of cluster and time,
    so a tick taken by two simulators of one fleet gets one id."""
    epoch = int(created.timestamp())
    tail = hashlib.blake2b(f"{cluster_id}@{epoch}".encode(), digest_size=8).hexdigest()
    return f"{epoch & 0xFFFFFFFF:08x}{tail}"
