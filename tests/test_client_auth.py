"""Digest authentication: both challenge forms, one challenge per thread, wrong keys, stale
nonces, and the private key kept out of every message and log line."""

from __future__ import annotations

import logging
import threading

import pytest

from retention.api.client import OpsManagerClient
from retention.errors import EXIT_UNREACHABLE, AuthenticationError
from tests.support.client import PRIVATE_KEY, credentials, make_client
from tests.support.digest import DigestChecker
from tests.support.fakeapi import FakeApi, snapshot

SNAP_PATH = "/groups/p1/clusters/c1/snapshots/s1"


@pytest.fixture
def snap_route(fake: FakeApi) -> None:
    """The fake answers GET on one snapshot."""
    fake.answer("GET", SNAP_PATH, snapshot("s1"))


@pytest.mark.parametrize("literal_op", [False, True], ids=["qop-auth", "literal-op-auth"])
@pytest.mark.usefixtures("snap_route")
def test_digest_handshake_in_both_challenge_forms(
    fake: FakeApi, checker: DigestChecker, client: OpsManagerClient, literal_op: bool
) -> None:
    """The client answers a qop="auth" challenge and the spec's literal op="auth" one correctly."""
    checker.literal_op = literal_op

    result = client.get_snapshot("p1", "c1", "s1")

    assert result.id == "s1"
    assert [s.status for s in fake.seen] == [401, 200]
    assert checker.accepted == 1


@pytest.mark.usefixtures("snap_route")
def test_second_call_on_a_thread_sends_digest_without_a_new_challenge(
    fake: FakeApi, checker: DigestChecker, client: OpsManagerClient
) -> None:
    """After one challenge, later calls on the same thread carry the digest up front."""
    for _ in range(5):
        client.get_snapshot("p1", "c1", "s1")

    assert checker.challenges == 1
    assert [s.status for s in fake.seen] == [401] + [200] * 5
    assert all(s.had_authorization for s in fake.seen[1:])


@pytest.mark.usefixtures("snap_route")
def test_each_thread_answers_its_own_challenge_once(
    fake: FakeApi, checker: DigestChecker, client: OpsManagerClient
) -> None:
    """Digest state is per thread: N threads cost N challenges, not one per call."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                client.get_snapshot("p1", "c1", "s1")
        except Exception as exc:  # noqa: BLE001 - any failure in a thread is reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert checker.challenges == 4
    assert len(fake.calls(200)) == 12


@pytest.mark.usefixtures("snap_route")
def test_stale_nonce_is_answered_with_a_fresh_digest(
    fake: FakeApi, checker: DigestChecker, client: OpsManagerClient
) -> None:
    """A 401 with stale=true makes the client re-authenticate once and the call succeed."""
    client.get_snapshot("p1", "c1", "s1")
    checker.expire_all_nonces()

    result = client.get_snapshot("p1", "c1", "s1")

    assert result.id == "s1"
    assert [s.status for s in fake.seen] == [401, 200, 401, 200]


@pytest.mark.usefixtures("snap_route")
def test_nonce_stale_twice_in_one_call_starts_the_handshake_over(
    fake: FakeApi, checker: DigestChecker, client: OpsManagerClient
) -> None:
    """Two stale nonces in one call (a retry reused a fresh one) are not wrong credentials:
    the client drops the nonce, answers a fresh challenge and succeeds."""
    client.get_snapshot("p1", "c1", "s1")
    checker.stale_next = 2

    result = client.get_snapshot("p1", "c1", "s1")

    assert result.id == "s1"
    assert [s.status for s in fake.seen] == [401, 200, 401, 401, 401, 200]
    assert [s.had_authorization for s in fake.seen[2:]] == [True, True, False, True]


@pytest.mark.usefixtures("snap_route")
def test_wrong_private_key_is_an_authentication_error_with_exit_5(
    fake: FakeApi, checker: DigestChecker
) -> None:
    """Wrong keys give AuthenticationError naming the endpoint and 401, with exit code 5."""
    with make_client(private_key="wrong-key") as bad, pytest.raises(AuthenticationError) as info:
        bad.get_snapshot("p1", "c1", "s1")

    error = info.value
    assert error.exit_code == EXIT_UNREACHABLE
    assert error.status == 401
    assert (
        error.endpoint == "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}"
    )
    assert "refused the credentials" in str(error)
    assert checker.accepted == 0
    # One challenge and one wrong answer: no retry storm against a locked-out key.
    assert [s.status for s in fake.seen] == [401, 401]


@pytest.mark.usefixtures("snap_route")
def test_private_key_appears_in_no_message_repr_or_log(
    fake: FakeApi, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither errors, reprs nor DEBUG logs of a failed call contain the private key."""
    checker_for_other_key = DigestChecker("pubkey-abcdef", "the-real-key")
    fake.checker = checker_for_other_key
    caplog.set_level(logging.DEBUG)

    with make_client(private_key=PRIVATE_KEY) as api:
        with pytest.raises(AuthenticationError) as info:
            api.get_snapshot("p1", "c1", "s1")
        texts = [str(info.value), repr(info.value), repr(api), repr(credentials())]
        texts += [repr(info.value.request), repr(info.value.response)]

    texts.append(caplog.text)
    for text in texts:
        assert PRIVATE_KEY not in text
    assert "**********" in repr(credentials())
