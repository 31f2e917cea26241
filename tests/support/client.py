"""The fake key pair, and a client for the fake API (or any test server) with fast retries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr

from retention.api.client import OpsManagerClient
from retention.api.transport import RetryPolicy
from retention.api.values import Credentials
from tests.support.fakeapi import BASE_URL

PUBLIC_KEY = "pubkey-abcdef"
# Distinctive, so a leak into any message or log line is found by a plain substring search.
PRIVATE_KEY = "priv-3e1b9c0a-DO-NOT-LEAK-7f2d"

# The suite's one fixed time, for what a test gives a clock but does not look at (the note
# of the server's date, a lock file's line, the schedule's warnings): never the wall clock.
FIXED_TIME = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    """A clock standing still at FIXED_TIME."""
    return FIXED_TIME


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
    options.setdefault("clock", fixed_clock)
    return OpsManagerClient(base_url, credentials(private_key), **options)
