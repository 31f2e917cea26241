"""Every endpoint of the spec and the two discovery lists: method, path, query, body sent,
and the parsed result."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from retention.api.client import OpsManagerClient
from retention.core.snapshot import SnapshotPatch
from retention.errors import RefusedRequestError
from tests.support.fakeapi import (
    BASE_URL,
    SERVICE_VERSION,
    Answer,
    FakeApi,
    Request,
    json_answer,
    list_page,
    paged,
    snapshot,
)

P = "5e2211c17a3e5a48f5497de3"
C = "5e4e593f70dfbf1e2f6e1d30"
SNAP_PATH = f"/groups/{P}/clusters/{C}/snapshots/s1"

ALERT = {
    "id": "a1",
    "groupId": P,
    "alertConfigId": "cfg1",
    "eventTypeName": "BAD_CLUSTERSHOTS",
    "status": "OPEN",
    "created": "2026-11-20T10:00:00Z",
    "updated": "2026-11-20T10:00:00Z",
    "clusterId": C,
    "clusterName": "prod",
    "links": [{"href": f"{BASE_URL}/groups/{P}/alerts/a1", "rel": "self"}],
}


def echo_patch(request: Request) -> Answer:
    """Answer a snapshot PATCH with the snapshot as the body changed it."""
    changed = snapshot("s1", doNotDelete=False, expires="2026-12-01T00:00:00Z")
    if request.body.get("doNotDelete") is True:
        changed = {**changed, "doNotDelete": True}
        changed.pop("expires")
    if "expires" in request.body:
        changed = {**changed, "expires": request.body["expires"]}
    if "doNotDelete" in request.body and request.body["doNotDelete"] is False:
        changed["doNotDelete"] = False
    return json_answer(changed)


def test_get_snapshot_parses_and_captures_service_version(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """GET one snapshot returns the model, and the X-MongoDB-Service-Version header is kept."""
    fake.answer("GET", SNAP_PATH, snapshot("s1", expires="2026-12-01T05:00:00+05:00"))

    result = client.get_snapshot(P, C, "s1")

    assert result.id == "s1"
    assert result.expires == datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
    assert client.service_version == SERVICE_VERSION


@pytest.mark.parametrize("header", ["X-MongoDB-Service-Version", "X-Server-Service-Version"])
def test_either_spelling_of_the_service_version_header_is_read(
    fake: FakeApi, client: OpsManagerClient, header: str
) -> None:
    """The real service's header name and the API document's are both read."""
    headers = {"X-MongoDB-Service-Version": "", header: "gitHash=ab12; versionString=7.0.3"}
    fake.route("GET", re.escape(SNAP_PATH), lambda _r: json_answer(snapshot("s1"), 200, headers))

    client.get_snapshot(P, C, "s1")

    assert client.service_version == "gitHash=ab12; versionString=7.0.3"


@pytest.mark.parametrize("completed", ["true", "false", "all"])
def test_list_snapshots_passes_the_completed_filter(
    fake: FakeApi, client: OpsManagerClient, completed: str
) -> None:
    """list_snapshots sends completed=true|false|all as given."""
    fake.route("GET", f"/groups/{P}/clusters/{C}/snapshots", paged([snapshot("s1")]))

    client.list_snapshots(P, C, completed=completed).collect()  # type: ignore[arg-type]

    assert fake.calls(200)[0].query["completed"] == completed


@pytest.mark.parametrize(
    ("patch", "sent"),
    [
        (SnapshotPatch.protect(), {"doNotDelete": True}),
        (
            SnapshotPatch.expire_at(
                datetime(2026, 11, 22, 4, 0, tzinfo=timezone(timedelta(hours=1)))
            ),
            {"expires": "2026-11-22T03:00:00Z"},
        ),
        (
            SnapshotPatch.release(datetime(2026, 11, 23, 0, 0, 0, 999, tzinfo=UTC)),
            {"doNotDelete": False, "expires": "2026-11-23T00:00:01Z"},
        ),
    ],
    ids=["protect", "expire", "release"],
)
def test_patch_snapshot_sends_exactly_the_patch(
    fake: FakeApi, client: OpsManagerClient, patch: SnapshotPatch, sent: dict[str, object]
) -> None:
    """PATCH sends the body the SnapshotPatch describes, as JSON, and parses the answer."""
    fake.route("PATCH", SNAP_PATH, echo_patch)

    result = client.patch_snapshot(P, C, "s1", patch)

    assert fake.calls(200)[0].body == sent
    assert result.do_not_delete is bool(sent.get("doNotDelete"))


def test_forced_invalid_patch_is_refused_without_sending(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """A patch forced to hold doNotDelete true with expires (skipping validation) is not sent."""
    forced = SnapshotPatch.protect().model_copy(
        update={"expires": datetime(2027, 1, 1, tzinfo=UTC)}
    )

    with pytest.raises(RefusedRequestError, match="doNotDelete: true together with expires") as e:
        client.patch_snapshot(P, C, "s1", forced)

    assert e.value.status is None
    assert fake.seen == []


def test_config_server_snapshots_list_and_get_note_the_deprecation_once(
    fake: FakeApi, client: OpsManagerClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Config-server list and get work and note the deprecation once per client, at debug
    level: not a warning (the plan's notices say it)."""
    cs = snapshot(
        "cs1",
        namespaceFilterList=[{"filterList": [], "filterType": "denyList"}],
        parts=[{"hostId": "h1", "typeName": "CONFIG_SERVER"}],
    )
    fake.route("GET", f"/groups/{P}/hosts/h1/snapshots", paged([cs]))
    fake.answer("GET", f"/groups/{P}/hosts/h1/snapshots/cs1", cs)
    caplog.set_level(logging.DEBUG, logger="retention.api")

    listed = client.list_config_server_snapshots(P, "h1").collect()
    single = client.get_config_server_snapshot(P, "h1", "cs1")
    client.list_config_server_snapshots(P, "h1").collect()

    assert [s.id for s in listed] == ["cs1"]
    assert single.parts[0].host_id == "h1"
    deprecations = [r.levelname for r in caplog.records if "deprecated" in r.getMessage()]
    assert deprecations == ["DEBUG"]


@pytest.mark.parametrize(("status", "sent"), [(None, None), ("OPEN", "OPEN")])
def test_list_alerts_with_and_without_status(
    fake: FakeApi, client: OpsManagerClient, status: str | None, sent: str | None
) -> None:
    """list_alerts sends the status filter only when one is given."""
    fake.route("GET", f"/groups/{P}/alerts", paged([ALERT]))

    alerts = client.list_alerts(P, status=status).collect()

    assert [a.event_type_name for a in alerts] == ["BAD_CLUSTERSHOTS"]
    assert fake.calls(200)[0].query.get("status") == sent


def test_get_alert(fake: FakeApi, client: OpsManagerClient) -> None:
    """get_alert returns the alert with its cluster fields."""
    fake.answer("GET", f"/groups/{P}/alerts/a1", ALERT)

    alert = client.get_alert(P, "a1")

    assert (alert.id, alert.status, alert.cluster_id) == ("a1", "OPEN", C)


def test_acknowledge_alert_sends_utc_time_and_comment(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Acknowledging sends acknowledgedUntil in UTC with the comment; the answer is parsed."""

    def ack(request: Request) -> Answer:
        return json_answer(
            {
                **ALERT,
                "acknowledgedUntil": request.body["acknowledgedUntil"],
                "acknowledgementComment": request.body.get("acknowledgementComment"),
                "acknowledgingUsername": "pubkey-abcdef",
            }
        )

    fake.route("PATCH", f"/groups/{P}/alerts/a1", ack)
    until = datetime(2026, 11, 22, 12, 0, tzinfo=timezone(timedelta(hours=-5)))

    alert = client.acknowledge_alert(P, "a1", until, comment="run r-42")

    assert fake.calls(200)[0].body == {
        "acknowledgedUntil": "2026-11-22T17:00:00Z",
        "acknowledgementComment": "run r-42",
    }
    assert alert.acknowledged_until == datetime(2026, 11, 22, 17, 0, tzinfo=UTC)
    assert alert.acknowledging_username == "pubkey-abcdef"


def test_unacknowledge_alert_omits_acknowledged_until(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Unacknowledging is a PATCH without acknowledgedUntil."""
    fake.answer("PATCH", f"/groups/{P}/alerts/a1", ALERT)

    alert = client.unacknowledge_alert(P, "a1")

    assert fake.calls(200)[0].body == {}
    assert alert.acknowledged_until is None


def test_agent_links_find_the_backup_agents_relation(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Endpoint 9 parses the links, and the backupAgents relation is found under its prefix."""
    ns = "http://opsmanager.example/rel"
    base = f"{BASE_URL}/groups/{P}"
    fake.answer(
        "GET",
        f"/groups/{P}/agents",
        {
            "links": [
                {"href": f"{base}/agents", "rel": "self"},
                {"href": base, "rel": f"{ns}/group"},
                {"href": f"{base}/agents/MONITORING", "rel": f"{ns}/monitoringAgents"},
                {"href": f"{base}/agents/BACKUP", "rel": f"{ns}/backupAgents"},
                {"href": f"{base}/agents/AUTOMATION", "rel": f"{ns}/automationAgents"},
            ]
        },
    )

    links = client.get_agent_links(P)

    backup = links.relation("backupAgents")
    assert backup is not None
    assert backup.href.endswith("/agents/BACKUP")
    assert len(links.links) == 5


def test_discovery_lists_clusters_and_hosts(fake: FakeApi, client: OpsManagerClient) -> None:
    """list_clusters and list_hosts page like every list and parse their items."""
    fake.route(
        "GET",
        f"/groups/{P}/clusters",
        paged(
            [
                {
                    "id": C,
                    "clusterName": "prod",
                    "typeName": "REPLICA_SET",
                    "replicaSetName": "rs0",
                },
                {"id": "c2", "clusterName": "shard", "typeName": "SHARDED_REPLICA_SET"},
            ]
        ),
    )
    fake.answer(
        "GET",
        f"/groups/{P}/hosts",
        list_page(
            [
                {"id": "h1", "hostname": "cfg1.example", "port": 27019, "typeName": "SHARD_CONFIG"},
                {
                    "id": "h2",
                    "hostname": "db1.example",
                    "port": 27017,
                    "typeName": "REPLICA_PRIMARY",
                },
            ],
            2,
        ),
    )

    clusters = client.list_clusters(P).collect()
    hosts = client.list_hosts(P).collect()

    assert [(c.id, c.cluster_name) for c in clusters] == [(C, "prod"), ("c2", "shard")]
    assert [h.is_legacy_config_server for h in hosts] == [True, False]
