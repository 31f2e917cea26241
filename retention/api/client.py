"""A typed client for the nine endpoints of the API contract and the two discovery lists.

    client = OpsManagerClient(base_url, Credentials("pub", SecretStr("priv")))
    for snap in client.list_snapshots(project_id, cluster_id, completed="all"):
        ...

Lists are ``ListWalk`` iterators: they page at itemsPerPage=500, drop repeated ids (a page
boundary can shift while we read) and, once exhausted, check the unique count against the
API's ``totalCount``, raising InconsistentListError when they differ. Every failure is an
``ApiError`` that names the endpoint (see retention.errors).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeVar
from urllib.parse import quote

import requests
from pydantic import TypeAdapter, ValidationError
from urllib3.exceptions import InsecureRequestWarning, ReadTimeoutError
from urllib3.exceptions import SSLError as Urllib3SSLError

from retention.api import models
from retention.api.failures import (
    describe_not_json,
    describe_tls_failure,
    error_message,
    first_line,
    host_port,
    urllib3_cause,
)
from retention.api.models import (
    AgentLinks,
    Alert,
    AlertAcknowledgement,
    CompletedFilter,
    ConfigServerSnapshot,
    ListPage,
    Snapshot,
    SnapshotPatch,
    SnapshotState,
)
from retention.api.transport import (
    ApiStats,
    Credentials,
    DigestAuth,
    RateLimiter,
    RetryPolicy,
    Timeouts,
    TLSConfig,
    build_session,
    calling,
    connection_failure,
    is_stale_challenge,
)
from retention.errors import (
    ApiError,
    AuthenticationError,
    ConnectError,
    InconsistentListError,
    MalformedResponseError,
    RefusedRequestError,
    RequestInfo,
    RequestTimeoutError,
    ResponseInfo,
    TLSError,
    status_error_class,
)

log = logging.getLogger("retention.api")

MAX_ITEMS_PER_PAGE = 500
STALE_RETRIES = 3
# The real service sends X-MongoDB-Service-Version (every vendor answer on record); the API
# document we started from writes X-Server-Service-Version. Either is read, the real first.
SERVICE_VERSION_HEADERS = ("X-MongoDB-Service-Version", "X-Server-Service-Version")
_PLACEHOLDER = re.compile(r"\{([A-Z-]+)\}")


class Endpoint(NamedTuple):
    """An API operation: its method and path template, as the spec writes them."""

    method: str
    template: str

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


PATCH_SNAPSHOT = Endpoint(
    "PATCH", "/groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}"
)
LIST_SNAPSHOTS = Endpoint("GET", "/groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots")
GET_SNAPSHOT = Endpoint("GET", "/groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}")
LIST_CONFIG_SERVER_SNAPSHOTS = Endpoint("GET", "/groups/{PROJECT-ID}/hosts/{HOST-ID}/snapshots")
GET_CONFIG_SERVER_SNAPSHOT = Endpoint(
    "GET", "/groups/{PROJECT-ID}/hosts/{HOST-ID}/snapshots/{SNAPSHOT-ID}"
)
LIST_ALERTS = Endpoint("GET", "/groups/{PROJECT-ID}/alerts")
GET_ALERT = Endpoint("GET", "/groups/{PROJECT-ID}/alerts/{ALERT-ID}")
PATCH_ALERT = Endpoint("PATCH", "/groups/{PROJECT-ID}/alerts/{ALERT-ID}")
GET_AGENT_LINKS = Endpoint("GET", "/groups/{PROJECT-ID}/agents")
LIST_CLUSTERS = Endpoint("GET", "/groups/{PROJECT-ID}/clusters")
LIST_HOSTS = Endpoint("GET", "/groups/{PROJECT-ID}/hosts")
GET_PROJECT = Endpoint("GET", "/groups/{PROJECT-ID}")


def encode_segment(value: str) -> str:
    """Percent-encode one path segment built from data; ids are data, not path syntax.

    A segment of only dots cannot be sent safely (requests decodes ``%2E`` back into ``.``,
    and servers resolve ``..``), so it is refused; no real id looks like that.
    """
    if not value:
        raise ValueError("an empty id cannot be part of a path")
    if value.strip(".") == "":
        raise ValueError(f"{value!r} is not a valid id (a path segment of only dots)")
    return quote(value, safe="")


def build_path(endpoint: Endpoint, ids: tuple[str, ...]) -> str:
    """Fill the endpoint's placeholders with the given ids, each percent-encoded."""
    names = _PLACEHOLDER.findall(endpoint.template)
    if len(names) != len(ids):
        raise TypeError(f"{endpoint} takes {len(names)} ids, got {len(ids)}")
    values = iter(ids)
    return _PLACEHOLDER.sub(lambda _m: encode_segment(next(values)), endpoint.template)


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_HasId)
T = TypeVar("T")


@dataclass
class _Answer:
    """A successful answer: the raw body, or the unwrapped content in envelope mode."""

    raw: bytes
    request: RequestInfo
    response: ResponseInfo
    content: Any = None
    unwrapped: bool = False


class OpsManagerClient:
    """The API client: one requests.Session shared by all threads, digest auth per thread."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        tls: TLSConfig | None = None,
        envelope: bool = False,
        pool_size: int = 8,
        items_per_page: int = MAX_ITEMS_PER_PAGE,
        max_requests_per_second: float = 0.0,
    ) -> None:
        if not 1 <= items_per_page <= MAX_ITEMS_PER_PAGE:
            raise ValueError(f"items_per_page must be 1..{MAX_ITEMS_PER_PAGE}")
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self.tls = tls or TLSConfig()
        self.envelope = envelope
        self.items_per_page = items_per_page
        self.service_version: str | None = None
        # The server's Date header and our clock when it arrived: doctor's clock-skew check.
        self.server_date: tuple[datetime, datetime] | None = None
        self._limiter = RateLimiter(max_requests_per_second)
        self._config_server_warned = False
        self._lock = threading.Lock()
        if not self.tls.verify:
            log.warning("TLS verification is off (verify_tls: false): answers can be forged")
            # Said once, above: not again by urllib3 for every request, as raw text.
            warnings.filterwarnings("ignore", category=InsecureRequestWarning)
        self.stats = ApiStats()
        self._session = build_session(
            credentials, retry=self.retry, tls=self.tls, pool_size=pool_size, stats=self.stats
        )

    def __enter__(self) -> OpsManagerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the pooled connections."""
        self._session.close()

    def __repr__(self) -> str:
        return f"OpsManagerClient({self.base_url!r})"

    # --- cluster snapshots (endpoints 1-3) ---------------------------------------------------

    def list_snapshots(
        self, project_id: str, cluster_id: str, completed: CompletedFilter = "all"
    ) -> ListWalk[Snapshot]:
        """Every snapshot of a cluster; ``completed="all"`` includes those still running."""
        return ListWalk(
            self,
            LIST_SNAPSHOTS,
            (project_id, cluster_id),
            models.SNAPSHOT_PAGE,
            {"completed": completed},
        )

    def list_snapshot_states(self, project_id: str, cluster_id: str) -> ListWalk[SnapshotState]:
        """Every snapshot of a cluster (``completed=all``), read into the lean model a plan
        needs: the same requests as ``list_snapshots``, less than half the parsing."""
        return ListWalk(
            self,
            LIST_SNAPSHOTS,
            (project_id, cluster_id),
            models.SNAPSHOT_STATE_PAGE,
            {"completed": "all"},
        )

    def get_snapshot(self, project_id: str, cluster_id: str, snapshot_id: str) -> Snapshot:
        """One cluster snapshot."""
        answer = self._call(GET_SNAPSHOT, (project_id, cluster_id, snapshot_id))
        return self._parse(GET_SNAPSHOT, answer, _SNAPSHOT)

    def patch_snapshot(
        self, project_id: str, cluster_id: str, snapshot_id: str, patch: SnapshotPatch
    ) -> Snapshot:
        """Change a snapshot's doNotDelete / expires; returns the snapshot as it now is."""
        body = patch.to_api()
        # SnapshotPatch refuses this already; a copy made with model_copy() skips validation.
        if body.get("doNotDelete") is True and "expires" in body:
            raise RefusedRequestError(
                "refusing to send doNotDelete: true together with expires",
                endpoint=str(PATCH_SNAPSHOT),
            )
        answer = self._call(PATCH_SNAPSHOT, (project_id, cluster_id, snapshot_id), body=body)
        return self._parse(PATCH_SNAPSHOT, answer, _SNAPSHOT)

    # --- config-server snapshots (endpoints 4-5, deprecated) --------------------------------

    def list_config_server_snapshots(
        self, project_id: str, host_id: str
    ) -> ListWalk[ConfigServerSnapshot]:
        """Every snapshot of a legacy mirrored config server (deprecated endpoint)."""
        self._warn_config_server_deprecated()
        return ListWalk(
            self,
            LIST_CONFIG_SERVER_SNAPSHOTS,
            (project_id, host_id),
            models.CONFIG_SERVER_SNAPSHOT_PAGE,
        )

    def list_config_server_snapshot_states(
        self, project_id: str, host_id: str
    ) -> ListWalk[SnapshotState]:
        """Every snapshot of a legacy config server, in the lean model a plan needs."""
        self._warn_config_server_deprecated()
        return ListWalk(
            self, LIST_CONFIG_SERVER_SNAPSHOTS, (project_id, host_id), models.SNAPSHOT_STATE_PAGE
        )

    def get_config_server_snapshot(
        self, project_id: str, host_id: str, snapshot_id: str
    ) -> ConfigServerSnapshot:
        """One legacy config-server snapshot (deprecated endpoint)."""
        self._warn_config_server_deprecated()
        endpoint = GET_CONFIG_SERVER_SNAPSHOT
        answer = self._call(endpoint, (project_id, host_id, snapshot_id))
        return self._parse(endpoint, answer, _CONFIG_SERVER_SNAPSHOT)

    def _warn_config_server_deprecated(self) -> None:
        # Nothing to act on, so no warning: a plan with config servers says it once, in
        # its notices and the report's config-server section (retention.planner).
        with self._lock:
            if self._config_server_warned:
                return
            self._config_server_warned = True
        log.debug(
            "the config-server snapshot endpoints are deprecated (legacy mirrored config "
            "servers, database versions before 3.4); their decisions are advisory only"
        )

    # --- alerts (endpoints 6-8) -----------------------------------------------------------------

    def list_alerts(self, project_id: str, status: str | None = None) -> ListWalk[Alert]:
        """A project's alerts, optionally only those with ``status`` (TRACKING, OPEN, CLOSED)."""
        params = {"status": status} if status else {}
        return ListWalk(self, LIST_ALERTS, (project_id,), models.ALERT_PAGE, params)

    def get_alert(self, project_id: str, alert_id: str) -> Alert:
        """One alert."""
        answer = self._call(GET_ALERT, (project_id, alert_id))
        return self._parse(GET_ALERT, answer, _ALERT)

    def acknowledge_alert(
        self, project_id: str, alert_id: str, until: datetime, comment: str | None = None
    ) -> Alert:
        """Acknowledge an alert until ``until`` (sent as UTC), with an optional comment."""
        ack = AlertAcknowledgement(acknowledged_until=until, acknowledgement_comment=comment)
        answer = self._call(PATCH_ALERT, (project_id, alert_id), body=ack.to_api())
        return self._parse(PATCH_ALERT, answer, _ALERT)

    def unacknowledge_alert(
        self, project_id: str, alert_id: str, comment: str | None = None
    ) -> Alert:
        """Remove an alert's acknowledgement (a PATCH without acknowledgedUntil)."""
        ack = AlertAcknowledgement(acknowledgement_comment=comment)
        answer = self._call(PATCH_ALERT, (project_id, alert_id), body=ack.to_api())
        return self._parse(PATCH_ALERT, answer, _ALERT)

    # --- agents (endpoint 9) and discovery --------------------------------------------------

    def get_agent_links(self, project_id: str) -> AgentLinks:
        """Links to the project's monitoring, backup and automation agent resources."""
        answer = self._call(GET_AGENT_LINKS, (project_id,))
        return self._parse(GET_AGENT_LINKS, answer, _AGENT_LINKS)

    def get_project(self, project_id: str) -> models.Project:
        """The project, for its name (reports name projects, not only their ids)."""
        answer = self._call(GET_PROJECT, (project_id,))
        return self._parse(GET_PROJECT, answer, _PROJECT)

    def list_clusters(self, project_id: str) -> ListWalk[models.Cluster]:
        """The project's clusters (replica sets, sharded clusters and their shards)."""
        return ListWalk(self, LIST_CLUSTERS, (project_id,), models.CLUSTER_PAGE)

    def list_hosts(self, project_id: str) -> ListWalk[models.Host]:
        """The project's hosts; legacy mirrored config servers have typeName SHARD_CONFIG."""
        return ListWalk(self, LIST_HOSTS, (project_id,), models.HOST_PAGE)

    # --- the request core -------------------------------------------------------------------

    def url_for(self, endpoint: Endpoint, ids: tuple[str, ...]) -> str:
        """The absolute URL of an endpoint for these ids (percent-encoded)."""
        return self.base_url + build_path(endpoint, ids)

    def _call(
        self,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        *,
        params: Mapping[str, str | int] | None = None,
        body: dict[str, Any] | None = None,
    ) -> _Answer:
        name = str(endpoint)
        try:
            url = self.url_for(endpoint, ids)
        except ValueError as exc:
            raise RefusedRequestError(str(exc), endpoint=name) from None
        query: dict[str, str | int] = dict(params or {})
        if self.envelope:
            query["envelope"] = "true"
        request = RequestInfo(endpoint.method, url)
        for attempt in range(STALE_RETRIES + 1):
            self._limiter.wait()
            self.stats.count_request()
            try:
                with calling(name):
                    response = self._session.request(
                        endpoint.method,
                        url,
                        params=query,
                        json=body,
                        timeout=self.timeouts.as_requests(),
                        # Per request: requests lets REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE
                        # (set in many images) override the session's, so api.ca_bundle
                        # was silently ignored wherever one of them was set.
                        verify=self.tls.requests_verify(),
                    )
                    raw = response.content
            except requests.exceptions.RequestException as exc:
                raise self._transport_error(exc, name, request) from None
            if not is_stale_challenge(response) or attempt == STALE_RETRIES:
                break
            # The key is right but the nonce went stale twice in one request (a retry reused
            # it): start the digest handshake over rather than report wrong credentials.
            log.info("%s: nonce stale again; answering a fresh challenge", name)
            auth = self._session.auth
            if isinstance(auth, DigestAuth):
                auth.forget_nonce()
        return self._check(endpoint, request, response, raw)

    def _transport_error(
        self, exc: requests.exceptions.RequestException, name: str, request: RequestInfo
    ) -> ApiError:
        """Name what went wrong on the wire; requests wraps a spent retry of a read timeout
        in ConnectionError, so the urllib3 cause decides, not the requests class."""
        cause = urllib3_cause(exc)
        if isinstance(exc, requests.exceptions.SSLError) or isinstance(cause, Urllib3SSLError):
            return TLSError(
                describe_tls_failure(exc, self.base_url, self.tls),
                endpoint=name,
                request=request,
            )
        if isinstance(exc, requests.exceptions.ReadTimeout) or isinstance(cause, ReadTimeoutError):
            return RequestTimeoutError(
                f"no answer within {self.timeouts.read:g}s after {self.retry.retries + 1} tries",
                endpoint=name,
                request=request,
            )
        described = connection_failure(cause, host_port(self.base_url))
        return ConnectError(
            f"cannot reach the API at {self.base_url}: {described or first_line(exc)}",
            endpoint=name,
            request=request,
        )

    def _check(
        self,
        endpoint: Endpoint,
        request: RequestInfo,
        response: requests.Response,
        raw: bytes,
    ) -> _Answer:
        name = str(endpoint)
        version = next(
            (v for name in SERVICE_VERSION_HEADERS if (v := response.headers.get(name))), None
        )
        if version:
            self.service_version = version
        self._note_date(response.headers.get("Date"))
        status = response.status_code
        info = ResponseInfo(
            status=status,
            body_excerpt=ResponseInfo.excerpt(raw),
            content_type=response.headers.get("Content-Type", ""),
            service_version=version,
        )
        content: Any = None
        unwrapped = False
        if self.envelope and 200 <= status < 300:
            content, status = _unwrap_envelope(name, request, info, raw)
            unwrapped = True
            info = replace(info, status=status)  # the status the envelope reports
        if status == 401:
            raise AuthenticationError(
                "the API refused the credentials; check RETENTION_PUBLIC_KEY and the private "
                "key, and that this host is on the key's API access list",
                endpoint=name,
                request=request,
                response=info,
            )
        if not 200 <= status < 300:
            cls = status_error_class(status)
            raise cls(error_message(status, raw), endpoint=name, request=request, response=info)
        return _Answer(raw, request, info, content, unwrapped)

    def _note_date(self, header: str | None) -> None:
        if not header:
            return
        try:
            sent = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return
        if sent.tzinfo is not None:
            self.server_date = (sent.astimezone(UTC), datetime.now(UTC))

    def _parse(self, endpoint: Endpoint, answer: _Answer, adapter: TypeAdapter[T]) -> T:
        try:
            if answer.unwrapped:
                return adapter.validate_python(answer.content)
            return adapter.validate_json(answer.raw)
        except ValidationError as exc:
            raise MalformedResponseError(
                _describe_invalid(answer, exc),
                endpoint=str(endpoint),
                request=answer.request,
                response=answer.response,
            ) from None

    def _get_page(
        self,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        params: Mapping[str, str | int],
        adapter: TypeAdapter[ListPage[ItemT]],
    ) -> ListPage[ItemT]:
        answer = self._call(endpoint, ids, params=params)
        return self._parse(endpoint, answer, adapter)


class ListWalk(Generic[ItemT]):
    """Iterates over every item of a list endpoint, page by page, each id once.

    After the iteration ends, ``total_count`` is the API's count, ``pages`` the number of
    pages read and ``duplicates`` how many repeated ids were dropped. If the number of unique
    items differs from ``totalCount``, or ``totalCount`` changed between pages, the iteration
    raises InconsistentListError at its end, so a consumer that reads to the end knows it
    saw the whole list as it stood.
    """

    def __init__(
        self,
        client: OpsManagerClient,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        adapter: TypeAdapter[ListPage[ItemT]],
        params: Mapping[str, str | int] | None = None,
    ) -> None:
        self._client = client
        self.endpoint = endpoint
        self._ids = ids
        self._adapter = adapter
        self._params = dict(params or {})
        self.total_count: int | None = None
        self.pages = 0
        self.duplicates = 0
        self.seen = 0

    def __iter__(self) -> Iterator[ItemT]:
        per_page = self._client.items_per_page
        seen_ids: set[str] = set()
        page_num = 1
        page_limit: int | None = None
        totals: list[int] = []
        while True:
            params = {**self._params, "pageNum": page_num, "itemsPerPage": per_page}
            page = self._client._get_page(self.endpoint, self._ids, params, self._adapter)
            self.pages += 1
            if page.total_count is None:
                raise MalformedResponseError(
                    "list answer has no totalCount, so its completeness cannot be checked",
                    endpoint=str(self.endpoint),
                )
            self.total_count = page.total_count
            if not totals or totals[-1] != page.total_count:
                totals.append(page.total_count)
            for item in page.results:
                if item.id in seen_ids:
                    self.duplicates += 1
                    continue
                seen_ids.add(item.id)
                self.seen += 1
                yield item
            if len(page.results) < per_page or page_num * per_page >= page.total_count:
                break
            if page_limit is None:
                # Some slack for items created while we walk; beyond it the server is looping.
                page_limit = page.total_count // per_page + 100
            page_num += 1
            if page_num > page_limit:
                raise self._inconsistent(
                    f"still full pages at page {page_num} though totalCount is "
                    f"{page.total_count}; stopped",
                    seen=len(seen_ids),
                )
        # A list that changed while we read it may have shifted an item past us even when
        # the counts agree at the end (one reaped behind us, one skipped ahead), so a
        # changing totalCount alone makes the walk inconsistent.
        if len(seen_ids) != self.total_count or len(totals) > 1:
            changed = (
                f"; totalCount changed during the walk ({' -> '.join(map(str, totals))})"
                if len(totals) > 1
                else ""
            )
            raise self._inconsistent(
                f"saw {len(seen_ids)} unique items but totalCount is {self.total_count} "
                f"({self.pages} pages, {self.duplicates} repeated ids dropped){changed}",
                seen=len(seen_ids),
            )

    def _inconsistent(self, message: str, *, seen: int) -> InconsistentListError:
        return InconsistentListError(
            message,
            endpoint=str(self.endpoint),
            expected=self.total_count or 0,
            seen=seen,
            request=RequestInfo(
                self.endpoint.method, self._client.url_for(self.endpoint, self._ids)
            ),
        )

    def collect(self) -> list[ItemT]:
        """Read the whole list (checked against totalCount) into a list."""
        return list(self)


_SNAPSHOT: TypeAdapter[Snapshot] = TypeAdapter(Snapshot)
_CONFIG_SERVER_SNAPSHOT: TypeAdapter[ConfigServerSnapshot] = TypeAdapter(ConfigServerSnapshot)
_ALERT: TypeAdapter[Alert] = TypeAdapter(Alert)
_AGENT_LINKS: TypeAdapter[AgentLinks] = TypeAdapter(AgentLinks)
_PROJECT: TypeAdapter[models.Project] = TypeAdapter(models.Project)


def _unwrap_envelope(
    name: str, request: RequestInfo, info: ResponseInfo, raw: bytes
) -> tuple[Any, int]:
    """Return (content, real status) of an ``envelope=true`` answer.

    Single results come as ``{"status": N, "content": {...}}``; lists come as the list
    wrapper with a ``status`` field added.
    """
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise MalformedResponseError(
            describe_not_json(raw, info.content_type, exc),
            endpoint=name,
            request=request,
            response=info,
        ) from None
    if not isinstance(body, dict) or not isinstance(body.get("status"), int):
        raise MalformedResponseError(
            "envelope=true answer has no integer 'status' field",
            endpoint=name,
            request=request,
            response=info,
        )
    status = int(body["status"])
    if "content" in body:
        return body["content"], status
    return body, status


def _describe_invalid(answer: _Answer, exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    if errors and errors[0]["type"] == "json_invalid":
        return describe_not_json(
            answer.raw, answer.response.content_type, ValueError(errors[0]["msg"])
        )
    shown = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}" for err in errors[:3]
    )
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"the answer does not have the documented shape: {shown}{more}"
