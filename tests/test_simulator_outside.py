"""Changes made outside retention, "as someone else", on a served simulator (POST
/__admin/outside) over real HTTP: each changes what the API then answers, opens the audit
alert the real service opens with a Backup alert's fields, stays out of the PATCH log and is
listed by GET /__admin/outside; bad bodies are 400 naming the field; and
`retention simulator outside` does the same from the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
from requests.auth import HTTPDigestAuth

from retention import cli
from retention.api.client import OpsManagerClient
from retention.api.models import Alert
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import format_timestamp
from retention.errors import NotFoundError
from retention.simulator.server import Simulator
from tests.support.client import PUBLIC_KEY
from tests.support.simfleet import (
    BIG,
    CFG,
    KEY,
    NOW,
    SHARD0,
    SHARDED,
    SMALL,
    P,
    client_for,
    outside_change,
)
from tests.test_real_service import real


@pytest.fixture
def api(sim: Simulator) -> Iterator[OpsManagerClient]:
    """Our client for the simulator."""
    with client_for(sim) as client:
        yield client


def audits(api: OpsManagerClient, owner_id: str) -> list[Alert]:
    """The audit alerts of the small fleet's project that name ``owner_id``."""
    return [
        a
        for a in api.list_alerts(P)
        if a.event_type_name.endswith("_AUDIT") and a.cluster_id == owner_id
    ]


def backup_fields(alert: Alert) -> tuple[str | None, ...]:
    """What names the backed-up deployment in an alert, and its types."""
    return (
        alert.event_type_name,
        alert.status,
        alert.type_name,
        alert.cluster_name,
        alert.replica_set_name,
        alert.source_type_name,
    )


def test_an_expiry_changed_outside_is_served_alerted_and_logged_but_is_no_patch(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """A new expiry set as someone else is what the API then answers; it opens one OPEN
    SNAPSHOT_EXPIRY_UPDATED_AUDIT naming the replica set, is listed by GET /__admin/outside
    with who made it, and is no PATCH of ours."""
    new = NOW + timedelta(hours=3)

    entry = outside_change(
        sim, "expires", cluster_id=SMALL, snapshot_id="fresh", expires=new, user="ops@example.com"
    )

    assert api.get_snapshot(P, SMALL, "fresh").expires == new
    [alert] = audits(api, SMALL)
    assert alert.id == entry["alertId"]
    assert backup_fields(alert) == (
        "SNAPSHOT_EXPIRY_UPDATED_AUDIT", "OPEN", "BACKUP", "prod-small", "rs-small", "REPLICA_SET",
    )  # fmt: skip
    assert alert.created == NOW
    assert (entry["before"], entry["after"]) == (
        {"doNotDelete": False, "expires": format_timestamp(NOW + timedelta(days=2))},
        {"doNotDelete": False, "expires": format_timestamp(new)},
    )
    assert (entry["user"], entry["alertOpened"], entry["deleted"]) == ("ops@example.com", True, 0)
    assert sim.admin("patches") == {"patches": []}
    assert sim.admin("outside") == {"outside": [entry]}


def test_lifting_do_not_delete_on_a_sharded_snapshot_opens_the_clustershot_audit(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """doNotDelete set then lifted on a sharded cluster's snapshot is served each time, and
    both are under one OPEN CLUSTERSHOT_EXPIRY_UPDATED_AUDIT that names the sharded cluster
    (no replica set)."""
    first = outside_change(
        sim, "doNotDelete", cluster_id=SHARDED, snapshot_id="shard-ok", do_not_delete=True
    )
    protected = api.get_snapshot(P, SHARDED, "shard-ok")
    second = outside_change(
        sim, "doNotDelete", cluster_id=SHARDED, snapshot_id="shard-ok", do_not_delete=False
    )

    assert (protected.do_not_delete, protected.expires) == (True, None)
    assert api.get_snapshot(P, SHARDED, "shard-ok").do_not_delete is False
    [alert] = audits(api, SHARDED)
    assert backup_fields(alert) == (
        "CLUSTERSHOT_EXPIRY_UPDATED_AUDIT", "OPEN", "BACKUP", "prod-sharded", None,
        "SHARDED_CLUSTER",
    )  # fmt: skip
    assert (first["alertId"], first["alertOpened"]) == (alert.id, True)
    assert (second["alertId"], second["alertOpened"]) == (alert.id, False)
    assert second["user"] == "someone@example.com"


@pytest.mark.parametrize(
    ("cluster_id", "snapshot_id", "event"),
    [
        (SMALL, "fresh", "SNAPSHOT_DELETED_AUDIT"),
        (SHARDED, "shard-bad", "CLUSTERSHOT_DELETED_AUDIT"),
    ],
)
def test_a_snapshot_deleted_outside_is_gone_and_alerted_once_per_cluster(
    sim: Simulator, api: OpsManagerClient, cluster_id: str, snapshot_id: str, event: str
) -> None:
    """A deleted snapshot is 404 and out of its cluster's list; a second deletion in the
    same cluster is under the same OPEN alert of the deletion type, not a second one."""
    before = [s.id for s in api.list_snapshots(P, cluster_id, completed="all")]

    entry = outside_change(sim, "delete", cluster_id=cluster_id, snapshot_id=snapshot_id)
    other = next(s for s in before if s != snapshot_id)
    again = outside_change(sim, "delete", cluster_id=cluster_id, snapshot_id=other)

    with pytest.raises(NotFoundError):
        api.get_snapshot(P, cluster_id, snapshot_id)
    after = [s.id for s in api.list_snapshots(P, cluster_id, completed="all")]
    assert after == [s for s in before if s not in (snapshot_id, other)]
    [alert] = audits(api, cluster_id)
    assert (alert.event_type_name, alert.status, alert.id) == (event, "OPEN", entry["alertId"])
    assert (entry["after"], entry["deleted"], again["alertOpened"]) == (None, 1, False)
    assert sim.admin("patches") == {"patches": []}


@pytest.mark.parametrize(
    ("cluster_id", "count", "event"),
    [(SMALL, 5, "RS_STATE_CHANGED_AUDIT"), (SHARDED, 2, "CLUSTER_STATE_CHANGED_AUDIT")],
)
def test_a_terminated_backup_deletes_every_snapshot_and_the_cluster_stays_listed(
    sim: Simulator, api: OpsManagerClient, cluster_id: str, count: int, event: str
) -> None:
    """Terminating a cluster's backup deletes all its snapshots at once and ends its
    schedule, the cluster stays in the clusters list, and the state-changed audit opens."""
    entry = outside_change(sim, "terminate", cluster_id=cluster_id)

    assert list(api.list_snapshots(P, cluster_id, completed="all")) == []
    assert api.get_snapshot_schedule(P, cluster_id) is None
    assert cluster_id in {c.id for c in api.list_clusters(P)}
    [alert] = audits(api, cluster_id)
    assert (alert.event_type_name, alert.id) == (event, entry["alertId"])
    assert (entry["before"], entry["after"], entry["deleted"]) == (
        {"snapshots": count}, {"snapshots": 0}, count,
    )  # fmt: skip


def test_a_removed_sharded_cluster_leaves_the_project_with_its_shard_rows(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """A sharded cluster removed from its project is no longer listed, nor is its shard's
    row; its snapshots answer 404; CLUSTER_STATE_CHANGED_AUDIT names it."""
    entry = outside_change(sim, "remove", cluster_id=SHARDED, user="cleanup-script")

    listed = {c.id for c in api.list_clusters(P)}
    assert (SHARDED in listed, SHARD0 in listed, SMALL in listed) == (False, False, True)
    with pytest.raises(NotFoundError):
        list(api.list_snapshots(P, SHARDED))
    [alert] = audits(api, SHARDED)
    assert (alert.event_type_name, alert.cluster_name) == (
        "CLUSTER_STATE_CHANGED_AUDIT",
        "prod-sharded",
    )
    assert (entry["deleted"], entry["user"]) == (2, "cleanup-script")


def test_a_config_servers_snapshots_change_outside_with_replica_set_audits(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """A legacy config server (its host id): an expiry change and a deletion are served by
    the config-server endpoints and open the replica-set audits, sourceTypeName
    CONFIG_SERVER; terminating its backup empties it."""
    new = NOW + timedelta(days=30)

    outside_change(sim, "expires", cluster_id=CFG, snapshot_id="cfg0", expires=new)
    outside_change(sim, "delete", cluster_id=CFG, snapshot_id="cfg1")
    changed = api.get_config_server_snapshot(P, CFG, "cfg0")
    left = [s.id for s in api.list_config_server_snapshots(P, CFG)]
    outside_change(sim, "terminate", cluster_id=CFG)

    assert (changed.expires, left) == (new, ["cfg0", "cfg2"])
    assert list(api.list_config_server_snapshots(P, CFG)) == []
    alerts = audits(api, CFG)
    assert sorted(a.event_type_name for a in alerts) == [
        "RS_STATE_CHANGED_AUDIT", "SNAPSHOT_DELETED_AUDIT", "SNAPSHOT_EXPIRY_UPDATED_AUDIT",
    ]  # fmt: skip
    assert {(a.cluster_name, a.source_type_name) for a in alerts} == {
        ("cfg0.legacy.example.net", "CONFIG_SERVER")
    }


def test_an_audit_alert_has_the_fields_of_the_real_backup_alert(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """The expiry audit our own PATCH opens (as the outside ones) carries every field the
    vendor's one Backup alert example carries (tests/fixtures/real), and nothing the Alert
    model does not know."""
    api.patch_snapshot(P, BIG, "big0000", SnapshotPatch(expires=NOW + timedelta(days=1)))
    [alert] = audits(api, BIG)
    answer = requests.get(
        f"{sim.base_url}/groups/{P}/alerts/{alert.id}",
        auth=HTTPDigestAuth(PUBLIC_KEY, KEY),
        timeout=10,
    )

    wire = set(answer.json())
    # lastNotified: the simulator notifies no one.
    assert set(real("alert_backup_global_goclient.json")) - {"lastNotified"} <= wire
    assert wire <= {field.alias for field in Alert.model_fields.values()}
    assert backup_fields(alert)[2:] == ("BACKUP", "prod-big", "rs-big", "REPLICA_SET")


def test_the_outside_log_is_cleared_by_a_reset(sim: Simulator) -> None:
    """POST /__admin/reset forgets the changes made outside, as it forgets the PATCH log."""
    outside_change(sim, "delete", cluster_id=SMALL, snapshot_id="held")

    sim.admin("reset", {})

    assert sim.admin("outside") == {"outside": []}


def post(sim: Simulator, body: object) -> requests.Response:
    """POST /__admin/outside as is."""
    return requests.post(f"{sim.admin_url}/outside", json=body, timeout=10)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"action": "shrink", "clusterId": SMALL}, "action: 'shrink' is none of"),
        ({"clusterId": SMALL}, "action: None is none of"),
        ({"action": "delete", "snapshotId": "fresh"}, "clusterId: required by delete"),
        ({"action": "delete", "clusterId": SMALL}, "snapshotId: required by delete"),
        ({"action": "expires", "clusterId": SMALL, "snapshotId": "fresh"}, "expires: required"),
        ({"action": "delete", "clusterId": "nope", "snapshotId": "x"}, "clusterId: no cluster"),
        ({"action": "delete", "clusterId": SMALL, "snapshotId": "nope"}, "snapshotId: no snapshot"),
        ({"action": "terminate", "clusterId": SMALL, "snapshotId": "x"}, "snapshotId: not a field"),
        ({"action": "terminate", "clusterId": SHARD0}, "clusterId: " + SHARD0 + " is a member"),
        ({"action": "remove", "clusterId": CFG}, "clusterId: " + CFG + " is a config server"),
        ({"action": "terminate", "clusterId": SMALL, "user": 7}, "user: must be"),
        (
            {"action": "expires", "clusterId": SMALL, "snapshotId": "fresh", "expires": "soon"},
            "expires is not a timestamp",
        ),
        (
            {"action": "expires", "clusterId": SMALL, "snapshotId": "doomed", "expires": None},
            "expires: Cannot modify snapshot",
        ),
        (
            {"action": "doNotDelete", "clusterId": SMALL, "snapshotId": "fresh", "doNotDelete": 1},
            "doNotDelete must be true or false",
        ),
    ],
)
def test_a_bad_body_is_400_naming_the_field_and_changes_nothing(
    sim: Simulator, body: dict[str, Any], named: str
) -> None:
    """A body that names no action, cluster or snapshot, or a value the API's rules refuse,
    is 400 with a message that names the field; nothing changes, no alert opens."""
    alerts_before = sim.admin("fleet")["projects"][0]["alerts"]

    answer = post(sim, body)

    assert answer.status_code == 400
    assert named in answer.json()["error"]
    assert sim.admin("outside") == {"outside": []}
    assert sim.admin("fleet")["projects"][0]["alerts"] == alerts_before


def run(capsys: pytest.CaptureFixture[str], sim: Simulator, *argv: str) -> tuple[int, str, str]:
    """`retention simulator outside ...` at the simulator's time: exit code, stdout, stderr."""
    code = cli.main(["simulator", "outside", *argv], clock=sim.clock.now)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_changes_a_served_simulator_by_cluster_name(
    sim: Simulator, api: OpsManagerClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """`retention simulator outside expires --cluster prod-small` (a name) against the served
    simulator's base URL exits 0, says before, after and the alert, and the API then
    answers the new expiry; --format json is the logged entry."""
    code, out, err = run(
        capsys, sim, "expires", "--url", sim.base_url, "--cluster", "prod-small",
        "--snapshot", "fresh", "--expires", "2026-11-22T02:00:00+02:00", "--user", "ana",
    )  # fmt: skip
    json_code, json_out, _ = run(
        capsys, sim, "do-not-delete", "--url", sim.base_url, "--cluster", "prod-small",
        "--snapshot", "noexpiry", "--do-not-delete", "--format", "json",
    )  # fmt: skip

    assert (code, err) == (0, "")
    assert api.get_snapshot(P, SMALL, "fresh").expires == NOW + timedelta(hours=12)
    assert "expires by ana on prod-small snapshot fresh" in out
    assert "after:  expires 2026-11-22T00:00:00Z" in out
    assert "SNAPSHOT_EXPIRY_UPDATED_AUDIT" in out
    document = json.loads(json_out)
    assert json_code == document["exitCode"] == 0
    assert document["command"] == "simulator outside"
    assert (document["action"], document["after"]) == (
        "doNotDelete",
        {"doNotDelete": True, "expires": None},
    )
    assert api.get_snapshot(P, SMALL, "noexpiry").do_not_delete is True
    assert [e["user"] for e in sim.admin("outside")["outside"]] == ["ana", "someone@example.com"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["terminate", "--cluster", "prod-nothing"], "--cluster prod-nothing: no cluster"),
        (["delete", "--cluster", "prod-small"], "delete needs --snapshot"),
        (["terminate", "--cluster", "prod-small", "--snapshot", "x"], "--snapshot is not an"),
        (["delete", "--cluster", "prod-small", "--snapshot", "gone"], "--snapshot: no snapshot"),
        (["expires", "--cluster", SMALL, "--snapshot", "fresh", "--expires", "soon"], "--expires"),
        (["remove", "--cluster", "cfg0.legacy.example.net"], "--cluster: " + CFG),
    ],
)
def test_the_command_says_what_is_wrong_with_exit_2_and_changes_nothing(
    sim: Simulator, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """An unknown cluster, a missing or extra option, or a change the simulator refuses is
    exit 2 with a message naming the option, and nothing is changed."""
    code, out, err = run(capsys, sim, *argv[:1], "--url", sim.base_url, *argv[1:])

    assert code == 2
    assert said in err
    assert "Traceback" not in err
    assert out == ""
    assert sim.admin("outside") == {"outside": []}


def test_the_command_is_exit_5_when_no_simulator_answers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A URL where nothing listens is exit 5, the exit code of an API that cannot be
    reached, with a message that says what to start."""
    code = cli.main(
        ["simulator", "outside", "terminate", "--url", "http://127.0.0.1:9", "--cluster", "x"]
    )
    err = capsys.readouterr().err

    assert code == 5
    assert "retention simulator serve" in err
