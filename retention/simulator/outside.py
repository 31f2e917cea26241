"""Changes made outside retention, "as someone else": a person in the Ops Manager UI, a
script with its own key. ``POST /__admin/outside`` makes one, never through the API's PATCH
path and never in the PATCH log (tests count our PATCHes there), and opens the audit alert
the service opens for it (audit.py); ``GET /__admin/outside`` lists those made so far.

    {"action": "expires",     "clusterId": C, "snapshotId": S, "expires": TS, "user": U}
    {"action": "doNotDelete", "clusterId": C, "snapshotId": S, "doNotDelete": bool}
    {"action": "delete",      "clusterId": C, "snapshotId": S}
    {"action": "terminate",   "clusterId": C}     the backup ends: every snapshot deleted at
                                                  once; the cluster stays listed, with no
                                                  snapshot schedule (its GET answers 404)
    {"action": "remove",      "clusterId": C}     the cluster leaves its project (a sharded
                                                  one with its shard and config rows)

``clusterId`` is a cluster's id, or a legacy config server's host id for every action but
remove. ``user`` defaults to someone@example.com. An expiry or doNotDelete follows the PATCH
rules (store.apply_snapshot_patch): an expiry that has passed cannot be changed, doNotDelete
true drops the expiry. Each answer, and each entry of the log, says when, what, on which
ids, the state before and after (a snapshot's doNotDelete and expires, or a cluster's
snapshot count), how many snapshots went, who, and the alert it is under (its id, its type,
and whether this change opened it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from retention.core.timestamps import format_timestamp
from retention.simulator.audit import Change, event_type, open_audit_alert
from retention.simulator.messages import ApiFailure
from retention.simulator.store import (
    Fleet,
    SimCluster,
    SimHost,
    SimProject,
    SimSnapshot,
    apply_snapshot_patch,
    take_due,
)

DEFAULT_USER = "someone@example.com"
# What each action takes besides action, clusterId and user.
FIELDS: dict[str, tuple[str, ...]] = {
    "expires": ("snapshotId", "expires"),
    "doNotDelete": ("snapshotId", "doNotDelete"),
    "delete": ("snapshotId",),
    "terminate": (),
    "remove": (),
}
CHANGES: dict[str, Change] = {
    "expires": "expiry",
    "doNotDelete": "expiry",
    "delete": "deleted",
    "terminate": "state",
    "remove": "state",
}
CONFIG_SERVER_REPLICA_SET = "CONFIG_SERVER_REPLICA_SET"


class OutsideError(ValueError):
    """A change the body does not describe; the admin surface answers 400 with its message,
    which names the field."""


@dataclass(frozen=True)
class Where:
    """What the simulator needs to make a change: its time and its API's reaper and URL."""

    now: datetime
    reap_delay: timedelta
    base_url: str


def make_outside_change(fleet: Fleet, body: dict[str, Any], where: Where) -> dict[str, Any]:
    """Make the change ``body`` describes; the log entry that says what it did."""
    action = _action(body)
    user = body.get("user", DEFAULT_USER)
    if not isinstance(user, str) or not user:
        raise OutsideError("user: must be a non-empty string")
    project, owner = _owner(fleet, body, action)
    if isinstance(owner, SimCluster):  # its state as the API would show it now
        take_due(owner, where.now)
        owner.reap(where.now, where.reap_delay)
    entry: dict[str, Any] = {
        "at": format_timestamp(where.now),
        "action": action,
        "projectId": project.id,
        "clusterId": owner.id,
        "clusterName": owner.hostname if isinstance(owner, SimHost) else owner.name,
        "snapshotId": body.get("snapshotId"),
        "user": user,
    }
    if action in ("expires", "doNotDelete", "delete"):
        entry.update(_change_snapshot(owner, body, action, where.now))
    else:
        entry.update(_end_backup(project, owner, action))
    change = CHANGES[action]
    alert_id, opened = open_audit_alert(
        project, owner, change, now=where.now, base_url=where.base_url
    )
    entry.update(alertId=alert_id, alertType=event_type(owner, change), alertOpened=opened)
    return entry


def _action(body: dict[str, Any]) -> str:
    action = body.get("action")
    if action not in FIELDS:
        raise OutsideError(f"action: {action!r} is none of {', '.join(FIELDS)}")
    allowed = {"action", "clusterId", "user", *FIELDS[action]}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise OutsideError(f"{', '.join(unknown)}: not a field of {action}")
    missing = [f for f in ("clusterId", *FIELDS[action]) if f not in body]
    if missing:
        raise OutsideError(f"{', '.join(missing)}: required by {action}")
    return str(action)


Owner = SimCluster | SimHost


def _owner(fleet: Fleet, body: dict[str, Any], action: str) -> tuple[SimProject, Owner]:
    """The cluster or config server ``clusterId`` names, with its project."""
    key = body["clusterId"]
    if not isinstance(key, str):
        raise OutsideError("clusterId: must be a string")
    for project in fleet.projects.values():
        cluster = project.clusters.get(key)
        if cluster is not None:
            _refuse_member(project, cluster)
            return project, cluster
        host = project.hosts.get(key)
        if host is not None:
            if host.type_name != "SHARD_CONFIG":
                raise OutsideError(f"clusterId: {key} is a {host.type_name} host, no config server")
            if action == "remove":
                raise OutsideError(
                    f"clusterId: {key} is a config server; remove takes a cluster "
                    "(terminate ends a config server's backup)"
                )
            return project, host
    raise OutsideError(f"clusterId: no cluster or config server {key} in the fleet")


def _refuse_member(project: SimProject, cluster: SimCluster) -> None:
    """A shard's or config server's row of a sharded cluster has no backup of its own."""
    if cluster.shard_name is None and cluster.type_name != CONFIG_SERVER_REPLICA_SET:
        return
    parent = next(
        (c for c in project.clusters.values() if c.sharded and c.name == cluster.name), None
    )
    if parent is not None:
        raise OutsideError(
            f"clusterId: {cluster.id} is a member of the sharded cluster {parent.name}; "
            f"name that cluster ({parent.id})"
        )


def _snapshot(owner: SimCluster | SimHost, body: dict[str, Any]) -> SimSnapshot:
    snapshot_id = body["snapshotId"]
    found = owner.index.get(snapshot_id) if isinstance(snapshot_id, str) else None
    if found is None:
        name = owner.hostname if isinstance(owner, SimHost) else owner.name
        raise OutsideError(f"snapshotId: no snapshot {snapshot_id!r} of {name}")
    return found


def _change_snapshot(
    owner: SimCluster | SimHost, body: dict[str, Any], action: str, now: datetime
) -> dict[str, Any]:
    """An expiry or doNotDelete changed, or the snapshot deleted: its state before and after."""
    snapshot = _snapshot(owner, body)
    before = snapshot.state()
    if action == "delete":
        owner.remove(snapshot.id)
        return {"before": before, "after": None, "deleted": 1}
    try:
        apply_snapshot_patch(snapshot, {action: body[action]}, now)
    except ApiFailure as refused:
        detail = refused.detail
        raise OutsideError(detail if detail.startswith(action) else f"{action}: {detail}") from None
    return {"before": before, "after": snapshot.state(), "deleted": 0}


def _end_backup(project: SimProject, owner: SimCluster | SimHost, action: str) -> dict[str, Any]:
    """The backup terminated (every snapshot deleted at once, no schedule left) or the
    cluster removed from its project: its snapshot count before and after."""
    count = len(owner.snapshots)
    owner.snapshots.clear()
    owner.index.clear()
    if isinstance(owner, SimCluster):
        owner.schedule = None
        if action == "remove":
            _remove(project, owner)
    return {"before": {"snapshots": count}, "after": {"snapshots": 0}, "deleted": count}


def _remove(project: SimProject, cluster: SimCluster) -> None:
    """The cluster, the rows of its shards and config servers, and its hosts, unlisted."""
    rows = [cluster]
    if cluster.sharded:
        rows += [c for c in project.clusters.values() if c.name == cluster.name and not c.sharded]
    sets = {c.replica_set_name for c in rows if c.replica_set_name}
    for row in rows:
        del project.clusters[row.id]
    for host in [h for h in project.hosts.values() if h.replica_set_name in sets]:
        del project.hosts[host.id]
