"""The simulator behaves like the API contract, checked through our client and raw HTTP:
every endpoint, digest auth, paging, envelope, PATCH rules, the reaper and the admin surface."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone

import pytest
import requests
from pydantic import SecretStr
from requests.auth import HTTPDigestAuth

from retention.api.client import OpsManagerClient
from retention.api.models import Snapshot, SnapshotState
from retention.api.values import Credentials
from retention.api.walked import WalkedSnapshot
from retention.core.snapshot import SnapshotPatch
from retention.errors import AuthenticationError, InvalidFieldsError, NotFoundError
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY
from tests.support.simfleet import BIG, CFG, KEY, NOW, SHARDED, SMALL, P, client_for, running

SNAPSHOTS = f"/groups/{P}/clusters/{SMALL}/snapshots"


@pytest.fixture
def api(sim: Simulator) -> Iterator[OpsManagerClient]:
    """Our client for the simulator."""
    with client_for(sim) as client:
        yield client


def raw(sim: Simulator, method: str, path: str, **kwargs: object) -> requests.Response:
    """A raw digest-authenticated request (for what our client refuses to send)."""
    return requests.request(
        method,
        sim.base_url + path,
        auth=HTTPDigestAuth(PUBLIC_KEY, KEY),
        timeout=10,
        **kwargs,  # type: ignore[arg-type]
    )


def test_walk_of_1234_snapshots_matches_the_fleet(sim: Simulator, api: OpsManagerClient) -> None:
    """A full walk returns all 1,234 snapshots newest first, in three pages of 500."""
    walk = api.list_snapshots(P, BIG)

    ids = [s.id for s in walk]

    assert ids == [f"big{i:04d}" for i in range(1234)]
    assert (walk.pages, walk.total_count) == (3, 1234)
    counters = sim.admin("counters")
    assert counters["maxItemsPerPage"] == 500
    assert counters["byEndpoint"] == {"GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots": 3}


@pytest.mark.parametrize(
    ("completed", "expected"),
    [
        ("all", ["running", "fresh", "held", "doomed", "noexpiry"]),
        ("true", ["fresh", "held", "doomed", "noexpiry"]),
        ("false", ["running"]),
    ],
)
def test_completed_filter(api: OpsManagerClient, completed: str, expected: list[str]) -> None:
    """completed=true|false|all selects finished, running or all snapshots."""
    got = [s.id for s in api.list_snapshots(P, SMALL, completed=completed)]  # type: ignore[arg-type]

    assert got == expected


def test_snapshot_states_are_rendered_as_the_spec_says(api: OpsManagerClient) -> None:
    """Protected snapshots carry no expires; running ones are incomplete; shapes parse."""
    by_id = {s.id: s for s in api.list_snapshots(P, SMALL)}

    assert by_id["held"].do_not_delete is True
    assert by_id["held"].expires is None
    assert by_id["running"].complete is False
    assert by_id["doomed"].expires == NOW - timedelta(hours=1)
    assert by_id["fresh"].is_possibly_inconsistent is None
    assert by_id["fresh"].parts[0].replica_set_name == "rs-small"


def test_sharded_snapshots_carry_shard_fields(api: OpsManagerClient) -> None:
    """Sharded snapshots have isPossiblyInconsistent and missingShards, and one part per shard."""
    by_id = {s.id: s for s in api.list_snapshots(P, SHARDED)}

    assert by_id["shard-ok"].is_consistent is True
    assert by_id["shard-bad"].is_possibly_inconsistent is True
    assert by_id["shard-bad"].missing_shards is not None
    assert by_id["shard-bad"].missing_shards[0].shard_name == "sh0"
    assert [p.replica_set_name for p in by_id["shard-ok"].parts] == ["sh0", "sh1"]


@pytest.mark.parametrize("cluster", [BIG, SMALL, SHARDED])
def test_lean_walk_reads_the_same_states_as_the_full_one(
    api: OpsManagerClient, cluster: str
) -> None:
    """The lean walk a plan uses sees each snapshot's state exactly as the full model does,
    with the same requests."""
    fields: tuple[str, ...] = (
        "id", "cluster_name", "complete", "created_at", "do_not_delete", "expires", "storage_bytes",
    )  # fmt: skip

    def states(walk: Iterable[SnapshotState | WalkedSnapshot]) -> list[tuple[object, ...]]:
        return [(*(getattr(s, f) for f in fields), s.is_consistent) for s in walk]

    full_walk, lean_walk = (
        api.list_snapshots(P, cluster, "all"),
        api.list_snapshot_states(P, cluster),
    )
    full = states(full_walk)
    lean = states(lean_walk)

    assert lean == full
    assert lean_walk.pages == full_walk.pages == (3 if cluster == BIG else 1)
    assert len({s[-1] for s in lean}) == (2 if cluster == SHARDED else 1)


def test_lean_config_server_walk_reads_the_same_states(api: OpsManagerClient) -> None:
    """Config-server snapshots read lean keep their ids, times and states."""
    full = api.list_config_server_snapshots(P, CFG).collect()
    lean = api.list_config_server_snapshot_states(P, CFG).collect()

    assert [(s.id, s.created_at, s.expires, s.complete) for s in lean] == [
        (s.id, s.created_at, s.expires, s.complete) for s in full
    ]


def test_discovery_lists_clusters_shards_and_hosts(api: OpsManagerClient) -> None:
    """Clusters list includes the shard as its own entry; hosts mark the legacy config server."""
    clusters = api.list_clusters(P).collect()
    hosts = api.list_hosts(P).collect()

    assert [(c.cluster_name, c.shard_name) for c in clusters] == [
        ("prod-big", None),
        ("prod-small", None),
        ("prod-sharded", None),
        ("prod-sharded", "sh0"),
    ]
    assert (hosts[0].id, hosts[0].is_legacy_config_server) == (CFG, True)
    assert sum(h.is_legacy_config_server for h in hosts) == 1


def test_config_server_snapshots_list_get_and_refuse_patch(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """Config-server snapshots list and get with their differences; PATCH answers 405."""
    listed = api.list_config_server_snapshots(P, CFG).collect()
    single = api.get_config_server_snapshot(P, CFG, "cfg0")
    refused = raw(
        sim, "PATCH", f"/groups/{P}/hosts/{CFG}/snapshots/cfg0", json={"doNotDelete": True}
    )

    assert [s.id for s in listed] == ["cfg0", "cfg1", "cfg2"]
    assert single.parts[0].type_name == "CONFIG_SERVER"
    assert single.parts[0].host_id == CFG
    assert single.host_id_upper == CFG
    assert isinstance(single.namespace_filter_list, list)
    assert refused.status_code == 405
    assert refused.headers["Allow"] == "GET"


def test_patch_protect_removes_expires(api: OpsManagerClient) -> None:
    """doNotDelete true protects the snapshot and removes its expiry."""
    result = api.patch_snapshot(P, SMALL, "fresh", SnapshotPatch.protect())

    assert (result.do_not_delete, result.expires) == (True, None)
    assert api.get_snapshot(P, SMALL, "fresh").do_not_delete is True


def test_patch_release_and_future_expiry(api: OpsManagerClient) -> None:
    """doNotDelete false with expires lifts a hold; a future expires is stored as sent."""
    later = NOW + timedelta(days=30)

    released = api.patch_snapshot(P, SMALL, "held", SnapshotPatch.release(later))
    extended = api.patch_snapshot(P, SMALL, "noexpiry", SnapshotPatch.expire_at(later))

    assert (released.do_not_delete, released.expires) == (False, later)
    assert extended.expires == later


def test_patch_protect_with_expires_is_refused_with_the_spec_message(sim: Simulator) -> None:
    """doNotDelete true with a timestamp expires: 400 and the spec's exact message."""
    answer = raw(
        sim,
        "PATCH",
        f"{SNAPSHOTS}/fresh",
        json={"doNotDelete": True, "expires": "2027-01-01T00:00:00Z"},
    )

    assert answer.status_code == 400
    assert answer.json()["detail"] == "Cannot modify snapshot because of invalid fields"
    log = sim.admin("patches")["patches"]
    assert [(e["snapshotId"], e["status"], e["after"] == e["before"]) for e in log] == [
        ("fresh", 400, True)
    ]


def test_past_expiry_cannot_be_edited(api: OpsManagerClient) -> None:
    """A snapshot whose expiry has passed refuses any change (SNAPSHOT_EXPIRED)."""
    with pytest.raises(InvalidFieldsError, match="already passed"):
        api.patch_snapshot(P, SMALL, "doomed", SnapshotPatch.protect())

    assert api.get_snapshot(P, SMALL, "doomed").do_not_delete is False


def test_expiry_at_now_schedules_deletion_by_the_reaper(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """expires <= now is accepted; the snapshot is deleted once the reaper delay has passed."""
    api.patch_snapshot(P, SMALL, "noexpiry", SnapshotPatch.expire_at(NOW))
    still_there = api.get_snapshot(P, SMALL, "noexpiry")

    sim.admin("clock", {"now": "2026-11-21T18:00:01Z", "frozen": True})

    assert still_there.expires == NOW
    with pytest.raises(NotFoundError):
        api.get_snapshot(P, SMALL, "noexpiry")
    ids = [s.id for s in api.list_snapshots(P, SMALL)]
    assert ids == ["running", "fresh", "held"]  # doomed was reaped too; held is protected


def test_patch_body_errors_are_400(sim: Simulator) -> None:
    """Unknown fields, wrong types and non-JSON bodies are refused with 400 and a reason."""
    unknown = raw(sim, "PATCH", f"{SNAPSHOTS}/fresh", json={"expires": None, "color": "red"})
    wrong = raw(sim, "PATCH", f"{SNAPSHOTS}/fresh", json={"doNotDelete": "yes"})
    garbage = raw(
        sim,
        "PATCH",
        f"{SNAPSHOTS}/fresh",
        data=b"{not json",
        headers={"Content-Type": "application/json"},
    )

    assert (unknown.status_code, unknown.json()["errorCode"]) == (400, "INVALID_ATTRIBUTE")
    assert "color" in unknown.json()["detail"]
    assert (wrong.status_code, wrong.json()["errorCode"]) == (400, "INVALID_ATTRIBUTE")
    assert (garbage.status_code, garbage.json()["errorCode"]) == (400, "INVALID_JSON")


def test_alerts_list_filter_get_acknowledge_unacknowledge(api: OpsManagerClient) -> None:
    """Alerts filter by status; acknowledging normalises the time to UTC; omitting it unacks."""
    every = [a.id for a in api.list_alerts(P)]
    open_only = [a.id for a in api.list_alerts(P, status="OPEN")]
    until = datetime(2026, 11, 22, 14, 0, tzinfo=timezone(timedelta(hours=2)))

    acked = api.acknowledge_alert(P, "a-open", until, comment="planned maintenance")
    fetched = api.get_alert(P, "a-open")
    unacked = api.unacknowledge_alert(P, "a-open")

    assert every == ["a-tracking", "a-open", "a-closed"]
    assert open_only == ["a-open"]
    assert acked.acknowledged_until == datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert (acked.acknowledgement_comment, acked.acknowledging_username) == (
        "planned maintenance",
        PUBLIC_KEY,
    )
    assert fetched.acknowledged_until == acked.acknowledged_until
    assert (unacked.acknowledged_until, unacked.acknowledging_username) == (None, None)


def test_acknowledged_until_is_written_in_utc_on_the_wire(sim: Simulator) -> None:
    """A numeric-offset acknowledgedUntil comes back normalised to UTC with Z."""
    answer = raw(
        sim,
        "PATCH",
        f"/groups/{P}/alerts/a-open",
        json={"acknowledgedUntil": "2026-11-22T09:30:00-05:00"},
    )

    assert answer.json()["acknowledgedUntil"] == "2026-11-22T14:30:00Z"


def test_agent_links_have_the_five_relations(api: OpsManagerClient) -> None:
    """The agents endpoint answers self, group and the three agent relations."""
    links = api.get_agent_links(P)

    rels = sorted(link.rel.rsplit("/", 1)[-1] for link in links.links)
    assert rels == ["automationAgents", "backupAgents", "group", "monitoringAgents", "self"]
    backup = links.relation("backupAgents")
    assert backup is not None
    assert backup.href.endswith(f"/groups/{P}/agents/BACKUP")


def test_paging_defaults_limits_and_self_links(sim: Simulator) -> None:
    """Default page is 100; itemsPerPage above 500 is 400; links carry the paging query."""
    first = raw(sim, "GET", f"/groups/{P}/clusters/{BIG}/snapshots", params={"completed": "all"})
    second = raw(
        sim,
        "GET",
        f"/groups/{P}/clusters/{BIG}/snapshots",
        params={"pageNum": 2, "itemsPerPage": 7},
    )
    too_big = raw(sim, "GET", f"/groups/{P}/clusters/{BIG}/snapshots", params={"itemsPerPage": 501})
    zero = raw(sim, "GET", f"/groups/{P}/clusters/{BIG}/snapshots", params={"pageNum": 0})

    body = first.json()
    assert (len(body["results"]), body["totalCount"]) == (100, 1234)
    links = {link["rel"]: link["href"] for link in second.json()["links"]}
    assert links["self"].endswith("?pageNum=2&itemsPerPage=7")
    assert links["previous"].endswith("pageNum=1&itemsPerPage=7")
    assert links["next"].endswith("pageNum=3&itemsPerPage=7")
    assert second.json()["results"][0]["id"] == "big0007"
    assert (too_big.status_code, too_big.json()["errorCode"]) == (400, "INVALID_QUERY_PARAMETER")
    assert zero.status_code == 400


def test_success_headers_follow_the_spec(sim: Simulator) -> None:
    """Successful answers carry the spec's headers, the service version and a Date."""
    answer = raw(sim, "GET", f"/groups/{P}/agents")

    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Strict-Transport-Security"] == "max-age=300"
    assert answer.headers["Vary"] == "Accept-Encoding"
    assert answer.headers["X-MongoDB-Service-Version"].startswith("gitHash=")
    assert "; versionString=" in answer.headers["X-MongoDB-Service-Version"]
    assert "X-Server-Service-Version" not in answer.headers  # the real name by default
    assert answer.headers["Date"] == "Sat, 21 Nov 2026 12:00:00 GMT"
    assert int(answer.headers["Content-Length"]) == len(answer.content)


def test_unauthenticated_request_gets_the_spec_challenge(sim: Simulator) -> None:
    """No credentials: 401, ISO-8859-1 JSON, a Digest MD5 challenge with qop="auth"."""
    answer = requests.get(sim.base_url + f"/groups/{P}/agents", timeout=10)

    assert answer.status_code == 401
    assert answer.headers["Content-Type"] == "application/json;charset=ISO-8859-1"
    challenge = answer.headers["WWW-Authenticate"]
    assert challenge.startswith('Digest realm="MMS Public API", domain="", nonce="')
    assert 'algorithm=MD5, qop="auth", stale=false' in challenge


def test_literal_op_mode_sends_the_spec_form_and_our_client_answers_it() -> None:
    """In literal-op mode the challenge says op="auth" and our client still authenticates."""
    with running(literal_op=True) as sim, client_for(sim) as api:
        challenge = requests.get(sim.base_url + f"/groups/{P}/agents", timeout=10)
        links = api.get_agent_links(P)

    assert 'op="auth", stale=false' in challenge.headers["WWW-Authenticate"]
    assert "qop" not in challenge.headers["WWW-Authenticate"]
    assert links.relation("self") is not None


def test_wrong_credentials_always_401(sim: Simulator) -> None:
    """A wrong private key never gets in, through our client or raw digest."""
    wrong = Credentials(PUBLIC_KEY, SecretStr("nope"))
    with (
        OpsManagerClient(sim.base_url, wrong, clock=sim.clock.now) as bad,
        pytest.raises(AuthenticationError),
    ):
        bad.get_agent_links(P)
    answer = requests.get(
        sim.base_url + f"/groups/{P}/agents", auth=HTTPDigestAuth(PUBLIC_KEY, "nope"), timeout=10
    )
    assert answer.status_code == 401


def test_expired_nonce_is_answered_stale_and_the_client_recovers(
    sim: Simulator, api: OpsManagerClient
) -> None:
    """After nonces expire, the next call gets stale=true and re-authenticates by itself."""
    api.get_agent_links(P)
    sim.admin("nonces/expire", {})

    api.get_agent_links(P)

    counters = sim.admin("counters")
    assert counters["challenges"] == 2
    assert counters["byStatus"] == {"401": 2, "200": 2}


def test_one_challenge_for_many_calls_on_one_thread(sim: Simulator, api: OpsManagerClient) -> None:
    """Keep-alive plus digest reuse: 20 calls cost one 401 challenge."""
    for _ in range(20):
        api.get_snapshot(P, SMALL, "fresh")

    assert sim.admin("counters")["challenges"] == 1


def test_envelope_and_pretty(sim: Simulator) -> None:
    """envelope=true wraps single results and adds status to lists; pretty indents."""
    single = raw(sim, "GET", f"{SNAPSHOTS}/fresh", params={"envelope": "true", "pretty": "true"})
    listed = raw(sim, "GET", SNAPSHOTS, params={"envelope": "true"})
    missing = raw(sim, "GET", f"{SNAPSHOTS}/nope", params={"envelope": "true"})

    assert single.status_code == 200
    assert single.json()["status"] == 200
    assert Snapshot.model_validate(single.json()["content"]).id == "fresh"
    assert "\n  " in single.text
    assert (listed.json()["status"], listed.json()["totalCount"]) == (200, 4)
    assert missing.status_code == 200
    assert (missing.json()["status"], missing.json()["content"]["errorCode"]) == (404, "NOT_FOUND")


def test_client_in_envelope_mode_reads_the_simulator(sim: Simulator) -> None:
    """Our client's envelope mode works end to end, errors included."""
    with client_for(sim, envelope=True) as api:
        ids = [s.id for s in api.list_snapshots(P, SMALL)]
        with pytest.raises(NotFoundError):
            api.get_snapshot(P, SMALL, "nope")

    assert ids == ["running", "fresh", "held", "doomed", "noexpiry"]


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("/groups/nope/clusters", "No project with ID nope."),
        (f"/groups/{P}/clusters/nope/snapshots", "No cluster with ID nope."),
        (
            f"/groups/{P}/clusters/{SMALL}/snapshots/..%2F..%2Fadmin",
            "No snapshot with ID ../../admin.",
        ),
        (f"/groups/{P}/alerts/a%3Fb%23c", "No alert with ID a?b#c."),
        (f"/groups/{P}/unknown", f"no resource at /groups/{P}/unknown"),
    ],
)
def test_unknown_ids_and_paths_are_404(sim: Simulator, path: str, detail: str) -> None:
    """Unknown ids (hostile ones decoded as one segment) and paths get 404 NOT_FOUND."""
    answer = raw(sim, "GET", path)

    assert answer.status_code == 404
    assert answer.json()["detail"] == detail


def test_admin_reset_restores_the_fleet(sim: Simulator, api: OpsManagerClient) -> None:
    """Reset rebuilds the fleet and clears counters and the PATCH log."""
    api.patch_snapshot(P, SMALL, "fresh", SnapshotPatch.protect())

    sim.admin("reset", {})

    assert sim.admin("patches") == {"patches": []}
    assert api.get_snapshot(P, SMALL, "fresh").do_not_delete is False
    assert sim.admin("counters")["byEndpoint"] == {
        "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}": 1
    }


def test_admin_reset_rebuilds_the_same_generated_fleet_after_the_clock_moved() -> None:
    """A generated fleet (snapshot times and ids follow the clock) comes back exactly after a
    reset, however far the clock has moved, so a benchmark can reset between measurements."""
    config = SimulatorConfig(fleet="bench:3", seed=5, now=datetime(2026, 11, 21, tzinfo=UTC))
    with Simulator(config) as bench:
        before = bench.admin("fleet")
        bench.admin("clock", {"advance": 7 * 86400})

        bench.admin("reset", {})

        assert bench.admin("fleet") == before
        assert len(before["projects"][0]["clusters"]) == 3


Served = list[tuple[str, str | None, list[str], list[str], list[str]]]


def served_ids(sim: Simulator) -> Served:
    """Per project, as the API serves them: its id, name, cluster, host and alert ids."""
    with client_for(sim) as client:
        return [
            (project.id, project.name, [c.id for c in client.list_clusters(pid).collect()],
             [h.id for h in client.list_hosts(pid).collect()],
             sorted(a.id for a in client.list_alerts(pid).collect()))
            for pid in (p["id"] for p in sim.admin("fleet")["projects"])
            for project in [client.get_project(pid)]
        ]  # fmt: skip


def test_the_same_seed_serves_the_same_ids_a_year_later() -> None:
    """Two simulators of one seed, their clocks a year apart, serve the same project, cluster,
    host and alert ids through the API; another seed serves other project ids."""

    def serve(seed: int, now: datetime) -> Served:
        config = SimulatorConfig(
            fleet="demo", seed=seed, now=now, frozen=True, public_key=PUBLIC_KEY, private_key=KEY
        )
        with Simulator(config) as demo:
            return served_ids(demo)

    first = serve(3, NOW)
    assert serve(3, NOW + timedelta(days=365, hours=7)) == first
    assert [name for _, name, *_ in first] == ["production", "analytics", "development"]
    assert all(clusters and hosts and alerts for _, _, clusters, hosts, alerts in first)
    assert {p[0] for p in serve(4, NOW)}.isdisjoint(p[0] for p in first)


def test_admin_clock_set_and_advance(sim: Simulator) -> None:
    """The admin clock can be set, frozen and advanced; the Date header follows it."""
    assert sim.admin("clock") == {"now": "2026-11-21T12:00:00Z", "frozen": True}
    sim.admin("clock", {"advance": 90})

    answer = raw(sim, "GET", f"/groups/{P}/agents")

    assert answer.headers["Date"] == "Sat, 21 Nov 2026 12:01:30 GMT"


def test_patch_log_records_bodies_and_states(sim: Simulator, api: OpsManagerClient) -> None:
    """Each PATCH is logged with its body, status and the snapshot state before and after."""
    api.patch_snapshot(P, SMALL, "noexpiry", SnapshotPatch.expire_at(NOW + timedelta(days=1)))

    [entry] = sim.admin("patches")["patches"]

    assert entry["body"] == {"expires": "2026-11-22T12:00:00Z"}
    assert entry["before"] == {"doNotDelete": False, "expires": None}
    assert entry["after"] == {"doNotDelete": False, "expires": "2026-11-22T12:00:00Z"}
    assert (entry["status"], entry["clusterId"], entry["complete"]) == (200, SMALL, True)
    assert json.dumps(entry)  # JSON-ready


def test_nonce_goes_stale_after_its_ttl() -> None:
    """With nonce_ttl 0.2 s, a call after 0.4 s is told stale=true and re-authenticates."""
    with running(nonce_ttl=0.2) as sim, client_for(sim) as api:
        api.get_agent_links(P)
        time.sleep(0.4)
        stale = requests.get(
            sim.base_url + f"/groups/{P}/agents",
            auth=HTTPDigestAuth(PUBLIC_KEY, KEY),
            timeout=10,
        )
        api.get_agent_links(P)
        counters = sim.admin("counters")

    assert stale.status_code == 200
    assert counters["challenges"] == 3  # first use, the raw session, the stale nonce


def test_concurrent_walks_on_eight_threads(sim: Simulator, api: OpsManagerClient) -> None:
    """Eight threads walking at once each see the whole list; one challenge per thread."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        walks = list(pool.map(lambda _i: [s.id for s in api.list_snapshots(P, BIG)], range(8)))

    assert all(walk == walks[0] for walk in walks)
    assert len(walks[0]) == 1234
    counters = sim.admin("counters")
    assert counters["challenges"] <= 8
    assert counters["byStatus"]["200"] == 8 * 3
