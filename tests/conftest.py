"""Shared fixtures: fake credentials, the responses-based fake API and a client for it,
and the small test fleet on a running simulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import responses
from pydantic import SecretStr

from retention.api.client import OpsManagerClient
from retention.api.transport import Credentials, RetryPolicy
from tests.digest import DigestChecker
from tests.fakeapi import BASE_URL, FakeApi
from tests.notices import Receiver, receiving

if TYPE_CHECKING:
    from retention.simulator.server import Simulator

PUBLIC_KEY = "pubkey-abcdef"
# Distinctive, so a leak into any message or log line is found by a plain substring search.
PRIVATE_KEY = "priv-3e1b9c0a-DO-NOT-LEAK-7f2d"

# No waiting in unit tests: backoff 0, no jitter. Waits are tested against a real server.
FAST_RETRY = RetryPolicy(retries=3, backoff_factor=0.0, jitter=0.0, max_total_seconds=30.0)


def credentials(private_key: str = PRIVATE_KEY) -> Credentials:
    """The fake key pair (or one with another private key)."""
    return Credentials(PUBLIC_KEY, SecretStr(private_key))


def make_client(
    base_url: str = BASE_URL, private_key: str = PRIVATE_KEY, **options: Any
) -> OpsManagerClient:
    """A client for the fake API with fast retries unless told otherwise."""
    options.setdefault("retry", FAST_RETRY)
    return OpsManagerClient(base_url, credentials(private_key), **options)


@pytest.fixture
def checker() -> DigestChecker:
    """The digest checker of the fake API, with the standard qop="auth" challenge."""
    return DigestChecker(PUBLIC_KEY, PRIVATE_KEY)


@pytest.fixture
def fake(checker: DigestChecker) -> Iterator[FakeApi]:
    """The fake API, receiving every request to BASE_URL."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        api = FakeApi(checker)
        api.install(rsps)
        yield api


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """The small test fleet (tests/simfleet.py) on a running simulator, its clock frozen at
    NOW; a test gives the product that clock (``sim.clock.now``)."""
    from tests.simfleet import running  # noqa: PLC0415 - simfleet imports this module

    with running() as simulator:
        yield simulator


@pytest.fixture
def client(fake: FakeApi) -> Iterator[OpsManagerClient]:
    """A client pointed at the fake API."""
    with make_client() as api_client:
        yield api_client


@pytest.fixture
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without waiting, for tests of what a command says once retries are spent
    (the waits themselves are tested in tests/test_transport.py): saves 15 s a test."""
    monkeypatch.setattr(RetryPolicy, "backoff", lambda _self, _attempt: 0.0)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A running JSON webhook receiver for notices (tests/notices.py)."""
    with receiving() as got:
        yield got


@pytest.fixture(autouse=True)
def no_notify_urls_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sends notices to the URLs a developer's shell exports: RETENTION_NOTIFY_URLS
    alone turns notices on, for this process and the retention processes tests start."""
    monkeypatch.delenv("RETENTION_NOTIFY_URLS", raising=False)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's working folder: the current directory, the simulator's keys (tests/simfleet)
    in the environment and no other retention setting."""
    from tests.simfleet import KEY  # noqa: PLC0415 - simfleet imports this module

    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pytest_addoption(parser: pytest.Parser) -> None:
    """--update-golden rewrites the expected files of the golden tests instead of comparing."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/scenarios/*/expected.* from the current output",
    )
