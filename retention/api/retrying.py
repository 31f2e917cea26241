"""Trying a request again: how hard (``RetryPolicy``), urllib3's Retry that carries it
(``BoundedRetry``), and what the retries of one client share (``RetryNotes``, ``ApiStats``).

``BoundedRetry`` retries 429, 5xx and connection errors, honouring ``Retry-After``, with
jittered exponential backoff and a bound on the total time one request may spend retrying.
Retries are logged sparingly: the first one as a warning, the next ones for a minute only
counted (each at debug level), then one warning that says how many there were. A refused
connection before the service has answered at all, when a person waits at a terminal
(``interactive``), is tried only a few times in about a second: a wrong port or host is far
likelier than a service restarting, and the person is told at once.
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

from retention.api.failures import first_line
from retention.core.wording import counted
from retention.ops.stopping import Stop

log = logging.getLogger("retention.api")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

# The endpoint (``GET /groups/{PROJECT-ID}/clusters``) each thread is calling: urllib3 retries
# inside the request, on the caller's thread, and its Retry object knows only the URL.
_calling = threading.local()


@contextmanager
def calling(endpoint: str) -> Iterator[None]:
    """Name the endpoint this thread is about to call, for the retry log lines, and count
    its tries from one (``tries_made``)."""
    before = getattr(_calling, "endpoint", None)
    _calling.endpoint = endpoint
    _calling.tries = 1
    try:
        yield
    finally:
        _calling.endpoint = before


def tries_made() -> int:
    """How many times this thread's last call was sent (its first try and its retries)."""
    return int(getattr(_calling, "tries", 1))


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
        return f"cannot connect{at}: {first_line(cause or error)}"
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


def is_refused(error: BaseException | None) -> bool:
    """True for a connection the other host refused (nothing listens on that port)."""
    return (connection_failure(error) or "").startswith("connection refused")


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


class RetryNotes:
    """What the retries of one client know of each other: whether the service has answered
    yet, and when a retry was last logged as a warning.

    ``interactive``: a person waits at a terminal, so a refused connection before the first
    answer fails fast (``RetryPolicy.first_contact_retries``). Unattended runs (cron, a
    Kubernetes Job) retry it fully: the service may be restarting. A warning is logged for
    the first retry, then none for ``quiet_seconds``; the next one counts those left out.
    """

    def __init__(
        self,
        *,
        interactive: bool = False,
        quiet_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interactive = interactive
        self.quiet_seconds = quiet_seconds
        self.answered = False
        self._clock = clock
        self._lock = threading.Lock()
        self._warned_at: float | None = None
        self._unlogged = 0

    def answer(self) -> None:
        """The service answered (any status): from now on it is known to be there."""
        self.answered = True

    @property
    def fail_fast(self) -> bool:
        """Whether a refused connection is given up on after a short try."""
        return self.interactive and not self.answered

    def warn(self) -> int | None:
        """Whether this retry is logged as a warning: None when not (it is counted), else
        how many retries were left out since the last warning."""
        with self._lock:
            now = self._clock()
            if self._warned_at is not None and now - self._warned_at < self.quiet_seconds:
                self._unlogged += 1
                return None
            self._warned_at, unlogged, self._unlogged = now, self._unlogged, 0
            return unlogged


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try again: attempts, backoff and a bound on the total time spent retrying.

    ``retries`` counts tries after the first. The wait before try n is
    ``backoff_factor * 2**(n-1)`` plus up to ``jitter`` seconds at random, at most
    ``backoff_max``, or the server's ``Retry-After`` when it sends one. No request spends
    more than ``max_total_seconds`` retrying: when the next wait would pass it, we give up.
    A refused connection before the service's first answer, from a terminal
    (``RetryNotes.fail_fast``), is retried ``first_contact_retries`` times only, after
    ``first_contact_backoff * 2**(n-1)`` seconds: 0.25 and 0.5, under a second in all.
    """

    retries: int = 5
    backoff_factor: float = 0.5
    backoff_max: float = 30.0
    jitter: float = 0.5
    max_total_seconds: float = 120.0
    first_contact_retries: int = 2
    first_contact_backoff: float = 0.25

    def backoff(self, attempt: int) -> float:
        """The wait before retry ``attempt`` (1-based), jitter included."""
        base = self.backoff_factor * (2 ** (attempt - 1))
        if self.jitter:
            base += random.random() * self.jitter  # noqa: S311 - jitter, not cryptography
        return float(min(self.backoff_max, max(0.0, base)))

    def urllib3_retry(
        self,
        stats: ApiStats | None = None,
        stop: Stop | None = None,
        notes: RetryNotes | None = None,
    ) -> BoundedRetry:
        """The urllib3 Retry object that carries this policy (and counts into ``stats``);
        its waits end early, with StopRequestedError, when ``stop`` is requested; ``notes``
        are the client's (a new one's when None: unattended, nothing logged yet)."""
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
            notes=notes,
        )


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
        notes: RetryNotes | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.stats = stats
        self.stop = stop
        self.notes = notes or RetryNotes()
        self.policy = policy or RetryPolicy()
        self.started = started
        self.planned_wait = planned_wait

    def new(self, **kw: Any) -> Self:
        kw.setdefault("policy", self.policy)
        kw.setdefault("stats", self.stats)
        kw.setdefault("stop", self.stop)
        kw.setdefault("notes", self.notes)
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
        _calling.tries = len(self.history) + 1  # this try failed; tries_made() tells
        new = super().increment(method, url, response, error, _pool, _stacktrace)
        attempt = len(new.history)
        attempts = self.policy.retries + 1
        wait = self._server_wait(response)
        if self.notes.fail_fast and is_refused(error):
            # A person waits, and nothing has answered yet: a wrong port or host is likelier
            # than a restart. A short try, then the error that names the URL.
            attempts = min(attempts, self.policy.first_contact_retries + 1)
            if attempt >= attempts:
                raise MaxRetryError(_pool, url or "", error)
            wait = self.policy.first_contact_backoff * 2 ** (attempt - 1)
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
            "attempts": attempts,
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
        self._note((name, why, attempt + 1, attempts, wait), fields)
        return new

    def _note(self, args: tuple[str, str, int, int, float], fields: dict[str, Any]) -> None:
        """Log one retry: a warning for the first, one counting those left out after a quiet
        spell; the others at debug level. (urllib3's own "Retrying (Retry(...))" warning is
        dropped by retention.ops.logs.configure.)"""
        unlogged = self.notes.warn()
        line = "retrying %s after %s, attempt %d of %d, in %.1fs"
        if unlogged is None:
            log.debug(line, *args, extra={"fields": {**fields, "event": "retry"}})
            return
        said = (
            f"; {counted(unlogged, 'other retry')} since the last such line"
            if unlogged
            else f"; retries in the next {self.notes.quiet_seconds:g}s are counted, not logged"
        )
        fields = {**fields, "event": "retry", "unlogged": unlogged}
        log.warning(line + "%s", *args, said, extra={"fields": fields})

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
