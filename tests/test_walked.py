"""The walk's msgspec decoding (retention.api.walked) keeps the rules of the full models:
UTC times, missing flags that never make a snapshot look safe, lax numbers and flags, and
malformed pages named by field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from retention.api.client import OpsManagerClient
from retention.errors import MalformedResponseError
from tests.support.client import make_client
from tests.support.fakeapi import FakeApi, json_answer, list_page, snapshot

LIST = "/groups/p1/clusters/c1/snapshots"


def walk(fake: FakeApi, client: OpsManagerClient, items: list[dict[str, Any]]) -> list[Any]:
    """The snapshots a walk of one page of ``items`` reads."""
    fake.script("GET", LIST, [json_answer(list_page(items, len(items)))])
    return client.list_snapshot_states("p1", "c1").collect()


def test_times_with_an_offset_or_without_a_zone_are_read_as_utc(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """+02:00 is converted to UTC and a time without a zone is taken as UTC, as the full
    model does."""
    (found,) = walk(
        fake, client,
        [snapshot("s1", "2026-11-01T02:00:00+02:00", expires="2026-12-01T00:00:00")],
    )  # fmt: skip

    assert found.created_at == datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
    assert found.created_at.utcoffset() is not None
    assert found.expires == datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
    assert found.expires.tzinfo is UTC


def test_missing_flags_never_make_a_snapshot_look_safe_to_expire(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Without complete it is incomplete, without doNotDelete unprotected, without parts its
    size unknown; flags and numbers sent as strings are read as pydantic's lax mode does."""
    bare = {"id": "s1", "created": {"date": "2026-11-01T00:00:00Z"}}
    lax = snapshot("s2", complete="true", parts=[{"storageSizeBytes": "1024"}])

    first, second = walk(fake, client, [bare, lax])

    assert (first.complete, first.do_not_delete, first.expires, first.storage_bytes) == (
        False, False, None, None,
    )  # fmt: skip
    assert first.is_consistent
    assert (second.complete, second.storage_bytes) == (True, 1024)


@pytest.mark.parametrize(
    ("broken", "where"),
    [
        ({"id": "s2"}, "results.1.created: Field required"),
        ({"id": "s2", "created": {"date": "yesterday"}}, "results.1.created.date: "),
        ({"id": "s2", "created": {}}, "results.1.created.date: Field required"),
    ],
)
def test_a_page_of_the_wrong_shape_names_the_field_as_pydantic_would(
    fake: FakeApi, client: OpsManagerClient, broken: dict[str, Any], where: str
) -> None:
    """A snapshot without its creation time, or with one that is no time, is a malformed
    answer naming results.N.created(.date) and the list endpoint."""
    with pytest.raises(MalformedResponseError) as info:
        walk(fake, client, [snapshot("s1"), broken])

    assert f"the answer does not have the documented shape: {where}" in str(info.value)
    assert info.value.endpoint == "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots"


def test_a_page_that_is_not_json_says_so(fake: FakeApi, client: OpsManagerClient) -> None:
    """A cut-off page is reported as JSON that is not valid, as for every other answer."""
    body = json_answer(list_page([snapshot("s1"), snapshot("s2")], 2))[2]
    assert isinstance(body, str)
    fake.script("GET", LIST, [(200, {"Content-Type": "application/json"}, body[:100])])

    with pytest.raises(MalformedResponseError, match=r"not valid JSON"):
        client.list_snapshot_states("p1", "c1").collect()


def test_an_envelope_page_is_read_the_same_way(fake: FakeApi) -> None:
    """With envelope=true the page's content (already parsed) goes through the same rules."""
    page = {**list_page([snapshot("s1", "2026-11-01T01:00:00+01:00")], 1), "status": 200}
    fake.script("GET", LIST, [json_answer(page)])
    with make_client(envelope=True) as client:
        (found,) = client.list_snapshot_states("p1", "c1").collect()

    assert found.created_at == datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
