"""The audit alerts the simulator opens when a snapshot's retention or a cluster's backup
changes: through the API's PATCH (app.py) or "as someone else" (outside.py).

Which event each change raises, from the service's alert-types reference (category Backup):
an expiry or doNotDelete change is ``SNAPSHOT_EXPIRY_UPDATED_AUDIT`` ("Snapshot expiry has
been updated.") on a replica set and ``CLUSTERSHOT_EXPIRY_UPDATED_AUDIT`` on a sharded
cluster; a deletion ``SNAPSHOT_DELETED_AUDIT`` / ``CLUSTERSHOT_DELETED_AUDIT``; a backup
terminated (or the cluster removed, which ends its backup) ``RS_STATE_CHANGED_AUDIT``
("Replica set backup state is now ...") / ``CLUSTER_STATE_CHANGED_AUDIT``.

The fields: no body of an audit alert is on record. The alert reference says a Backup
alert (``"type": "BACKUP"``) carries ``clusterId``, ``clusterName``, ``replicaSetName`` and
``sourceTypeName`` (REPLICA_SET, SHARDED_CLUSTER or CONFIG_SERVER), and the only Backup
alert among the vendor's examples, the Go client's global alert (an OPLOG_BEHIND, in
tests/fixtures/real, SOURCES.md), has exactly those with ``tags: []``. Audit alerts are
Backup alerts, so they carry the same; ``typeName`` is the alert's type as the docs' alert
example shows it (``HOST_METRIC`` there). Who made the change is no field of an alert (the
service's events list has ``username``), so it stays in the admin log.

The simulator's choices: a legacy config server is no sharded cluster of its own, so its
changes raise the replica-set events, with ``sourceTypeName`` CONFIG_SERVER and the host's
id and name as cluster id and name (as its snapshots carry them). One OPEN alert per cluster
(or config server) and event type: a second change while one is OPEN opens no other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from retention.core.timestamps import format_timestamp
from retention.simulator.bodies import self_links
from retention.simulator.store import SimCluster, SimHost, SimProject

Change = Literal["expiry", "deleted", "state"]

# The event of each change: (on a replica set or config server, on a sharded cluster).
EVENTS: dict[Change, tuple[str, str]] = {
    "expiry": ("SNAPSHOT_EXPIRY_UPDATED_AUDIT", "CLUSTERSHOT_EXPIRY_UPDATED_AUDIT"),
    "deleted": ("SNAPSHOT_DELETED_AUDIT", "CLUSTERSHOT_DELETED_AUDIT"),
    "state": ("RS_STATE_CHANGED_AUDIT", "CLUSTER_STATE_CHANGED_AUDIT"),
}


def event_type(owner: SimCluster | SimHost, change: Change) -> str:
    """The eventTypeName ``change`` raises on ``owner``."""
    on_replica_set, on_sharded = EVENTS[change]
    return on_sharded if isinstance(owner, SimCluster) and owner.sharded else on_replica_set


def open_audit_alert(
    project: SimProject,
    owner: SimCluster | SimHost,
    change: Change,
    *,
    now: datetime,
    base_url: str,
) -> tuple[str, bool]:
    """The OPEN audit alert for ``change`` on ``owner``: the one already open, or a new one.
    Its id, and whether it was opened now."""
    event = event_type(owner, change)
    for alert in project.alerts.values():
        same = alert.get("clusterId") == owner.id and alert.get("eventTypeName") == event
        if same and alert.get("status") == "OPEN":
            return str(alert["id"]), False
    alert_id = f"audit-{owner.id}-{len(project.alerts)}"
    project.alerts[alert_id] = {
        "id": alert_id,
        "groupId": project.id,
        "alertConfigId": "audit-config",
        "eventTypeName": event,
        "typeName": "BACKUP",
        "status": "OPEN",
        "created": format_timestamp(now),
        "updated": format_timestamp(now),
        **_source(owner),
        "tags": [],
        "links": self_links(base_url, "groups", project.id, "alerts", alert_id),
    }
    return alert_id, True


def _source(owner: SimCluster | SimHost) -> dict[str, Any]:
    """What names the backed-up deployment in a Backup alert."""
    if isinstance(owner, SimHost):
        fields: dict[str, Any] = {"clusterId": owner.id, "clusterName": owner.hostname}
        if owner.replica_set_name:
            fields["replicaSetName"] = owner.replica_set_name
        return {**fields, "sourceTypeName": "CONFIG_SERVER"}
    if owner.sharded:
        return {
            "clusterId": owner.id,
            "clusterName": owner.name,
            "sourceTypeName": "SHARDED_CLUSTER",
        }
    return {
        "clusterId": owner.id,
        "clusterName": owner.name,
        "replicaSetName": owner.replica_set_name or owner.name,
        "sourceTypeName": "REPLICA_SET",
    }
