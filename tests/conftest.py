"""Shared fixtures: fake credentials, the responses-based fake API and a client for it,
the small test fleet on a running simulator, and a PostgreSQL with a database per test."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses

from retention.api.client import OpsManagerClient
from retention.api.transport import RetryPolicy
from retention.simulator.server import Simulator
from tests.support.browser import INSTALL, Browser, find_chromium
from tests.support.client import PRIVATE_KEY, PUBLIC_KEY, make_client
from tests.support.digest import DigestChecker
from tests.support.examples import load_profile
from tests.support.fakeapi import FakeApi
from tests.support.notices import Receiver, receiving
from tests.support.postgres import (
    PostgresDatabase,
    PostgresServer,
    fresh_database,
    server_or_skip,
)
from tests.support.simfleet import KEY, running

# Before any test module is imported: their @settings read the profile's example count.
HYPOTHESIS_PROFILE = load_profile()


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
def ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler for the test, whatever it started with: a test run
    started in the background by a non-interactive shell (CI) has SIGINT ignored, and a
    command, as Python, leaves an ignored SIGINT ignored (a SIGINT sent would do nothing)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """The small test fleet (tests/support/simfleet.py) on a running simulator, its clock
    frozen at NOW; a test gives the product that clock (``sim.clock.now``)."""
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
    """A running JSON webhook receiver for notices (tests/support/notices.py)."""
    with receiving() as got:
        yield got


@pytest.fixture(autouse=True)
def no_notify_urls_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sends notices to the URLs a developer's shell exports: RETENTION_NOTIFY_URLS
    alone turns notices on, for this process and the retention processes tests start."""
    monkeypatch.delenv("RETENTION_NOTIFY_URLS", raising=False)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's working folder: the current directory, the simulator's keys
    (tests/support/simfleet.py) in the environment and no other retention setting."""
    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pytest_report_header() -> str:
    """The hypothesis profile in the run's header: quick runs a fifth of the examples CI does."""
    return f"hypothesis profile: {HYPOTHESIS_PROFILE} (CI=true runs the full counts)"


def pytest_addoption(parser: pytest.Parser) -> None:
    """--update-golden rewrites the expected files of the golden tests instead of comparing."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/scenarios/*/expected.* from the current output",
    )


@pytest.fixture
def browser() -> Iterator[Browser]:
    """A headless Chromium, or a skip that says how to get one (a failure under CI)."""
    found = find_chromium()
    if found is None:
        message = f"chromium not installed: {INSTALL} to run the layout check"
        if os.environ.get("CI") == "true":
            pytest.fail(message)  # a check that skips in CI checks nothing
        pytest.skip(message)
    with Browser(found) as running:
        yield running


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL for the session (each pytest-xdist worker its own): the server
    RETENTION_TEST_POSTGRES_URL names, else a throw-away cluster of the installed PostgreSQL
    (tests/support/postgres.py); a skip that says how to get one where there is none, a
    failure under CI=true."""
    with server_or_skip(os.environ) as server:
        yield server


@pytest.fixture
def postgres_database(postgres_server: PostgresServer) -> Iterator[PostgresDatabase]:
    """A new, empty database for one test, dropped after it: its ``url`` is a ledger.url
    without the password, ``password`` what a user puts in RETENTION_LEDGER_PASSWORD."""
    with fresh_database(postgres_server) as database:
        yield database
