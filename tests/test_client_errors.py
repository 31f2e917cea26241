"""Failures become clear errors that name the endpoint and status: bad bodies, error
statuses, exhausted retries, and hostile ids that must not change the path."""

from __future__ import annotations

import pytest

from retention.api.client import OpsManagerClient
from retention.core.snapshot import SnapshotPatch
from retention.errors import (
    EXIT_FAILURES,
    EXIT_UNREACHABLE,
    HTTPStatusError,
    InvalidFieldsError,
    MalformedResponseError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RefusedRequestError,
    ServerError,
)
from tests.support.client import FAST_RETRY
from tests.support.fakeapi import FakeApi, json_answer, list_page, snapshot

SNAP = "/groups/p1/clusters/c1/snapshots/s1"
SNAP_ENDPOINT = "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}"
PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def test_html_from_a_proxy_is_a_clear_malformed_response(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """A 200 HTML page (a login or proxy page) is reported as HTML, not as a JSON stack trace."""
    fake.script("GET", SNAP, [(200, {"Content-Type": "text/html"}, "<html><body>Sign in")])

    with pytest.raises(MalformedResponseError) as info:
        client.get_snapshot("p1", "c1", "s1")

    message = str(info.value)
    assert message.startswith(SNAP_ENDPOINT + ": expected JSON but got text/html")
    assert "proxy" in message
    assert info.value.exit_code == EXIT_FAILURES


def test_truncated_json_is_reported_as_cut_off(fake: FakeApi, client: OpsManagerClient) -> None:
    """A body cut off mid-JSON says it is not valid JSON and may have been cut off."""
    fake.script("GET", SNAP, [(200, {"Content-Type": "application/json"}, '{"id": "s1", "crea')])

    with pytest.raises(MalformedResponseError, match=r"not valid JSON .*cut off"):
        client.get_snapshot("p1", "c1", "s1")


def test_truncated_list_page_is_malformed(fake: FakeApi, client: OpsManagerClient) -> None:
    """A list page cut off mid-body is refused, naming the list endpoint."""
    body = json_answer(list_page([snapshot("s1"), snapshot("s2")], 2))[2]
    assert isinstance(body, str)
    fake.script(
        "GET",
        "/groups/p1/clusters/c1/snapshots",
        [(200, {"Content-Type": "application/json"}, body[: len(body) // 2])],
    )

    with pytest.raises(MalformedResponseError) as info:
        client.list_snapshots("p1", "c1").collect()

    assert info.value.endpoint == "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots"


def test_wrong_shape_names_the_field(fake: FakeApi, client: OpsManagerClient) -> None:
    """Valid JSON of the wrong shape names the offending field."""
    fake.answer("GET", SNAP, {"id": "s1", "created": {"date": "yesterday"}})

    with pytest.raises(MalformedResponseError, match=r"created\.date"):
        client.get_snapshot("p1", "c1", "s1")


@pytest.mark.parametrize(
    ("status", "error_class", "exit_code"),
    [
        (400, InvalidFieldsError, EXIT_FAILURES),
        (403, PermissionDeniedError, EXIT_UNREACHABLE),
        (404, NotFoundError, EXIT_FAILURES),
        (409, HTTPStatusError, EXIT_FAILURES),
    ],
)
def test_error_status_maps_to_its_error_class(
    fake: FakeApi,
    client: OpsManagerClient,
    status: int,
    error_class: type[HTTPStatusError],
    exit_code: int,
) -> None:
    """Each non-retried error status raises its class, quoting the body's detail, not retried."""
    fake.answer("GET", SNAP, {"detail": f"detail for {status}", "error": status}, status)

    with pytest.raises(error_class) as info:
        client.get_snapshot("p1", "c1", "s1")

    assert type(info.value) is error_class
    assert info.value.status == status
    assert info.value.exit_code == exit_code
    assert str(info.value) == (
        f"{SNAP_ENDPOINT}: the API answered {status}: detail for {status} (HTTP {status})"
    )
    assert len(fake.calls(status)) == 1


def test_invalid_fields_message_from_the_api_is_quoted(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """The spec's invalid-fields refusal surfaces with its exact message."""
    fake.answer(
        "PATCH",
        SNAP,
        {"detail": "Cannot modify snapshot because of invalid fields", "error": 400},
        400,
    )
    with pytest.raises(InvalidFieldsError, match="Cannot modify snapshot because of invalid"):
        client.patch_snapshot("p1", "c1", "s1", SnapshotPatch.protect())


def test_503_is_retried_until_an_answer_comes(fake: FakeApi, client: OpsManagerClient) -> None:
    """Two 503s then a 200: the call succeeds after three tries."""
    busy = json_answer({"detail": "busy"}, 503)
    fake.script("GET", SNAP, [busy, busy, json_answer(snapshot("s1"))])

    assert client.get_snapshot("p1", "c1", "s1").id == "s1"
    assert [c.status for c in fake.seen if c.status != 401] == [503, 503, 200]


def test_503_forever_gives_up_with_a_server_error(fake: FakeApi, client: OpsManagerClient) -> None:
    """A 503 that never ends raises ServerError after the configured tries, quoting the body."""
    fake.script("GET", SNAP, [json_answer({"detail": "maintenance window"}, 503)])

    with pytest.raises(ServerError) as info:
        client.get_snapshot("p1", "c1", "s1")

    assert info.value.status == 503
    assert "maintenance window" in str(info.value)
    assert len(fake.calls(503)) == FAST_RETRY.retries + 1


def test_429_forever_gives_up_with_rate_limited(fake: FakeApi, client: OpsManagerClient) -> None:
    """A 429 that never ends raises RateLimitedError after the configured tries."""
    fake.script("GET", SNAP, [json_answer({"detail": "slow down"}, 429, {"Retry-After": "0"})])

    with pytest.raises(RateLimitedError) as info:
        client.get_snapshot("p1", "c1", "s1")

    assert info.value.status == 429
    assert len(fake.calls(429)) == FAST_RETRY.retries + 1


def test_502_html_from_a_proxy_quotes_the_page(fake: FakeApi, client: OpsManagerClient) -> None:
    """A proxy's HTML error page is quoted (shortened) in the ServerError message."""
    fake.script("GET", SNAP, [(502, {"Content-Type": "text/html"}, PROXY_PAGE)])

    with pytest.raises(ServerError, match="502 Bad Gateway"):
        client.get_snapshot("p1", "c1", "s1")


@pytest.mark.parametrize(
    ("project", "cluster", "snap", "expected_path"),
    [
        ("..admin", "c1", "s1", "/groups/..admin/clusters/c1/snapshots/s1"),
        ("p1", "a?b=c", "s1", "/groups/p1/clusters/a%3Fb%3Dc/snapshots/s1"),
        ("p1", "c1", "x#frag", "/groups/p1/clusters/c1/snapshots/x%23frag"),
        ("p 1", "c;1", "s 1", "/groups/p%201/clusters/c%3B1/snapshots/s%201"),
        ("p1", "c1", "%2e%2e", "/groups/p1/clusters/c1/snapshots/%252e%252e"),
        ("p1", "c1", "%2F", "/groups/p1/clusters/c1/snapshots/%252F"),
        ("p1", "...", "s1", "/groups/p1/clusters/.../snapshots/s1"),
    ],
)
def test_hostile_ids_are_percent_encoded(
    fake: FakeApi,
    client: OpsManagerClient,
    project: str,
    cluster: str,
    snap: str,
    expected_path: str,
) -> None:
    """Ids with path syntax stay inside their own segment of the path."""
    fake.route("GET", ".*", lambda _r: json_answer(snapshot("s1")))

    client.get_snapshot(project, cluster, snap)

    assert {c.path for c in fake.seen} == {"/api/public/v1.0" + expected_path}
    assert fake.calls(200)[0].query == {}


@pytest.mark.parametrize("bad_id", ["..", ".", "", "../admin", "c/1", "a\\b", "x\x00", "y\x85"])
def test_ids_that_cannot_be_a_segment_are_refused_before_sending(
    fake: FakeApi, client: OpsManagerClient, bad_id: str
) -> None:
    """Dot segments, empty ids, separators and control characters raise RefusedRequestError,
    with no status, and send nothing."""
    with pytest.raises(RefusedRequestError, match="id") as raised:
        client.get_snapshot("p1", bad_id, "s1")

    assert raised.value.status is None
    assert fake.seen == []
