"""The client against a real HTTP server in a thread: keep-alive digest, connection resets,
refused ports, Retry-After and backoff waits, the retry time budget, timeouts and TLS."""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from retention.api import retrying as retrying_module
from retention.api.transport import RetryPolicy
from retention.api.values import Timeouts
from retention.core.snapshot import SnapshotPatch
from retention.errors import (
    EXIT_UNREACHABLE,
    ConnectError,
    RateLimitedError,
    RequestTimeoutError,
    ServerError,
    TLSError,
)
from tests.support.client import PRIVATE_KEY, PUBLIC_KEY, make_client
from tests.support.digest import DigestChecker
from tests.support.fakeapi import snapshot
from tests.support.wire_server import Fault, WireState, closed_port, serve


@pytest.fixture
def state() -> WireState:
    """The wire server's script: answers one snapshot, no faults yet."""
    return WireState(checker=DigestChecker(PUBLIC_KEY, PRIVATE_KEY), body=snapshot("s1"))


@pytest.fixture
def base_url(state: WireState) -> Iterator[str]:
    """The running wire server's base URL."""
    with serve(state) as url:
        yield url


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the retry waits instead of sleeping them (only in the retrying module)."""
    recorded: list[float] = []
    fake_time = SimpleNamespace(monotonic=time.monotonic, sleep=recorded.append)
    monkeypatch.setattr(retrying_module, "time", fake_time)
    return recorded


def statuses(state: WireState) -> list[int | str]:
    """What the server answered, in order."""
    return [entry[2] for entry in state.log]


@pytest.mark.parametrize("literal_op", [False, True], ids=["qop-auth", "literal-op-auth"])
def test_digest_on_a_kept_alive_connection(
    state: WireState, base_url: str, literal_op: bool
) -> None:
    """Over a real socket: one challenge, then every call authenticated on the same connection."""
    state.checker.literal_op = literal_op

    with make_client(base_url) as api:
        results = [api.get_snapshot("p1", "c1", "s1").id for _ in range(3)]

    assert results == ["s1"] * 3
    assert statuses(state) == [401, 200, 200, 200]
    assert len(state.connections) == 1
    assert api.service_version == "gitHash=feedbeef; versionString=8.0.1"


@pytest.mark.usefixtures("sleeps")
def test_reset_connection_is_retried(state: WireState, base_url: str) -> None:
    """A connection reset mid-request is retried, for GET and for (idempotent) PATCH."""
    with make_client(base_url) as api:
        api.get_snapshot("p1", "c1", "s1")
        state.faults = [Fault("reset"), Fault("reset")]
        got = api.get_snapshot("p1", "c1", "s1")
        state.faults = [Fault("reset")]
        patched = api.patch_snapshot("p1", "c1", "s1", SnapshotPatch.protect())

    assert (got.id, patched.id) == ("s1", "s1")
    assert statuses(state) == [401, 200, "reset", "reset", 200, "reset", 200]


@pytest.mark.usefixtures("sleeps")
def test_refused_port_is_a_connect_error_with_exit_5() -> None:
    """Nothing listening: ConnectError after the retries, naming the base URL, exit code 5."""
    url = f"http://127.0.0.1:{closed_port()}/api/public/v1.0"

    with make_client(url) as api, pytest.raises(ConnectError) as info:
        api.get_snapshot("p1", "c1", "s1")

    assert info.value.exit_code == EXIT_UNREACHABLE
    assert f"cannot reach the API at {url}" in str(info.value)
    assert info.value.status is None


def test_retry_after_is_honoured(state: WireState, base_url: str, sleeps: list[float]) -> None:
    """A 429 with Retry-After: 2 waits exactly 2 seconds, then the call succeeds."""
    state.faults = [Fault("status", 429, {"Retry-After": "2"})]

    with make_client(base_url) as api:
        assert api.get_snapshot("p1", "c1", "s1").id == "s1"

    assert sleeps == [2.0]
    assert statuses(state) == [401, 429, 200]


def test_backoff_doubles_with_bounded_jitter(
    state: WireState, base_url: str, sleeps: list[float]
) -> None:
    """Without Retry-After, waits are factor * 2**(n-1) plus at most `jitter` seconds."""
    state.faults = [Fault("status", 503)] * 3
    policy = RetryPolicy(retries=5, backoff_factor=0.5, jitter=0.25, max_total_seconds=60)

    with make_client(base_url, retry=policy) as api:
        assert api.get_snapshot("p1", "c1", "s1").id == "s1"

    assert len(sleeps) == 3
    for wait, base in zip(sleeps, [0.5, 1.0, 2.0], strict=True):
        assert base <= wait <= base + 0.25


def test_retry_after_beyond_the_budget_gives_up_at_once(
    state: WireState, base_url: str, sleeps: list[float]
) -> None:
    """A Retry-After longer than the retry budget is not slept: RateLimitedError at once."""
    state.faults = [Fault("status", 429, {"Retry-After": "3600"})]

    with make_client(base_url) as api, pytest.raises(RateLimitedError) as info:
        api.get_snapshot("p1", "c1", "s1")

    assert sleeps == []
    assert statuses(state) == [401, 429]
    assert info.value.status == 429


def test_time_budget_bounds_retrying(state: WireState, base_url: str, sleeps: list[float]) -> None:
    """Waits 1, 2, 4 s against a 3.5 s budget: the third wait would pass it, so 3 tries."""
    state.faults = [Fault("status", 503)] * 10
    policy = RetryPolicy(retries=10, backoff_factor=1.0, jitter=0.0, max_total_seconds=3.5)

    with make_client(base_url, retry=policy) as api, pytest.raises(ServerError):
        api.get_snapshot("p1", "c1", "s1")

    assert sleeps == [1.0, 2.0]
    assert statuses(state) == [401, 503, 503, 503]


@pytest.mark.usefixtures("sleeps")
def test_read_timeout_becomes_request_timeout_error(state: WireState, base_url: str) -> None:
    """An answer slower than the read timeout on every try raises RequestTimeoutError, exit 5."""
    with make_client(base_url) as api:
        api.get_snapshot("p1", "c1", "s1")
    state.faults = [Fault("sleep", seconds=0.6), Fault("sleep", seconds=0.6)]
    policy = RetryPolicy(retries=1, backoff_factor=0.0, jitter=0.0)

    with (
        make_client(base_url, retry=policy, timeouts=Timeouts(connect=1.0, read=0.2)) as api,
        pytest.raises(RequestTimeoutError) as info,
    ):
        api.get_snapshot("p1", "c1", "s1")

    assert "no answer within 0.2s after 2 tries" in str(info.value)
    assert info.value.exit_code == EXIT_UNREACHABLE


def test_tls_failure_is_a_tls_error(base_url: str) -> None:
    """Speaking TLS to a plain-HTTP port fails as TLSError (not retried), exit code 5."""
    https_url = base_url.replace("http://", "https://")

    with make_client(https_url) as api, pytest.raises(TLSError) as info:
        api.get_snapshot("p1", "c1", "s1")

    assert info.value.exit_code == EXIT_UNREACHABLE
    assert "does not answer TLS" in str(info.value)


PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                   "all_proxy", "NO_PROXY", "no_proxy")  # fmt: skip
BEHIND_PROXY = "http://ops.example.invalid:8080/api/public/v1.0"


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the proxy variables set, whatever the machine running the tests has."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_proxy_variables")
def test_http_proxy_in_the_environment_carries_every_request(
    state: WireState, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY set when the client is made sends its requests through the proxy (the
    client reads the variables once, not on each request, but still honours them)."""
    proxy = base_url.removesuffix("/api/public/v1.0")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    with make_client(BEHIND_PROXY) as api:
        first = api.get_snapshot("p1", "c1", "s1")
        second = api.get_snapshot("p1", "c1", "s1")

    assert (first.id, second.id) == ("s1", "s1")
    wanted = f"{BEHIND_PROXY}/groups/p1/clusters/c1/snapshots/s1"
    assert [path for _, path, status in state.log if status == 200] == [wanted, wanted]


@pytest.mark.usefixtures("no_proxy_variables")
def test_no_proxy_naming_the_host_sends_requests_direct(
    state: WireState, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_PROXY naming the API's host bypasses HTTP_PROXY: the request goes to the host
    itself (here a name that does not resolve) and the proxy sees nothing."""
    monkeypatch.setenv("HTTP_PROXY", base_url.removesuffix("/api/public/v1.0"))
    monkeypatch.setenv("NO_PROXY", "ops.example.invalid")
    with make_client(BEHIND_PROXY) as api, pytest.raises(ConnectError):
        api.get_snapshot("p1", "c1", "s1")

    assert state.log == []
