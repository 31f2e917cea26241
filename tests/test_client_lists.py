"""List walks: paging at 500, de-duplication, the totalCount cross-check, envelope mode."""

from __future__ import annotations

import pytest

from retention.api.client import OpsManagerClient
from retention.errors import InconsistentListError, MalformedResponseError, NotFoundError
from tests.support.client import make_client
from tests.support.fakeapi import (
    Answer,
    FakeApi,
    Request,
    json_answer,
    list_page,
    paged,
    shifted,
    snapshot,
)

LIST_PATH = "/groups/p1/clusters/c1/snapshots"


def snapshots(count: int) -> list[dict[str, object]]:
    """``count`` distinct snapshot resources, s0000 first."""
    return [snapshot(f"s{i:04d}") for i in range(count)]


def test_walk_pages_1234_items_at_500_per_page(fake: FakeApi, client: OpsManagerClient) -> None:
    """1,234 items come in pages of 500, 500 and 234, in order, each exactly once."""
    fake.route("GET", LIST_PATH, paged(snapshots(1234)))

    walk = client.list_snapshots("p1", "c1")
    ids = [s.id for s in walk]

    assert ids == [f"s{i:04d}" for i in range(1234)]
    pages = fake.calls(200)
    assert [(c.query["pageNum"], c.query["itemsPerPage"]) for c in pages] == [
        ("1", "500"),
        ("2", "500"),
        ("3", "500"),
    ]
    assert all(c.query["completed"] == "all" for c in pages)
    assert (walk.pages, walk.total_count, walk.duplicates, walk.seen) == (3, 1234, 0, 1234)


def test_walk_of_exact_multiple_asks_no_empty_page(fake: FakeApi, client: OpsManagerClient) -> None:
    """1,000 items take exactly two requests: the walk stops when totalCount is reached."""
    fake.route("GET", LIST_PATH, paged(snapshots(1000)))

    assert len(client.list_snapshots("p1", "c1").collect()) == 1000
    assert len(fake.calls(200)) == 2


def test_empty_list_is_one_request(fake: FakeApi, client: OpsManagerClient) -> None:
    """A cluster with no snapshots is one page with totalCount 0 and no error."""
    fake.answer("GET", LIST_PATH, list_page([], 0))

    assert client.list_snapshots("p1", "c1").collect() == []
    assert len(fake.calls(200)) == 1


def test_repeated_ids_across_pages_are_dropped(fake: FakeApi, client: OpsManagerClient) -> None:
    """An item repeated on the next page (a shifted page boundary) is yielded once."""
    items = snapshots(600)
    pages = {1: items[0:500], 2: items[495:600]}

    def handler(request: Request) -> Answer:
        return json_answer(list_page(pages[int(request.query["pageNum"])], 600))

    fake.route("GET", LIST_PATH, handler)
    walk = client.list_snapshots("p1", "c1")

    ids = [s.id for s in walk]

    assert ids == [f"s{i:04d}" for i in range(600)]
    assert walk.duplicates == 5


def test_total_count_mismatch_raises_at_the_end_of_the_walk(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """Fewer unique items than totalCount raises InconsistentListError naming both numbers."""
    fake.answer("GET", LIST_PATH, list_page(snapshots(8), 10))
    walk = client.list_snapshots("p1", "c1")
    yielded: list[str] = []

    with pytest.raises(InconsistentListError) as info:
        yielded.extend(s.id for s in walk)

    assert len(yielded) == 8
    assert (info.value.expected, info.value.seen) == (10, 8)
    assert "saw 8 unique items but totalCount is 10" in str(info.value)
    assert info.value.endpoint == "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots"
    assert info.value.request is not None
    assert info.value.request.url.endswith("/groups/p1/clusters/c1/snapshots")


def test_snapshot_created_between_pages_is_reported_inconsistent(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """A snapshot created mid-walk shifts pages; the walk notices it missed one."""
    before = snapshots(1000)
    fake.route("GET", LIST_PATH, shifted(before, [snapshot("s-new"), *before]))
    walk = client.list_snapshots("p1", "c1")

    with pytest.raises(InconsistentListError) as info:
        walk.collect()

    assert (info.value.expected, info.value.seen) == (1001, 1000)
    assert walk.duplicates == 1


def test_server_that_never_ends_is_stopped(fake: FakeApi, client: OpsManagerClient) -> None:
    """A server whose totalCount always promises one more page is stopped with an error."""

    def handler(request: Request) -> Answer:
        page_num = int(request.query["pageNum"])
        page = [snapshot(f"p{page_num}-{i}") for i in range(500)]
        return json_answer(list_page(page, page_num * 500 + 1))

    fake.route("GET", LIST_PATH, handler)

    with pytest.raises(InconsistentListError, match="still full pages"):
        client.list_snapshots("p1", "c1").collect()
    # The first page said 501 items: one more page is expected, 100 more are tolerated.
    assert len(fake.calls(200)) == 101


def test_list_without_total_count_is_malformed(fake: FakeApi, client: OpsManagerClient) -> None:
    """A list answer without totalCount cannot be checked, so it is refused."""
    fake.answer("GET", LIST_PATH, {"results": [snapshot("s1")], "links": []})

    with pytest.raises(MalformedResponseError, match="no totalCount"):
        client.list_snapshots("p1", "c1").collect()


def test_envelope_mode_unwraps_lists_and_single_results(fake: FakeApi) -> None:
    """With envelope=true the client asks for it and reads status and content from the body."""
    fake.route(
        "GET",
        LIST_PATH,
        lambda _r: json_answer({**list_page(snapshots(3), 3), "status": 200}),
    )
    fake.answer("GET", LIST_PATH + "/s0001", {"status": 200, "content": snapshot("s0001")})

    with make_client(envelope=True) as api:
        listed = [s.id for s in api.list_snapshots("p1", "c1")]
        single = api.get_snapshot("p1", "c1", "s0001")

    assert listed == ["s0000", "s0001", "s0002"]
    assert single.id == "s0001"
    assert {c.query.get("envelope") for c in fake.calls(200)} == {"true"}


def test_envelope_error_status_in_a_200_answer_is_an_error(fake: FakeApi) -> None:
    """An enveloped 404 (HTTP 200, status 404 in the body) raises NotFoundError with status 404."""
    fake.answer(
        "GET",
        LIST_PATH + "/gone",
        {"status": 404, "content": {"detail": "No snapshot with ID gone.", "error": 404}},
    )

    with make_client(envelope=True) as api, pytest.raises(NotFoundError) as info:
        api.get_snapshot("p1", "c1", "gone")

    assert info.value.status == 404
    assert "No snapshot with ID gone." in str(info.value)


def test_envelope_answer_without_status_is_malformed(fake: FakeApi) -> None:
    """An envelope=true answer without an integer status is refused as malformed."""
    fake.answer("GET", LIST_PATH + "/s1", snapshot("s1"))

    with make_client(envelope=True) as api, pytest.raises(MalformedResponseError, match="status"):
        api.get_snapshot("p1", "c1", "s1")


def test_snapshot_reaped_behind_the_walker_is_reported_inconsistent(
    fake: FakeApi, client: OpsManagerClient
) -> None:
    """A reap on an already-read page shifts one item past the walker; the counts then agree,
    but the changed totalCount still marks the walk inconsistent."""
    before = snapshots(1000)
    after = before[:10] + before[11:]  # s0010, on page 1, reaped before page 2 is read
    fake.route("GET", LIST_PATH, shifted(before, after))
    walk = client.list_snapshots("p1", "c1")

    with pytest.raises(
        InconsistentListError, match=r"totalCount changed during the walk \(1000 -> 999\)"
    ):
        walk.collect()

    # s0500 moved onto page 1 after it was read: without the check this walk would pass.
    assert walk.seen == 999
