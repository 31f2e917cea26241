"""Tests of the pydantic models of retention.api.models against the API contract."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from retention.api.models import (
    ALERT_PAGE,
    CLUSTER_PAGE,
    CONFIG_SERVER_SNAPSHOT_PAGE,
    HOST_PAGE,
    SNAPSHOT_PAGE,
    AgentLinks,
    Alert,
    AlertAcknowledgement,
    AlertStatus,
    Cluster,
    ConfigServerPart,
    ConfigServerSnapshot,
    Host,
    ListPage,
    NamespaceFilterList,
    Snapshot,
    SnapshotPart,
)
from retention.core.snapshot import SnapshotPatch

BASE = "https://opsmanager.example.com:8443/api/public/v1.0"
GROUP = "5c8100bcf2a30b12ff88258f"
CLUSTER = "5c8100c0f2a30b12ff882594"
SNAP = "5c81086e014b76a3d85e1113"
HOST = "5c8100bcf2a30b12ff882600"
REL_NS = "http://vendor.example/rel"
PLUS_TWO = timezone(timedelta(hours=2))


def _self_link(path: str) -> dict[str, str]:
    return {"href": f"{BASE}{path}", "rel": "self"}


def full_snapshot() -> dict[str, Any]:
    """A replica-set cluster snapshot carrying every documented field."""
    return {
        "id": SNAP,
        "groupId": GROUP,
        "clusterId": CLUSTER,
        "clusterName": "Cluster0",
        "complete": True,
        "created": {"date": "2026-03-01T02:00:00Z", "increment": 7},
        "doNotDelete": False,
        "expires": "2026-03-08T02:00:00Z",
        "lastOplogAppliedTimestamp": {"date": "2026-03-01T01:59:58Z", "increment": 3},
        "links": [
            _self_link(f"/groups/{GROUP}/clusters/{CLUSTER}/snapshots/{SNAP}"),
            {"href": f"{BASE}/groups/{GROUP}/clusters/{CLUSTER}", "rel": f"{REL_NS}/cluster"},
        ],
        "namespaceFilterList": {"filterList": ["admin", "logs.events"], "filterType": "denylist"},
        "parts": [
            {
                "clusterId": CLUSTER,
                "completedTime": "2026-03-01T02:04:11Z",
                "compressionSetting": "GZIP",
                "dataSizeBytes": 1_234_567_890,
                "encryptionEnabled": True,
                "fcv": "6.0",
                "fileSizeBytes": 2_345_678_901,
                "machineId": "db-rs0-1.example.com:27017",
                "masterKeyUUID": "72659f08-8b3c-4913-bb4e-a8a68e036502",
                "serverVersion": "6.0.14",
                "replicaSetName": "rs0",
                "replicaState": "SECONDARY",
                "storageSizeBytes": 987_654_321,
                "typeName": "REPLICA_SET",
            }
        ],
    }


def sharded_snapshot(
    *, possibly_inconsistent: bool, missing: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """A sharded-cluster snapshot with the sharded-only fields set as given."""
    body: dict[str, Any] = {
        "id": "5c81086e014b76a3d85e2222",
        "groupId": GROUP,
        "clusterId": CLUSTER,
        "clusterName": "Sharded0",
        "complete": True,
        "created": {"date": "2026-03-01T03:00:00Z", "increment": 1},
        "isPossiblyInconsistent": possibly_inconsistent,
        "links": [_self_link(f"/groups/{GROUP}/clusters/{CLUSTER}/snapshots/x")],
        "parts": [],
    }
    if missing is not None:
        body["missingShards"] = missing
    return body


MISSING_SHARD = {
    "id": "5c8100c0f2a30b12ff88aaaa",
    "groupId": GROUP,
    "typeName": "REPLICA_SET",
    "clusterName": "Sharded0",
    "shardName": "shard-02",
    "replicaSetName": "shard-02-rs",
    "lastHeartbeat": "2026-03-01T01:58:00+02:00",
    "links": [_self_link(f"/groups/{GROUP}/clusters/5c8100c0f2a30b12ff88aaaa")],
}


def config_server_snapshot(namespace_filter_list: Any) -> dict[str, Any]:
    """A legacy config-server snapshot with the given namespaceFilterList value."""
    return {
        "id": "5c81086e014b76a3d85e3333",
        "groupId": GROUP,
        "clusterId": CLUSTER,
        "complete": True,
        "created": {"date": "2026-03-01T04:00:00Z", "increment": 2},
        "doNotDelete": True,
        "HOST-ID": HOST,
        "links": [_self_link(f"/groups/{GROUP}/hosts/{HOST}/snapshots/x")],
        "namespaceFilterList": namespace_filter_list,
        "parts": [
            {
                "completedTime": "2026-03-01T04:01:00Z",
                "dataSizeBytes": 5000,
                "encryptionEnabled": False,
                "fcv": "3.2",
                "fileSizeBytes": 6000,
                "hostId": HOST,
                "HOST-ID": HOST,
                "machineId": "cfg-1.example.com:27019",
                "serverVersion": "3.2.22",
                "replicaState": "PRIMARY",
                "storageSizeBytes": 4000,
                "typeName": "CONFIG_SERVER",
            }
        ],
    }


ALERT_COMMON = {
    "groupId": GROUP,
    "alertConfigId": "5c8100bcf2a30b12ff88aa01",
    "status": "OPEN",
    "created": "2026-03-01T05:00:00Z",
    "updated": "2026-03-01T05:10:00Z",
    "tags": ["prod"],
    "lastNotified": "2026-03-01T05:01:00Z",
}


def alert(alert_id: str, **fields: Any) -> dict[str, Any]:
    """An alert body: the always-present fields plus the given type-specific fields."""
    links = [_self_link(f"/groups/{GROUP}/alerts/{alert_id}")]
    return {"id": alert_id, **ALERT_COMMON, "links": links, **fields}


# --- cluster snapshots -------------------------------------------------------------------------


def test_full_snapshot_parses_every_field() -> None:
    """A snapshot with every documented field maps each camelCase key to its snake_case value."""
    snap = Snapshot.model_validate(full_snapshot())

    assert snap.id == SNAP
    assert snap.group_id == GROUP
    assert snap.cluster_id == CLUSTER
    assert snap.cluster_name == "Cluster0"
    assert snap.complete is True
    assert snap.do_not_delete is False
    assert snap.created.date == datetime(2026, 3, 1, 2, 0, 0, tzinfo=UTC)
    assert snap.created.increment == 7
    assert snap.created_at == datetime(2026, 3, 1, 2, 0, 0, tzinfo=UTC)
    assert snap.expires == datetime(2026, 3, 8, 2, 0, 0, tzinfo=UTC)
    assert snap.last_oplog_applied_timestamp is not None
    assert snap.last_oplog_applied_timestamp.date == datetime(2026, 3, 1, 1, 59, 58, tzinfo=UTC)
    assert snap.last_oplog_applied_timestamp.increment == 3
    assert snap.is_possibly_inconsistent is None
    assert snap.missing_shards is None
    assert [(link.rel, link.href) for link in snap.links] == [
        ("self", f"{BASE}/groups/{GROUP}/clusters/{CLUSTER}/snapshots/{SNAP}"),
        (f"{REL_NS}/cluster", f"{BASE}/groups/{GROUP}/clusters/{CLUSTER}"),
    ]
    assert snap.namespace_filter_list == NamespaceFilterList(
        filter_list=["admin", "logs.events"], filter_type="denylist"
    )


def test_full_snapshot_parses_every_part_field() -> None:
    """Every documented part field, including masterKeyUUID, lands on its snake_case attribute."""
    part = Snapshot.model_validate(full_snapshot()).parts[0]

    assert part.cluster_id == CLUSTER
    assert part.completed_time == "2026-03-01T02:04:11Z"
    assert part.compression_setting == "GZIP"
    assert part.data_size_bytes == 1_234_567_890
    assert part.encryption_enabled is True
    assert part.fcv == "6.0"
    assert part.file_size_bytes == 2_345_678_901
    assert part.machine_id == "db-rs0-1.example.com:27017"
    assert part.master_key_uuid == "72659f08-8b3c-4913-bb4e-a8a68e036502"
    assert part.server_version == "6.0.14"
    assert part.replica_set_name == "rs0"
    assert part.replica_state == "SECONDARY"
    assert part.storage_size_bytes == 987_654_321
    assert part.type_name == "REPLICA_SET"


def test_full_snapshot_parses_from_raw_json_bytes() -> None:
    """Parsing the JSON bytes of a snapshot gives the same model as parsing the dict."""
    raw = json.dumps(full_snapshot()).encode()

    assert Snapshot.model_validate_json(raw) == Snapshot.model_validate(full_snapshot())


def test_minimal_snapshot_gets_safe_defaults() -> None:
    """A snapshot with only id and created counts as incomplete, unprotected and without expiry."""
    snap = Snapshot.model_validate(
        {"id": SNAP, "created": {"date": "2026-03-01T02:00:00Z", "increment": 1}}
    )

    assert snap.id == SNAP
    assert snap.created.date == datetime(2026, 3, 1, 2, 0, 0, tzinfo=UTC)
    assert snap.complete is False
    assert snap.do_not_delete is False
    assert snap.expires is None
    assert snap.group_id is None
    assert snap.namespace_filter_list is None
    assert snap.last_oplog_applied_timestamp is None
    assert snap.parts == []
    assert snap.links == []


def test_created_without_increment_parses() -> None:
    """A created object with only a date leaves increment None."""
    snap = Snapshot.model_validate({"id": SNAP, "created": {"date": "2026-03-01T02:00:00Z"}})

    assert snap.created.increment is None
    assert snap.created.date == datetime(2026, 3, 1, 2, 0, 0, tzinfo=UTC)


def test_unknown_fields_are_ignored_at_every_level() -> None:
    """Unknown keys in the page, snapshot, part, created, link and filter do not break parsing."""
    snap = full_snapshot()
    snap["futureField"] = {"nested": [1, 2, 3]}
    snap["parts"][0]["shinyNewMetric"] = 42
    snap["created"]["precision"] = "ms"
    snap["links"][0]["method"] = "GET"
    snap["namespaceFilterList"]["mode"] = "strict"
    page = {
        "results": [snap],
        "links": [_self_link(f"/groups/{GROUP}/clusters/{CLUSTER}/snapshots?pageNum=1")],
        "totalCount": 1,
        "nextCursor": "abc",
    }

    parsed = SNAPSHOT_PAGE.validate_json(json.dumps(page).encode())

    assert parsed.total_count == 1
    assert parsed.results[0] == Snapshot.model_validate(full_snapshot())
    assert parsed.results[0].parts[0].type_name == "REPLICA_SET"
    assert not hasattr(parsed.results[0], "future_field")


def test_unknown_fields_in_alert_are_ignored() -> None:
    """An alert with keys the spec does not list still parses its known fields."""
    body = alert("a-unknown", eventTypeName="HOST_DOWN", hostId=HOST, severity="CRITICAL")
    body["currentValue"] = {"number": 1.5, "units": "RAW", "trend": "up"}

    parsed = Alert.model_validate(body)

    assert parsed.host_id == HOST
    assert parsed.current_value is not None
    assert parsed.current_value.number == 1.5
    assert not hasattr(parsed, "severity")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T02:00:00+02:00", datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC)),
        ("2026-02-28T21:00:00-03:00", datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00Z", datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00", datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC)),
    ],
    ids=["plus-0200", "minus-0300", "Z", "naive"],
)
def test_snapshot_timestamps_are_normalised_to_utc(text: str, expected: datetime) -> None:
    """Snapshot timestamps with an offset, Z or no zone all become the same aware UTC instant."""
    snap = Snapshot.model_validate(
        {
            "id": SNAP,
            "created": {"date": text},
            "expires": text,
            "lastOplogAppliedTimestamp": {"date": text, "increment": 1},
        }
    )

    assert snap.last_oplog_applied_timestamp is not None
    for value in (snap.created.date, snap.expires, snap.last_oplog_applied_timestamp.date):
        assert value is not None
        assert value == expected
        assert value.tzinfo is UTC
        assert value.hour == 0
        assert value.day == 1


def test_snapshot_to_api_writes_utc_z_timestamps() -> None:
    """to_api writes timestamps as YYYY-MM-DDTHH:MM:SSZ in UTC, dropping sub-seconds."""
    snap = Snapshot.model_validate(
        {
            "id": SNAP,
            "created": {"date": "2026-03-01T02:00:00.750+02:00", "increment": 4},
            "expires": "2026-03-07T19:00:00-05:00",
        }
    )

    body = snap.to_api()

    assert body["created"] == {"date": "2026-03-01T00:00:00Z", "increment": 4}
    assert body["expires"] == "2026-03-08T00:00:00Z"
    assert body["doNotDelete"] is False
    assert body["complete"] is False
    assert "isPossiblyInconsistent" not in body
    assert "namespaceFilterList" not in body


# --- sharded snapshots -------------------------------------------------------------------------


def test_sharded_snapshot_parses_missing_shard_fields() -> None:
    """isPossiblyInconsistent and every MissingShard field are parsed, lastHeartbeat in UTC."""
    snap = Snapshot.model_validate(
        sharded_snapshot(possibly_inconsistent=True, missing=[MISSING_SHARD])
    )

    assert snap.is_possibly_inconsistent is True
    assert snap.missing_shards is not None
    shard = snap.missing_shards[0]
    assert shard.id == "5c8100c0f2a30b12ff88aaaa"
    assert shard.group_id == GROUP
    assert shard.type_name == "REPLICA_SET"
    assert shard.cluster_name == "Sharded0"
    assert shard.shard_name == "shard-02"
    assert shard.replica_set_name == "shard-02-rs"
    assert shard.last_heartbeat == datetime(2026, 2, 28, 23, 58, 0, tzinfo=UTC)
    assert shard.last_heartbeat.tzinfo is UTC
    assert shard.links[0].rel == "self"
    assert shard.links[0].href == f"{BASE}/groups/{GROUP}/clusters/5c8100c0f2a30b12ff88aaaa"


@pytest.mark.parametrize(
    ("possibly_inconsistent", "missing", "expected"),
    [
        (True, [MISSING_SHARD], False),
        (True, [], False),
        (True, None, False),
        (False, [MISSING_SHARD], False),
        (False, [], True),
        (False, None, True),
    ],
    ids=[
        "both-flags",
        "inconsistent-empty-missing",
        "inconsistent-no-missing-field",
        "missing-shard-only",
        "empty-missing-shards",
        "consistent-no-missing-field",
    ],
)
def test_sharded_snapshot_is_consistent(
    possibly_inconsistent: bool, missing: list[dict[str, Any]] | None, expected: bool
) -> None:
    """is_consistent is False when the snapshot is flagged inconsistent or lists missing shards."""
    snap = Snapshot.model_validate(
        sharded_snapshot(possibly_inconsistent=possibly_inconsistent, missing=missing)
    )

    assert snap.is_consistent is expected


def test_replica_set_snapshot_is_consistent() -> None:
    """A replica-set snapshot without the sharded-only fields is consistent."""
    snap = Snapshot.model_validate(full_snapshot())

    assert snap.is_possibly_inconsistent is None
    assert snap.missing_shards is None
    assert snap.is_consistent is True


# --- config-server snapshots -------------------------------------------------------------------


def test_config_server_snapshot_accepts_namespace_filter_array() -> None:
    """A config-server namespaceFilterList given as an object array parses into a list."""
    snap = ConfigServerSnapshot.model_validate(
        config_server_snapshot(
            [
                {"filterList": ["config.changelog"], "filterType": "denyList"},
                {"filterList": ["app"], "filterType": "accessList"},
            ]
        )
    )

    assert snap.namespace_filter_list == [
        NamespaceFilterList(filter_list=["config.changelog"], filter_type="denyList"),
        NamespaceFilterList(filter_list=["app"], filter_type="accessList"),
    ]


def test_config_server_snapshot_accepts_single_namespace_filter_object() -> None:
    """A config-server namespaceFilterList given as a single object parses into one object."""
    snap = ConfigServerSnapshot.model_validate(
        config_server_snapshot({"filterList": ["local"], "filterType": "denylist"})
    )

    assert snap.namespace_filter_list == NamespaceFilterList(
        filter_list=["local"], filter_type="denylist"
    )


@pytest.mark.parametrize("spelling", ["denyList", "denylist", "accessList", "SomethingNew"])
def test_filter_type_spelling_is_kept_as_given(spelling: str) -> None:
    """filterType is kept as the exact string the server sent, whatever its spelling."""
    snap = ConfigServerSnapshot.model_validate(
        config_server_snapshot([{"filterList": [], "filterType": spelling}])
    )
    cluster_snap = Snapshot.model_validate(
        {**full_snapshot(), "namespaceFilterList": {"filterType": spelling}}
    )

    assert isinstance(snap.namespace_filter_list, list)
    assert snap.namespace_filter_list[0].filter_type == spelling
    assert cluster_snap.namespace_filter_list is not None
    assert cluster_snap.namespace_filter_list.filter_type == spelling
    assert cluster_snap.namespace_filter_list.filter_list == []


def test_config_server_snapshot_single_part_and_host_id_fields() -> None:
    """The one config-server part has hostId and CONFIG_SERVER; HOST-ID is read at both levels."""
    snap = ConfigServerSnapshot.model_validate(config_server_snapshot([]))

    assert snap.id == "5c81086e014b76a3d85e3333"
    assert snap.do_not_delete is True
    assert snap.host_id_upper == HOST
    assert len(snap.parts) == 1
    part = snap.parts[0]
    assert isinstance(part, ConfigServerPart)
    assert part.host_id == HOST
    assert part.host_id_upper == HOST
    assert part.type_name == "CONFIG_SERVER"
    assert part.machine_id == "cfg-1.example.com:27019"
    assert part.server_version == "3.2.22"
    assert part.fcv == "3.2"
    assert part.replica_state == "PRIMARY"
    assert part.encryption_enabled is False
    assert part.master_key_uuid is None
    assert (part.data_size_bytes, part.file_size_bytes, part.storage_size_bytes) == (
        5000,
        6000,
        4000,
    )
    assert snap.to_api()["HOST-ID"] == HOST
    assert snap.to_api()["parts"][0]["HOST-ID"] == HOST


def test_config_server_snapshot_without_host_id_upper() -> None:
    """A config-server snapshot without HOST-ID leaves host_id_upper None at both levels."""
    body = config_server_snapshot(None)
    del body["HOST-ID"]
    del body["parts"][0]["HOST-ID"]

    snap = ConfigServerSnapshot.model_validate(body)

    assert snap.host_id_upper is None
    assert snap.parts[0].host_id_upper is None
    assert snap.parts[0].host_id == HOST
    assert snap.namespace_filter_list is None


def test_config_server_part_with_encryption_reads_master_key() -> None:
    """A config-server part with encryption enabled reads masterKeyUUID into master_key_uuid."""
    body = config_server_snapshot([])
    body["parts"][0]["encryptionEnabled"] = True
    body["parts"][0]["masterKeyUUID"] = "5c8100bcf2a30b12ff88ffff"

    snap = ConfigServerSnapshot.model_validate(body)

    assert snap.parts[0].encryption_enabled is True
    assert snap.parts[0].master_key_uuid == "5c8100bcf2a30b12ff88ffff"


def test_config_server_snapshot_page_parses() -> None:
    """The config-server page adapter parses results, links and totalCount from raw bytes."""
    page = {
        "results": [config_server_snapshot([{"filterList": [], "filterType": "denyList"}])],
        "links": [_self_link(f"/groups/{GROUP}/hosts/{HOST}/snapshots?pageNum=1")],
        "totalCount": 3,
    }

    parsed = CONFIG_SERVER_SNAPSHOT_PAGE.validate_json(json.dumps(page).encode())

    assert parsed.total_count == 3
    assert len(parsed.results) == 1
    assert parsed.results[0].parts[0].type_name == "CONFIG_SERVER"
    assert parsed.links[0].rel == "self"


# --- alerts ------------------------------------------------------------------------------------


def test_backup_alert_fields() -> None:
    """A BACKUP alert carries replicaSetName and sourceTypeName."""
    parsed = Alert.model_validate(
        alert(
            "a-backup",
            eventTypeName="BACKUP",
            replicaSetName="rs0",
            sourceTypeName="REPLICA_SET",
        )
    )

    assert parsed.id == "a-backup"
    assert parsed.group_id == GROUP
    assert parsed.alert_config_id == "5c8100bcf2a30b12ff88aa01"
    assert parsed.event_type_name == "BACKUP"
    assert parsed.status == AlertStatus.OPEN
    assert parsed.created == datetime(2026, 3, 1, 5, 0, 0, tzinfo=UTC)
    assert parsed.updated == datetime(2026, 3, 1, 5, 10, 0, tzinfo=UTC)
    assert parsed.last_notified == datetime(2026, 3, 1, 5, 1, 0, tzinfo=UTC)
    assert parsed.tags == ["prod"]
    assert parsed.links[0].href == f"{BASE}/groups/{GROUP}/alerts/a-backup"
    assert parsed.replica_set_name == "rs0"
    assert parsed.source_type_name == "REPLICA_SET"
    assert parsed.host_id is None
    assert parsed.current_value is None


def test_host_down_alert_fields() -> None:
    """A HOST_DOWN alert carries hostId, hostnameAndPort and replicaSetName."""
    parsed = Alert.model_validate(
        alert(
            "a-hostdown",
            eventTypeName="HOST_DOWN",
            hostId=HOST,
            hostnameAndPort="db-rs0-2.example.com:27017",
            replicaSetName="rs0",
        )
    )

    assert parsed.event_type_name == "HOST_DOWN"
    assert parsed.host_id == HOST
    assert parsed.hostname_and_port == "db-rs0-2.example.com:27017"
    assert parsed.replica_set_name == "rs0"
    assert parsed.metric_name is None


def test_outside_metric_threshold_alert_fields() -> None:
    """An OUTSIDE_METRIC_THRESHOLD alert carries currentValue number and units and metricName."""
    parsed = Alert.model_validate(
        alert(
            "a-metric",
            eventTypeName="OUTSIDE_METRIC_THRESHOLD",
            hostId=HOST,
            hostnameAndPort="[2001:db8::7]:27017",
            replicaSetName="rs0",
            metricName="CONNECTIONS",
            currentValue={"number": 1234.5, "units": "RAW"},
        )
    )

    assert parsed.event_type_name == "OUTSIDE_METRIC_THRESHOLD"
    assert parsed.metric_name == "CONNECTIONS"
    assert parsed.current_value is not None
    assert parsed.current_value.number == 1234.5
    assert parsed.current_value.units == "RAW"
    assert parsed.hostname_and_port == "[2001:db8::7]:27017"
    assert parsed.host_id == HOST


def test_sharded_cluster_alert_fields() -> None:
    """A SHARDED_CLUSTER alert carries clusterId and clusterName."""
    parsed = Alert.model_validate(
        alert(
            "a-sharded",
            eventTypeName="SHARDED_CLUSTER",
            clusterId=CLUSTER,
            clusterName="Sharded0",
        )
    )

    assert parsed.event_type_name == "SHARDED_CLUSTER"
    assert parsed.cluster_id == CLUSTER
    assert parsed.cluster_name == "Sharded0"
    assert parsed.replica_set_name is None


def test_acknowledged_closed_alert_fields() -> None:
    """Acknowledgement fields, resolved, humanReadable and typeName parse, with offsets made UTC."""
    parsed = Alert.model_validate(
        alert(
            "a-ack",
            eventTypeName="REPLICA_SET",
            status="CLOSED",
            acknowledgedUntil="2126-03-01T07:00:00+02:00",
            acknowledgementComment="Known maintenance window",
            acknowledgingUsername="ops@example.com",
            resolved="2026-03-01T06:00:00Z",
            humanReadable="Replica set rs0 has no primary",
            typeName="REPLICA_SET",
        )
    )

    assert parsed.status == AlertStatus.CLOSED
    assert parsed.acknowledged_until == datetime(2126, 3, 1, 5, 0, 0, tzinfo=UTC)
    assert parsed.acknowledged_until.tzinfo is UTC
    assert parsed.acknowledgement_comment == "Known maintenance window"
    assert parsed.acknowledging_username == "ops@example.com"
    assert parsed.resolved == datetime(2026, 3, 1, 6, 0, 0, tzinfo=UTC)
    assert parsed.human_readable == "Replica set rs0 has no primary"
    assert parsed.type_name == "REPLICA_SET"


def test_unacknowledged_alert_has_no_acknowledgement_fields() -> None:
    """An alert without acknowledgement fields leaves them None and tags default to empty."""
    body = alert("a-plain", eventTypeName="MONITORING_AGENT_DOWN")
    del body["tags"]

    parsed = Alert.model_validate(body)

    assert parsed.acknowledged_until is None
    assert parsed.acknowledgement_comment is None
    assert parsed.acknowledging_username is None
    assert parsed.tags == []


@pytest.mark.parametrize(
    ("event_type", "status"),
    [
        ("SOME_FUTURE_EVENT", "OPEN"),
        ("BACKUP", "SNOOZED"),
        ("BRAND_NEW_EVENT", "ARCHIVED"),
        ("CLUSTERSHOT_EXPIRY_UPDATED_AUDIT", AlertStatus.TRACKING),
        ("GOOD_CLUSTERSHOT", AlertStatus.CANCELLED),
    ],
)
def test_alert_event_type_and_status_stay_strings(event_type: str, status: str) -> None:
    """Unknown eventTypeName and status values parse and are kept as the given strings."""
    parsed = Alert.model_validate(alert("a-x", eventTypeName=event_type, status=status))

    assert parsed.event_type_name == event_type
    assert parsed.status == status
    assert type(parsed.status) is str
    assert type(parsed.event_type_name) is str


def test_alert_page_parses_with_envelope_status() -> None:
    """The alert page adapter parses results and keeps the envelope status."""
    page = {
        "results": [
            alert("a-1", eventTypeName="HOST_DOWN", hostId=HOST),
            alert("a-2", eventTypeName="BACKUP", sourceTypeName="SHARDED_CLUSTER"),
        ],
        "links": [_self_link(f"/groups/{GROUP}/alerts?pageNum=1&itemsPerPage=2")],
        "totalCount": 5,
        "status": 200,
    }

    parsed = ALERT_PAGE.validate_json(json.dumps(page).encode())

    assert [a.id for a in parsed.results] == ["a-1", "a-2"]
    assert parsed.results[1].source_type_name == "SHARDED_CLUSTER"
    assert parsed.total_count == 5
    assert parsed.status == 200


# --- agent links -------------------------------------------------------------------------------

AGENT_LINKS = {
    "links": [
        _self_link(f"/groups/{GROUP}/agents"),
        {"href": f"{BASE}/groups/{GROUP}", "rel": f"{REL_NS}/group"},
        {"href": f"{BASE}/groups/{GROUP}/agents/MONITORING", "rel": f"{REL_NS}/monitoringAgents"},
        {"href": f"{BASE}/groups/{GROUP}/agents/BACKUP", "rel": f"{REL_NS}/backupAgents"},
        {"href": f"{BASE}/groups/{GROUP}/agents/AUTOMATION", "rel": f"{REL_NS}/automationAgents"},
    ]
}


@pytest.mark.parametrize(
    ("name", "href"),
    [
        ("self", f"{BASE}/groups/{GROUP}/agents"),
        ("group", f"{BASE}/groups/{GROUP}"),
        ("monitoringAgents", f"{BASE}/groups/{GROUP}/agents/MONITORING"),
        ("backupAgents", f"{BASE}/groups/{GROUP}/agents/BACKUP"),
        ("automationAgents", f"{BASE}/groups/{GROUP}/agents/AUTOMATION"),
    ],
)
def test_agent_links_relation_finds_vendor_prefixed_rel(name: str, href: str) -> None:
    """relation(name) finds the link whose rel is name or ends with /name after a vendor prefix."""
    links = AgentLinks.model_validate(AGENT_LINKS)

    found = links.relation(name)

    assert found is not None
    assert found.href == href


@pytest.mark.parametrize("name", ["restoreAgents", "Agents", "agents", "rel/backup"])
def test_agent_links_relation_returns_none_when_absent(name: str) -> None:
    """relation returns None for a relation that no link carries, including partial suffixes."""
    links = AgentLinks.model_validate(AGENT_LINKS)

    assert links.relation(name) is None


def test_agent_links_from_bytes_with_unknown_fields() -> None:
    """An agents response with extra fields parses to exactly its links."""
    raw = json.dumps({**AGENT_LINKS, "results": [], "totalCount": 0}).encode()

    links = AgentLinks.model_validate_json(raw)

    assert len(links.links) == 5
    backup = links.relation("backupAgents")
    assert backup is not None
    assert backup.rel == "http://vendor.example/rel/backupAgents"


# --- clusters and hosts ------------------------------------------------------------------------


def test_cluster_page_parses_clusters() -> None:
    """The cluster page adapter maps each cluster's camelCase fields to snake_case attributes."""
    page = {
        "results": [
            {
                "id": CLUSTER,
                "groupId": GROUP,
                "clusterName": "Cluster0",
                "typeName": "REPLICA_SET",
                "replicaSetName": "rs0",
                "links": [_self_link(f"/groups/{GROUP}/clusters/{CLUSTER}")],
                "lastHeartbeat": "2026-03-01T00:00:00Z",
            },
            {
                "id": "5c8100c0f2a30b12ff88bbbb",
                "groupId": GROUP,
                "clusterName": "Sharded0",
                "typeName": "SHARDED_REPLICA_SET",
                "shardName": "shard-01",
            },
        ],
        "links": [_self_link(f"/groups/{GROUP}/clusters")],
        "totalCount": 2,
    }

    parsed = CLUSTER_PAGE.validate_json(json.dumps(page).encode())

    first, second = parsed.results
    assert isinstance(first, Cluster)
    assert (first.id, first.group_id, first.cluster_name) == (CLUSTER, GROUP, "Cluster0")
    assert (first.type_name, first.replica_set_name, first.shard_name) == (
        "REPLICA_SET",
        "rs0",
        None,
    )
    assert first.links[0].rel == "self"
    assert second.shard_name == "shard-01"
    assert second.links == []
    assert parsed.total_count == 2


def test_host_fields_parse() -> None:
    """A host maps hostname, port, typeName and replicaSetName to snake_case attributes."""
    host = Host.model_validate(
        {
            "id": HOST,
            "groupId": GROUP,
            "hostname": "cfg-1.example.com",
            "port": 27019,
            "typeName": "SHARD_CONFIG",
            "replicaSetName": None,
            "links": [_self_link(f"/groups/{GROUP}/hosts/{HOST}")],
            "uptimeMsec": 123,
        }
    )

    assert host.id == HOST
    assert host.group_id == GROUP
    assert host.hostname == "cfg-1.example.com"
    assert host.port == 27019
    assert host.type_name == "SHARD_CONFIG"
    assert host.replica_set_name is None
    assert host.links[0].href == f"{BASE}/groups/{GROUP}/hosts/{HOST}"


@pytest.mark.parametrize(
    ("type_name", "expected"),
    [
        ("SHARD_CONFIG", True),
        ("REPLICA_PRIMARY", False),
        ("REPLICA_SECONDARY", False),
        ("SHARD_MONGOS", False),
        ("CONFIG_SERVER", False),
        ("shard_config", False),
        (None, False),
    ],
)
def test_host_is_legacy_config_server_only_for_shard_config(
    type_name: str | None, expected: bool
) -> None:
    """is_legacy_config_server is True only for typeName SHARD_CONFIG."""
    body: dict[str, Any] = {"id": HOST, "hostname": "h.example.com", "port": 27017}
    if type_name is not None:
        body["typeName"] = type_name

    assert Host.model_validate(body).is_legacy_config_server is expected


def test_host_page_parses_hosts() -> None:
    """The host page adapter parses a page of hosts with total count."""
    page = {
        "results": [
            {
                "id": HOST,
                "hostname": "cfg-1.example.com",
                "port": 27019,
                "typeName": "SHARD_CONFIG",
            },
            {
                "id": "h2",
                "hostname": "db.example.com",
                "port": 27017,
                "typeName": "REPLICA_PRIMARY",
            },
        ],
        "links": [_self_link(f"/groups/{GROUP}/hosts")],
        "totalCount": 2,
    }

    parsed = HOST_PAGE.validate_json(json.dumps(page).encode())

    assert [h.is_legacy_config_server for h in parsed.results] == [True, False]
    assert parsed.total_count == 2


# --- list pages --------------------------------------------------------------------------------


def test_snapshot_page_validate_json_returns_list_page() -> None:
    """SNAPSHOT_PAGE.validate_json on raw bytes returns a ListPage with results, links and total."""
    self_href = f"{BASE}/groups/{GROUP}/clusters/{CLUSTER}/snapshots?pageNum=1&itemsPerPage=2"
    page = {
        "results": [
            full_snapshot(),
            {"id": "second", "created": {"date": "2026-03-02T02:00:00Z", "increment": 1}},
        ],
        "links": [
            {"href": self_href, "rel": "self"},
            {"href": self_href.replace("pageNum=1", "pageNum=2"), "rel": "next"},
        ],
        "totalCount": 17,
    }

    parsed = SNAPSHOT_PAGE.validate_json(json.dumps(page).encode())

    assert isinstance(parsed, ListPage)
    assert [s.id for s in parsed.results] == [SNAP, "second"]
    assert all(isinstance(s, Snapshot) for s in parsed.results)
    assert parsed.results[1].complete is False
    assert parsed.links[0].rel == "self"
    assert parsed.links[0].href == self_href
    assert parsed.links[1].rel == "next"
    assert parsed.total_count == 17
    assert parsed.status is None


def test_snapshot_page_envelope_mode_keeps_status() -> None:
    """A list page in envelope mode keeps its status field."""
    page = {
        "results": [],
        "links": [_self_link(f"/groups/{GROUP}/clusters/{CLUSTER}/snapshots?pageNum=1")],
        "totalCount": 0,
        "status": 200,
    }

    parsed = SNAPSHOT_PAGE.validate_json(json.dumps(page).encode())

    assert parsed.status == 200
    assert parsed.results == []
    assert parsed.total_count == 0


def test_empty_page_body_gets_defaults() -> None:
    """A page body with no fields parses to empty results and links and no count."""
    parsed = SNAPSHOT_PAGE.validate_json(b"{}")

    assert parsed.results == []
    assert parsed.links == []
    assert parsed.total_count is None
    assert parsed.status is None


# --- snapshot PATCH body -----------------------------------------------------------------------


def test_snapshot_patch_protect() -> None:
    """protect() sends only doNotDelete true."""
    assert SnapshotPatch.protect().to_api() == {"doNotDelete": True}


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (datetime(2026, 3, 1, 2, 0, 0, tzinfo=PLUS_TWO), "2026-03-01T00:00:00Z"),
        (datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC), "2026-03-01T00:00:00Z"),
        (
            datetime(2026, 2, 28, 19, 0, 0, tzinfo=timezone(timedelta(hours=-5))),
            "2026-03-01T00:00:00Z",
        ),
        (datetime(2026, 3, 1, 0, 0, 0), "2026-03-01T00:00:00Z"),
    ],
    ids=["plus-0200", "utc", "minus-0500", "naive"],
)
def test_snapshot_patch_expire_at(when: datetime, expected: str) -> None:
    """expire_at(dt) sends only expires, written in UTC with a Z suffix."""
    patch = SnapshotPatch.expire_at(when)

    assert patch.to_api() == {"expires": expected}
    assert patch.expires == datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC)
    assert patch.do_not_delete is None


def test_snapshot_patch_release() -> None:
    """release(dt) sends doNotDelete false together with expires in UTC."""
    patch = SnapshotPatch.release(datetime(2026, 4, 1, 12, 30, 0, tzinfo=PLUS_TWO))

    assert patch.to_api() == {"doNotDelete": False, "expires": "2026-04-01T10:30:00Z"}


def test_snapshot_patch_json_dump_matches_to_api() -> None:
    """The JSON dump of a patch is the same wire body as to_api."""
    patch = SnapshotPatch.release(datetime(2026, 4, 1, 12, 30, 0, tzinfo=PLUS_TWO))

    assert json.loads(patch.model_dump_json()) == {
        "doNotDelete": False,
        "expires": "2026-04-01T10:30:00Z",
    }


def test_snapshot_patch_rejects_protect_with_expires() -> None:
    """doNotDelete true together with expires raises a ValidationError that mentions doNotDelete."""
    with pytest.raises(ValidationError, match="doNotDelete"):
        SnapshotPatch(do_not_delete=True, expires=datetime(2026, 3, 1, tzinfo=UTC))


def test_snapshot_patch_rejects_protect_with_expires_from_wire_names() -> None:
    """The same rule holds when the patch is built from camelCase wire data."""
    with pytest.raises(ValidationError, match="doNotDelete"):
        SnapshotPatch.model_validate({"doNotDelete": True, "expires": "2026-03-01T00:00:00Z"})


def test_snapshot_patch_rejects_empty_body() -> None:
    """A patch with neither doNotDelete nor expires raises a ValidationError."""
    with pytest.raises(ValidationError, match="must set doNotDelete or expires"):
        SnapshotPatch()


def test_snapshot_patch_allows_unprotect_only() -> None:
    """doNotDelete false without expires is a valid body."""
    assert SnapshotPatch(do_not_delete=False).to_api() == {"doNotDelete": False}


def test_snapshot_patch_is_frozen() -> None:
    """Assigning an attribute of a patch raises, so a checked patch cannot be made invalid."""
    patch = SnapshotPatch.protect()

    with pytest.raises(ValidationError, match="frozen"):
        patch.expires = datetime(2026, 3, 1, tzinfo=UTC)  # type: ignore[misc]

    assert patch.to_api() == {"doNotDelete": True}


# --- alert acknowledgement ---------------------------------------------------------------------


def test_alert_acknowledgement_omits_acknowledged_until_when_absent() -> None:
    """An acknowledgement without acknowledged_until omits acknowledgedUntil from the body."""
    assert AlertAcknowledgement().to_api() == {}
    assert AlertAcknowledgement(acknowledgement_comment="done").to_api() == {
        "acknowledgementComment": "done"
    }


def test_alert_acknowledgement_writes_utc_until() -> None:
    """An acknowledgement with an offset time writes acknowledgedUntil in UTC with Z."""
    ack = AlertAcknowledgement(
        acknowledged_until=datetime(2126, 3, 1, 2, 0, 0, tzinfo=PLUS_TWO),
        acknowledgement_comment="Known maintenance window",
    )

    assert ack.to_api() == {
        "acknowledgedUntil": "2126-03-01T00:00:00Z",
        "acknowledgementComment": "Known maintenance window",
    }


# --- invalid input -----------------------------------------------------------------------------


def test_snapshot_without_id_is_rejected() -> None:
    """A snapshot without id raises a ValidationError naming the id field."""
    body = full_snapshot()
    del body["id"]

    with pytest.raises(ValidationError) as excinfo:
        Snapshot.model_validate(body)

    assert [err["loc"] for err in excinfo.value.errors()] == [("id",)]
    assert excinfo.value.errors()[0]["type"] == "missing"


def test_snapshot_with_bad_created_date_is_rejected() -> None:
    """A snapshot whose created.date is not a date raises a ValidationError at created.date."""
    body = full_snapshot()
    body["created"]["date"] = "not a date"

    with pytest.raises(ValidationError) as excinfo:
        Snapshot.model_validate(body)

    assert [err["loc"] for err in excinfo.value.errors()] == [("created", "date")]


def test_snapshot_without_created_is_rejected() -> None:
    """A snapshot without created raises a ValidationError naming created."""
    with pytest.raises(ValidationError) as excinfo:
        Snapshot.model_validate({"id": SNAP})

    assert [err["loc"] for err in excinfo.value.errors()] == [("created",)]


def test_alert_without_status_is_rejected() -> None:
    """An alert without the always-present status field raises a ValidationError."""
    body = alert("a-bad", eventTypeName="BACKUP")
    del body["status"]

    with pytest.raises(ValidationError) as excinfo:
        Alert.model_validate(body)

    assert [err["loc"] for err in excinfo.value.errors()] == [("status",)]


def test_snapshot_to_api_round_trips_through_parsing() -> None:
    """A snapshot written with to_api() parses back to an equal model (masterKeyUUID included)."""
    original = Snapshot.model_validate(full_snapshot())

    written = original.to_api()

    assert written["parts"][0]["masterKeyUUID"] == "72659f08-8b3c-4913-bb4e-a8a68e036502"
    assert Snapshot.model_validate(written) == original


@pytest.mark.parametrize(
    ("asked", "written"),
    [
        (datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC), "2026-03-01T10:00:00Z"),
        (datetime(2026, 3, 1, 10, 0, 0, 1, tzinfo=UTC), "2026-03-01T10:00:01Z"),
        (datetime(2026, 12, 31, 23, 59, 59, 500000, tzinfo=UTC), "2027-01-01T00:00:00Z"),
    ],
)
def test_snapshot_patch_rounds_expires_up_to_whole_seconds(asked: datetime, written: str) -> None:
    """A sub-second expiry is written rounded up, never earlier than the expiry decided."""
    patch = SnapshotPatch.expire_at(asked)

    assert patch.to_api() == {"expires": written}
    assert patch.expires is not None
    assert patch.expires >= asked


def test_a_part_reads_the_real_mongod_version_and_the_documents_server_version() -> None:
    """Parts name the version mongodVersion in real answers and serverVersion in the API
    document: both are read, and written back the real way."""
    real = SnapshotPart.model_validate({"typeName": "REPLICA_SET", "mongodVersion": "7.0.3"})
    seed = SnapshotPart.model_validate({"typeName": "REPLICA_SET", "serverVersion": "6.0.14"})

    assert (real.server_version, seed.server_version) == ("7.0.3", "6.0.14")
    assert real.to_api()["mongodVersion"] == "7.0.3"
