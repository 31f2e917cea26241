"""The HTTP layer under the client: value objects for its settings, and the session.

``build_session`` gives a ``requests.Session`` with digest auth, a connection pool sized for
the client's concurrency, TLS settings and the retries of ``retention.api.retrying``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.auth import HTTPDigestAuth

from retention.api.retrying import ApiStats, RetryNotes, RetryPolicy
from retention.api.values import Credentials, TLSConfig
from retention.ops.stopping import Stop
from retention.version import __version__

# RetryPolicy is one of the client's settings, beside Timeouts and TLSConfig.
__all__ = [
    "ApiStats",
    "DigestAuth",
    "RateLimiter",
    "RetryNotes",
    "RetryPolicy",
    "build_session",
    "is_stale_challenge",
]


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


def rate_limiter(rate: float, stop: Stop | None) -> RateLimiter:
    """A limiter for ``rate`` requests a second; a stop ends a wait for its next slot too."""
    return RateLimiter(rate, sleep=stop.sleep) if stop is not None else RateLimiter(rate)


def build_session(  # noqa: PLR0913 - the session is made of the client's settings, as they come
    credentials: Credentials,
    *,
    retry: RetryPolicy,
    tls: TLSConfig,
    pool_size: int,
    stats: ApiStats | None = None,
    stop: Stop | None = None,
    notes: RetryNotes | None = None,
) -> requests.Session:
    """A Session with digest auth, bounded retries, a pool of ``pool_size`` and TLS settings.

    ``HTTPDigestAuth`` keeps its challenge per thread; after the first 401 on a thread it
    sends the digest header up front, so a call costs about one request.
    """
    session = requests.Session()
    session.auth = DigestAuth(credentials.public_key, credentials.private_key.get_secret_value())
    adapter = HTTPAdapter(
        max_retries=retry.urllib3_retry(stats, stop, notes),
        pool_connections=pool_size,
        pool_maxsize=pool_size,
    )
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.verify = tls.requests_verify()
    session.headers.update({"Accept": "application/json", "User-Agent": f"retention/{__version__}"})
    return session
