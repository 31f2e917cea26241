"""The HTTP layer under the client: value objects for its settings, retries, and the session.

``build_session`` gives a ``requests.Session`` with digest auth, a connection pool sized for
the client's concurrency, TLS settings and ``BoundedRetry``: urllib3's Retry for 429, 5xx and
connection errors, honouring ``Retry-After``, with jittered exponential backoff and a bound
on the total time one request may spend retrying.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

import requests
from pydantic import SecretStr
from requests.adapters import HTTPAdapter
from requests.auth import HTTPDigestAuth
from urllib3.exceptions import (
    ConnectTimeoutError,
    InvalidHeader,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from retention import __version__
from retention.ops.stopping import Stop

log = logging.getLogger("retention.api")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

# The endpoint (``GET /groups/{PROJECT-ID}/clusters``) each thread is calling: urllib3 retries
# inside the request, on the caller's thread, and its Retry object knows only the URL.
_calling = threading.local()


@contextmanager
def calling(endpoint: str) -> Iterator[None]:
    """Name the endpoint this thread is about to call, for the retry log lines."""
    before = getattr(_calling, "endpoint", None)
    _calling.endpoint = endpoint
    try:
        yield
    finally:
        _calling.endpoint = before


def _request_name(method: str | None, url: str | None) -> str:
    """The endpoint being called, or the method and the URL's path (never its query, and
    never a header: no credential can reach a log line)."""
    endpoint = getattr(_calling, "endpoint", None)
    if endpoint:
        return str(endpoint)
    return f"{method or 'request'} {urlsplit(url or '').path or '/'}"


def _where(pool: Any) -> str:
    """A connection pool's "host:port" ("" when unknown)."""
    host, port = getattr(pool, "host", None), getattr(pool, "port", None)
    if not host:
        return ""
    return f"{host}:{port}" if port else str(host)


def retry_reason(
    response: BaseHTTPResponse | None, error: BaseException | None, pool: Any = None
) -> str:
    """Why a request is tried again, in words: "HTTP 503", "connection refused
    (127.0.0.1:9)", "no connection within the connect timeout (10.0.0.1:8443)"."""
    if response is not None and response.status:
        return f"HTTP {response.status}"
    described = connection_failure(error, _where(pool))
    if described is not None:
        return described
    return type(error).__name__ if error is not None else "no answer"


def connection_failure(  # noqa: PLR0911 - one return per kind of failure
    error: BaseException | None, where: str = ""
) -> str | None:
    """A failed connection or exchange in words ("connection refused (127.0.0.1:9)",
    "connection reset (om.example.com:8443)"), or None for an error of another kind."""
    at = f" ({where})" if where else ""
    if isinstance(error, NameResolutionError):
        return f"host name not found{at}"
    if isinstance(error, NewConnectionError):
        cause = error.__cause__ or error.__context__
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(error).lower():
            return f"connection refused{at}"
        return f"cannot connect{at}: {_cause_text(cause or error)}"
    if isinstance(error, ConnectTimeoutError):
        return f"no connection within the connect timeout{at}"
    if isinstance(error, ReadTimeoutError):
        return f"no answer within the read timeout{at}"
    if isinstance(error, ProtocolError):
        inner = next((a for a in error.args if isinstance(a, BaseException)), None)
        if isinstance(inner, ConnectionResetError):
            return f"connection reset{at}"
        return f"connection closed without an answer{at}"
    return None


def _cause_text(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class ApiStats:
    """Requests sent and retries made by one client (for the run's metrics)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.retries = 0

    def count_request(self) -> None:
        """One more request (a retry inside urllib3 counts as a retry, not a request)."""
        with self._lock:
            self.requests += 1

    def count_retry(self) -> None:
        """One more retry."""
        with self._lock:
            self.retries += 1


@dataclass(frozen=True)
class Credentials:
    """A programmatic API key pair; the private key is a SecretStr, so no repr shows it."""

    public_key: str
    private_key: SecretStr

    def __repr__(self) -> str:
        return f"Credentials(public_key={self.public_key!r}, private_key=SecretStr('**********'))"


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection and for each read of an answer."""

    connect: float = 10.0
    read: float = 30.0

    def as_requests(self) -> tuple[float, float]:
        """The (connect, read) tuple requests takes."""
        return (self.connect, self.read)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try again: attempts, backoff and a bound on the total time spent retrying.

    ``retries`` counts tries after the first. The wait before try n is
    ``backoff_factor * 2**(n-1)`` plus up to ``jitter`` seconds at random, at most
    ``backoff_max``, or the server's ``Retry-After`` when it sends one. No request spends
    more than ``max_total_seconds`` retrying: when the next wait would pass it, we give up.
    """

    retries: int = 5
    backoff_factor: float = 0.5
    backoff_max: float = 30.0
    jitter: float = 0.5
    max_total_seconds: float = 120.0

    def backoff(self, attempt: int) -> float:
        """The wait before retry ``attempt`` (1-based), jitter included."""
        base = self.backoff_factor * (2 ** (attempt - 1))
        if self.jitter:
            base += random.random() * self.jitter  # noqa: S311 - jitter, not cryptography
        return float(min(self.backoff_max, max(0.0, base)))

    def urllib3_retry(
        self, stats: ApiStats | None = None, stop: Stop | None = None
    ) -> BoundedRetry:
        """The urllib3 Retry object that carries this policy (and counts into ``stats``);
        its waits end early, with StopRequestedError, when ``stop`` is requested."""
        return BoundedRetry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            # TLS and other errors are not retried: trying again will not fix a certificate.
            other=0,
            redirect=0,
            raise_on_redirect=False,
            # Our PATCHes set absolute values, so repeating one is harmless.
            allowed_methods=frozenset({"GET", "PATCH"}),
            status_forcelist=RETRY_STATUSES,
            respect_retry_after_header=True,
            # Give the last answer back instead of raising, so errors can quote its body.
            raise_on_status=False,
            policy=self,
            stats=stats,
            stop=stop,
        )


@dataclass(frozen=True)
class TLSConfig:
    """TLS verification: on by default; ``ca_bundle`` names a PEM file of trusted CAs."""

    verify: bool = True
    ca_bundle: str | None = None

    def requests_verify(self) -> bool | str:
        """The value for requests' ``verify``."""
        if not self.verify:
            return False
        return self.ca_bundle or True


class BoundedRetry(Retry):
    """urllib3's Retry with our backoff and a bound on the total time spent retrying.

    urllib3 copies a Retry on every increment through ``new()``, so the start time of the
    first failure and the policy travel with each copy.
    """

    def __init__(
        self,
        *args: Any,
        policy: RetryPolicy | None = None,
        started: float | None = None,
        planned_wait: float | None = None,
        stats: ApiStats | None = None,
        stop: Stop | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.stats = stats
        self.stop = stop
        self.policy = policy or RetryPolicy()
        self.started = started
        self.planned_wait = planned_wait

    def new(self, **kw: Any) -> Self:
        kw.setdefault("policy", self.policy)
        kw.setdefault("stats", self.stats)
        kw.setdefault("stop", self.stop)
        kw.setdefault("started", self.started)
        kw.setdefault("planned_wait", None)
        return super().new(**kw)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Self:
        started = self.started if self.started is not None else time.monotonic()
        new = super().increment(method, url, response, error, _pool, _stacktrace)
        attempt = len(new.history)
        wait = self._server_wait(response)
        if wait is None:
            wait = self.policy.backoff(attempt)
        elapsed = time.monotonic() - started
        name = _request_name(method, url)
        why = retry_reason(response, error, _pool)
        fields: dict[str, Any] = {
            "endpoint": name,
            "path": urlsplit(url or "").path or None,
            "reason": why,
            "status": response.status if response is not None and response.status else None,
            "attempt": attempt + 1,
            "attempts": self.policy.retries + 1,
            "waitSeconds": round(wait, 3),
        }
        if elapsed + wait > self.policy.max_total_seconds:
            reason = (
                f"retry time budget of {self.policy.max_total_seconds:g}s spent "
                f"(waited {elapsed:.1f}s, next wait {wait:.1f}s)"
            )
            log.warning(
                "giving up on %s after %s, %d tries: %s",
                name,
                why,
                attempt,
                reason,
                extra={"fields": {**fields, "event": "retry-budget-spent"}},
            )
            raise MaxRetryError(_pool, url or "", error or ResponseError(reason))
        new.started = started
        new.planned_wait = wait
        if self.stats is not None:
            self.stats.count_retry()
        # One line per retry (urllib3's own "Retrying (Retry(...))" warning is dropped by
        # retention.ops.logs.configure).
        log.warning(
            "retrying %s after %s, attempt %d of %d, in %.1fs",
            name,
            why,
            attempt + 1,
            self.policy.retries + 1,
            wait,
            extra={"fields": {**fields, "event": "retry"}},
        )
        return new

    def _server_wait(self, response: BaseHTTPResponse | None) -> float | None:
        if response is None or not self.respect_retry_after_header:
            return None
        try:
            return self.get_retry_after(response)
        except InvalidHeader:
            return None

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        # The wait was decided (and checked against the budget) in increment(). A stop ends
        # it: the next try would be a new request, and none starts after a stop.
        wait = self.planned_wait
        if wait is None:  # not decided by increment(): urllib3's own wait
            super().sleep(response)
            return
        if self.stop is None or self.stop.shielded:
            if wait > 0:
                time.sleep(wait)
        elif self.stop.sleep(wait):
            raise self.stop.error(f"retrying {_request_name(None, None)}", in_doubt=True)


class DigestAuth(HTTPDigestAuth):
    """requests' digest auth, with a way to start the handshake over.

    requests answers one 401 per request; when a retried request meets a second stale
    nonce, it hands the 401 back and keeps the stale nonce for the next request too.
    """

    def forget_nonce(self) -> None:
        """Drop this thread's nonce: the next request gets (and answers) a fresh challenge."""
        self.init_per_thread_state()
        # requests keeps the nonce in a private thread-local; this is the one place we touch it.
        state: Any = self.__dict__["_thread_local"]
        state.last_nonce = ""
        state.chal = {}


def is_stale_challenge(response: requests.Response) -> bool:
    """True for a 401 whose challenge says the nonce was stale, not the key wrong."""
    challenge = response.headers.get("WWW-Authenticate", "").replace(" ", "").lower()
    return response.status_code == 401 and "stale=true" in challenge


class RateLimiter:
    """Spaces requests at least 1/rate seconds apart across all threads; rate 0: no limit."""

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> float:
        """Block until the next request may go; return the seconds waited."""
        if not self.interval:
            return 0.0
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        delay = start - now
        if delay > 0:
            self._sleep(delay)
        return delay


def build_session(
    credentials: Credentials,
    *,
    retry: RetryPolicy,
    tls: TLSConfig,
    pool_size: int,
    stats: ApiStats | None = None,
    stop: Stop | None = None,
) -> requests.Session:
    """A Session with digest auth, bounded retries, a pool of ``pool_size`` and TLS settings.

    ``HTTPDigestAuth`` keeps its challenge per thread; after the first 401 on a thread it
    sends the digest header up front, so a call costs about one request.
    """
    session = requests.Session()
    session.auth = DigestAuth(credentials.public_key, credentials.private_key.get_secret_value())
    adapter = HTTPAdapter(
        max_retries=retry.urllib3_retry(stats, stop),
        pool_connections=pool_size,
        pool_maxsize=pool_size,
    )
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.verify = tls.requests_verify()
    session.headers.update({"Accept": "application/json", "User-Agent": f"retention/{__version__}"})
    return session
