"""Value objects of the transport layer: TLS, timeouts, retry policy, credentials."""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

from retention.api.transport import RateLimiter, RetryPolicy
from retention.api.values import Credentials, Timeouts, TLSConfig
from tests.support.client import make_client


@pytest.mark.parametrize(
    ("tls", "verify"),
    [
        (TLSConfig(), True),
        (TLSConfig(ca_bundle="/etc/ssl/corp-ca.pem"), "/etc/ssl/corp-ca.pem"),
        (TLSConfig(verify=False, ca_bundle="/ignored.pem"), False),
    ],
)
def test_tls_settings_reach_the_session(tls: TLSConfig, verify: bool | str) -> None:
    """Verification is on by default, a CA bundle replaces the default store, off means off."""
    with make_client(tls=tls) as api:
        assert api._session.verify == verify


def test_turning_tls_verification_off_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    """verify_tls: false works but leaves a warning in the log."""
    caplog.set_level(logging.WARNING, logger="retention.api")

    with make_client(tls=TLSConfig(verify=False)):
        pass

    assert "TLS verification is off" in caplog.text


def test_timeouts_are_a_connect_read_pair() -> None:
    """Timeouts give requests its (connect, read) tuple."""
    assert Timeouts(connect=3, read=45).as_requests() == (3, 45)


def test_retry_policy_maps_to_urllib3_retry() -> None:
    """The urllib3 Retry retries GET and PATCH on 429/5xx, not TLS errors, and keeps the policy."""
    policy = RetryPolicy(retries=4)

    retry = policy.urllib3_retry()

    assert retry.total == 4
    assert retry.other == 0
    assert set(retry.allowed_methods or ()) == {"GET", "PATCH"}
    assert set(retry.status_forcelist) == {429, 500, 502, 503, 504}
    assert retry.is_retry("PATCH", 503)
    assert not retry.is_retry("GET", 404)
    assert retry.policy is policy


def test_credentials_repr_hides_the_private_key() -> None:
    """The private key never shows in a repr of the credentials."""
    creds = Credentials("pub", SecretStr("very-secret-value"))

    assert "very-secret-value" not in repr(creds)
    assert "very-secret-value" not in str(creds)
    assert creds.private_key.get_secret_value() == "very-secret-value"


def test_items_per_page_above_the_api_maximum_is_refused() -> None:
    """The client refuses a page size the API does not allow (above 500)."""
    with pytest.raises(ValueError, match="items_per_page"):
        make_client(items_per_page=501)


def test_rate_limiter_spaces_requests_across_threads() -> None:
    """At 4 requests/s, five calls at the same instant are spaced 0.25 s apart."""
    now = [100.0]
    waits: list[float] = []
    limiter = RateLimiter(4.0, clock=lambda: now[0], sleep=waits.append)

    delays = [limiter.wait() for _ in range(5)]

    assert delays == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert waits == [0.25, 0.5, 0.75, 1.0]


def test_rate_limit_zero_means_no_limit() -> None:
    """A rate of 0 never waits."""
    limiter = RateLimiter(0.0, clock=lambda: 0.0, sleep=lambda _s: None)

    assert [limiter.wait() for _ in range(3)] == [0.0, 0.0, 0.0]
