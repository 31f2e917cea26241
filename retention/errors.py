"""The one exception tree of retention; each error knows the exit code the CLI gives it.

    RetentionError                      exit 1  anything we raise on purpose
    ├── UsageError                      exit 2  bad command-line usage (nothing was sent)
    │   └── PlanFileError               exit 2  a plan file apply must not trust (nothing sent)
    ├── ConfigError                     exit 2  bad retention.yaml or environment (nothing was sent)
    │   └── PolicyError                 exit 2  bad policy files (nothing was sent)
    │       └── StrictError             exit 2  --strict, and the policies warn (nothing sent)
    │   └── LedgerSchemaError           exit 2  a ledger newer than this retention (never written)
    ├── LedgerError                     exit 1  the ledger cannot be opened, read or written
    │   └── ChainBrokenError            exit 1  `ledger verify`: a record does not match its hash
    ├── LockHeldError                   exit 4  another run holds the lock
    ├── StopRequestedError              130/143 SIGINT or SIGTERM asked the command to stop
    └── ApiError                        exit 1  something went wrong talking to the API
        ├── TransportError              exit 5  no HTTP answer at all
        │   ├── ConnectError            exit 5  refused, DNS, reset before any answer
        │   ├── TLSError                exit 5  certificate or handshake failure
        │   └── RequestTimeoutError     exit 5  no answer within the timeout, retries spent
        ├── AuthenticationError         exit 5  401 after answering the digest challenge
        ├── HTTPStatusError             exit 1  any other non-2xx answer (after retries)
        │   ├── PermissionDeniedError   exit 5  403: the key may not do this
        │   ├── NotFoundError           exit 1  404
        │   ├── InvalidFieldsError      exit 1  400 (e.g. doNotDelete with expires)
        │   ├── RateLimitedError        exit 1  429, retries and time budget spent
        │   └── ServerError             exit 1  5xx, retries and time budget spent
        ├── RefusedRequestError         exit 1  we refused to send it (an id that is no id, a
        │                                       body the API forbids): no request was made
        ├── MalformedResponseError      exit 1  a 2xx answer that is not the JSON the spec promises
        └── InconsistentListError       exit 1  a list walk whose unique count != totalCount

Every ApiError carries the endpoint (method and path template, e.g.
``GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots``), the request (method and URL) and,
when there was one, the response (status, a short body excerpt, the service version). None of
them ever holds a header of the request, so no credential can reach a message or a log line.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2
EXIT_HELD = 3
EXIT_LOCKED = 4
EXIT_UNREACHABLE = 5
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): Kubernetes' deadline, eviction, job deletion
# The reader of stdout went away (`retention diff | head`): what a shell reports for a
# process SIGPIPE ended (128 + 13), as `git log | head` or `grep | head` exit.
EXIT_CLOSED_OUTPUT = 141

EXIT_MEANINGS: dict[int, str] = {
    EXIT_OK: "done",
    EXIT_FAILURES: "finished with failures",
    EXIT_USAGE: "bad input (usage, configuration or policy): nothing was sent",
    EXIT_HELD: "held by a safety gate: destructive changes need a human",
    EXIT_LOCKED: "locked: another run holds the lock",
    EXIT_UNREACHABLE: "API unreachable or authentication failed: nothing was sent",
    EXIT_INTERRUPTED: "stopped by SIGINT (Ctrl-C) before the end",
    EXIT_TERMINATED: "stopped by SIGTERM before the end",
    EXIT_CLOSED_OUTPUT: "stopped writing: the reader of its output went away (a closed pipe)",
}


def exit_meaning(code: int | None) -> str:
    """What an exit code of retention means, in words."""
    if code is None:
        return "not finished"
    return EXIT_MEANINGS.get(code, "unknown exit code")


# The exit code of a command a signal stopped, by the signal's name.
SIGNAL_EXITS = {"SIGINT": EXIT_INTERRUPTED, "SIGTERM": EXIT_TERMINATED}


def exit_code_for(*, failed: bool, held: bool, stopped_by: str | None = None) -> int:
    """A job's exit code: a stop (130, 143) before failures (1) before holds (3) before
    done (0)."""
    if stopped_by is not None:
        return SIGNAL_EXITS.get(stopped_by, EXIT_INTERRUPTED)
    if failed:
        return EXIT_FAILURES
    return EXIT_HELD if held else EXIT_OK


_BODY_EXCERPT = 300


@dataclass(frozen=True)
class RequestInfo:
    """What was asked: method and URL (never headers, so never credentials)."""

    method: str
    url: str


@dataclass(frozen=True)
class ResponseInfo:
    """What came back: the status, a short excerpt of the body, and the service version."""

    status: int
    body_excerpt: str = ""
    content_type: str = ""
    service_version: str | None = None

    @classmethod
    def excerpt(cls, body: bytes | str) -> str:
        """Return the first few hundred characters of a body, on one line, for a message."""
        # Slice before decoding: a list page is half a megabyte and we keep 300 characters.
        head = body[: _BODY_EXCERPT * 4]
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        text = " ".join(text.split())
        if len(text) > _BODY_EXCERPT:
            return text[:_BODY_EXCERPT] + "..."
        return text


class RetentionError(Exception):
    """Base of every error retention raises on purpose."""

    exit_code: int = EXIT_FAILURES


class UsageError(RetentionError):
    """The command line was used wrongly; nothing was sent to the API."""

    exit_code = EXIT_USAGE


class PlanFileError(UsageError):
    """A plan file that is not a plan, or not one apply may send: ``where`` names the file
    and the entry (``plan.json: changes[12] (snapshot 5e4e...)``)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where, self.problem = where, problem


class ConfigError(RetentionError):
    """The job configuration is invalid; ``problems`` lists every one of them."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class PolicyError(ConfigError):
    """One or more policy files are invalid; ``problems`` lists every one of them."""


class StrictError(PolicyError):
    """--strict was given and the policies have warnings (``problems``): a run stops once
    its plan is written, before it sends anything."""


class LedgerSchemaError(ConfigError):
    """The ledger's schema is newer than this retention knows: it is neither read nor
    written (an older retention must not guess at a newer layout)."""


class LedgerError(RetentionError):
    """The ledger (``ledger.url``) cannot be opened, read or written; the message names it
    without its password."""


class ChainBrokenError(LedgerError):
    """A record of the ledger does not match its hash, or the chain skips one: ``record``
    names the first such record."""

    def __init__(self, message: str, record: str) -> None:
        super().__init__(message)
        self.record = record


class LockHeldError(RetentionError):
    """Another run holds the lock file."""

    exit_code = EXIT_LOCKED


class StopRequestedError(RetentionError):
    """SIGINT or SIGTERM asked the command to stop: raised instead of starting a request
    (``before`` says which), never in the middle of one. Its exit code is the signal's
    (SIGNAL_EXITS: 130, 143)."""

    def __init__(
        self,
        signal_name: str,
        before: str,
        *,
        in_doubt: bool = False,
        message: str | None = None,
    ) -> None:
        super().__init__(message or f"{signal_name}: stopped before {before}")
        self.signal_name = signal_name
        self.exit_code = SIGNAL_EXITS.get(signal_name, EXIT_INTERRUPTED)
        self.before = before
        # True when an earlier try of the same request reached the service (a stop during
        # the wait to retry it): whether the service acted on it is not known.
        self.in_doubt = in_doubt


class ApiError(RetentionError):
    """Talking to the API failed; names the endpoint, and carries request and response."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        request: RequestInfo | None = None,
        response: ResponseInfo | None = None,
    ) -> None:
        self.message = message
        self.endpoint = endpoint
        self.request = request
        self.response = response
        super().__init__(self._render())

    @property
    def status(self) -> int | None:
        """The HTTP status of the answer, or None when no answer came."""
        return self.response.status if self.response is not None else None

    @property
    def stops_everything(self) -> bool:
        """No other request would fare better: the API is unreachable, or the key is refused
        (TransportError, AuthenticationError, PermissionDeniedError)."""
        return self.exit_code == EXIT_UNREACHABLE

    def _render(self) -> str:
        parts = [f"{self.endpoint}: {self.message}"]
        if self.response is not None:
            parts.append(f"(HTTP {self.response.status})")
        return " ".join(parts)


class TransportError(ApiError):
    """No HTTP answer came back: the API could not be reached. ``diagnosis`` says what
    happened and ``remedy`` (when one is known) what to change; the message is both, so
    that a reader of one line gets one diagnosis, and doctor shows them apart."""

    exit_code = EXIT_UNREACHABLE
    _joined_by = "; "

    def __init__(
        self,
        diagnosis: str,
        *,
        endpoint: str,
        request: RequestInfo | None = None,
        response: ResponseInfo | None = None,
        remedy: str | None = None,
    ) -> None:
        self.diagnosis = diagnosis
        self.remedy = remedy
        message = diagnosis if remedy is None else f"{diagnosis}{self._joined_by}{remedy}"
        super().__init__(message, endpoint=endpoint, request=request, response=response)


class ConnectError(TransportError):
    """The connection was refused, reset, or the host name did not resolve."""


class TLSError(TransportError):
    """The TLS handshake or the certificate check failed."""

    _joined_by = ": "


class RequestTimeoutError(TransportError):
    """No answer came within the timeout, and the retries are spent."""


class AuthenticationError(ApiError):
    """The API refused the credentials (401 after the digest challenge was answered)."""

    exit_code = EXIT_UNREACHABLE


class HTTPStatusError(ApiError):
    """The API answered with a non-2xx status other than 401."""

    @property
    def status(self) -> int:
        """The HTTP status of the answer (always present for this error)."""
        assert self.response is not None  # noqa: S101 - constructed with a response by design
        return self.response.status


class PermissionDeniedError(HTTPStatusError):
    """403: the key is valid but may not do this (role or access list)."""

    exit_code = EXIT_UNREACHABLE


class NotFoundError(HTTPStatusError):
    """404: the project, cluster, host, snapshot or alert does not exist."""


class InvalidFieldsError(HTTPStatusError):
    """400: the API refused the request body or a query parameter."""


class RateLimitedError(HTTPStatusError):
    """429 that outlasted the retries and the retry time budget."""


class ServerError(HTTPStatusError):
    """5xx that outlasted the retries and the retry time budget."""


class RefusedRequestError(ApiError):
    """The client refused to build or send a request that would break the API's rules;
    nothing was sent, so there is no response (``status`` is None)."""


class MalformedResponseError(ApiError):
    """A 2xx answer whose body is not the JSON the spec describes (HTML, truncated, wrong shape)."""


class InconsistentListError(ApiError):
    """A list walk saw a different number of unique items than the API's totalCount."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        expected: int,
        seen: int,
        request: RequestInfo | None = None,
    ) -> None:
        self.expected = expected
        self.seen = seen
        super().__init__(message, endpoint=endpoint, request=request)


def status_error_class(status: int) -> type[HTTPStatusError]:
    """Return the most specific HTTPStatusError subclass for a status code."""
    if status == 403:
        return PermissionDeniedError
    if status == 404:
        return NotFoundError
    if status == 400:
        return InvalidFieldsError
    if status == 429:
        return RateLimitedError
    if status >= 500:
        return ServerError
    return HTTPStatusError
