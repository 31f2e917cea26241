"""A typed client for the nine endpoints of the API contract, the two discovery lists and the
snapshot schedule.

    client = OpsManagerClient(base_url, Credentials("pub", SecretStr("priv")))
    for snap in client.list_snapshots(project_id, cluster_id, completed="all"):
        ...

Lists are ``ListWalk`` iterators (listwalk.py): they page at itemsPerPage=500, drop repeated
ids (a page boundary can shift while we read) and, once exhausted, check the unique count
against the API's ``totalCount``, raising InconsistentListError when they differ. Every
failure is an ``ApiError`` that names the endpoint (see retention.errors); endpoints.py
holds the operations, answers.py the reading of what comes back.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import requests
from pydantic import TypeAdapter
from urllib3.exceptions import InsecureRequestWarning, ReadTimeoutError
from urllib3.exceptions import SSLError as Urllib3SSLError

from retention.api import models
from retention.api.answers import Answer, Decoder, check_answer, parse_answer, service_version
from retention.api.endpoints import (
    GET_AGENT_LINKS,
    GET_ALERT,
    GET_CONFIG_SERVER_SNAPSHOT,
    GET_PROJECT,
    GET_SNAPSHOT,
    GET_SNAPSHOT_SCHEDULE,
    LIST_ALERTS,
    LIST_CLUSTERS,
    LIST_CONFIG_SERVER_SNAPSHOTS,
    LIST_HOSTS,
    LIST_SNAPSHOTS,
    PATCH_ALERT,
    PATCH_SNAPSHOT,
    Endpoint,
    build_path,
    means_no_schedule,
)
from retention.api.failures import describe_tls_failure, first_line, host_port, urllib3_cause
from retention.api.listwalk import ItemT, ListWalk, Page
from retention.api.models import (
    AgentLinks,
    Alert,
    AlertAcknowledgement,
    CompletedFilter,
    ConfigServerSnapshot,
    Snapshot,
    SnapshotSchedule,
)
from retention.api.retrying import (
    ApiStats,
    RetryNotes,
    RetryPolicy,
    calling,
    connection_failure,
    tries_made,
)
from retention.api.transport import DigestAuth, build_session, is_stale_challenge, rate_limiter
from retention.api.values import BASE_URL_SETTING, Credentials, Timeouts, TLSConfig
from retention.api.walked import WALK_DECODER, WalkedSnapshot
from retention.core.snapshot import SnapshotPatch
from retention.core.wording import counted
from retention.errors import (
    ApiError,
    ConnectError,
    RefusedRequestError,
    RequestInfo,
    RequestTimeoutError,
    TLSError,
)
from retention.ops.clock import Clock
from retention.ops.stopping import Stop

log = logging.getLogger("retention.api")

T = TypeVar("T")

MAX_ITEMS_PER_PAGE = 500
STALE_RETRIES = 3


class OpsManagerClient:
    """The API client: one requests.Session shared by all threads, digest auth per thread.

    ``interactive``: a person waits at a terminal, so a refused connection before the
    service's first answer fails after a short try (retention.api.retrying.RetryNotes).
    """

    def __init__(  # noqa: PLR0913 - the client's settings, each a value object or flag with its default, as httpx.Client takes them
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
        clock: Clock,
        stop: Stop | None = None,
        interactive: bool = False,
        base_url_setting: str = BASE_URL_SETTING,
    ) -> None:
        if not 1 <= items_per_page <= MAX_ITEMS_PER_PAGE:
            raise ValueError(f"items_per_page must be 1..{MAX_ITEMS_PER_PAGE}")
        self.base_url = base_url.rstrip("/")
        # Where base_url was set, as the errors that blame it say (values.BASE_URL_SETTING).
        self.base_url_setting = base_url_setting
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self.tls = tls or TLSConfig()
        self.envelope = envelope
        self.items_per_page = items_per_page
        self.service_version: str | None = None
        # The server's Date header and our clock when it arrived: doctor's clock-skew check.
        self.server_date: tuple[datetime, datetime] | None = None
        self._clock = clock
        self._limiter = rate_limiter(max_requests_per_second, stop)
        self._config_server_warned = False
        self._lock = threading.Lock()
        if not self.tls.verify:
            log.warning("TLS verification is off (verify_tls: false): answers can be forged")
            # Said once, above: not again by urllib3 for every request, as raw text.
            warnings.filterwarnings("ignore", category=InsecureRequestWarning)
        self.stats = ApiStats()
        self.notes = RetryNotes(interactive=interactive)
        # Checked before every request: after a stop (SIGINT, SIGTERM) none starts.
        self.stop = stop
        self._session = build_session(
            credentials,
            retry=self.retry,
            tls=self.tls,
            pool_size=pool_size,
            stats=self.stats,
            stop=stop,
            notes=self.notes,
        )
        # requests reads the proxy variables (HTTPS_PROXY, NO_PROXY...) and the CA-bundle
        # ones from the environment on every request: half a millisecond a page, a tenth of
        # a walk's CPU (benchmarks/fleet.py). Every request goes to one host, so they are
        # read once here, as requests would read them, and the session stops reading them.
        self._environment = self._session.merge_environment_settings(
            self.base_url, {}, None, self.tls.requests_verify(), None
        )
        self._session.trust_env = False

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

    def list_snapshot_states(self, project_id: str, cluster_id: str) -> ListWalk[WalkedSnapshot]:
        """Every snapshot of a cluster (``completed=all``), read into the lean structs a plan
        needs (retention.api.walked): the same requests as ``list_snapshots``."""
        return ListWalk(
            self, LIST_SNAPSHOTS, (project_id, cluster_id), WALK_DECODER, {"completed": "all"}
        )

    def get_snapshot(self, project_id: str, cluster_id: str, snapshot_id: str) -> Snapshot:
        """One cluster snapshot."""
        return self._call(GET_SNAPSHOT, (project_id, cluster_id, snapshot_id), _SNAPSHOT)

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
        ids = (project_id, cluster_id, snapshot_id)
        return self._call(PATCH_SNAPSHOT, ids, _SNAPSHOT, body=body)

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
    ) -> ListWalk[WalkedSnapshot]:
        """Every snapshot of a legacy config server, in the lean structs a plan needs."""
        self._warn_config_server_deprecated()
        return ListWalk(self, LIST_CONFIG_SERVER_SNAPSHOTS, (project_id, host_id), WALK_DECODER)

    def get_config_server_snapshot(
        self, project_id: str, host_id: str, snapshot_id: str
    ) -> ConfigServerSnapshot:
        """One legacy config-server snapshot (deprecated endpoint)."""
        self._warn_config_server_deprecated()
        ids = (project_id, host_id, snapshot_id)
        return self._call(GET_CONFIG_SERVER_SNAPSHOT, ids, _CONFIG_SERVER_SNAPSHOT)

    def _warn_config_server_deprecated(self) -> None:
        # Nothing to act on, so no warning: a plan with config servers says it once, in
        # its notices and the report's config-server section (retention.plan.planner).
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
        return self._call(GET_ALERT, (project_id, alert_id), _ALERT)

    def acknowledge_alert(
        self, project_id: str, alert_id: str, until: datetime, comment: str | None = None
    ) -> Alert:
        """Acknowledge an alert until ``until`` (sent as UTC), with an optional comment."""
        ack = AlertAcknowledgement(acknowledged_until=until, acknowledgement_comment=comment)
        return self._call(PATCH_ALERT, (project_id, alert_id), _ALERT, body=ack.to_api())

    def unacknowledge_alert(
        self, project_id: str, alert_id: str, comment: str | None = None
    ) -> Alert:
        """Remove an alert's acknowledgement (a PATCH without acknowledgedUntil)."""
        ack = AlertAcknowledgement(acknowledgement_comment=comment)
        return self._call(PATCH_ALERT, (project_id, alert_id), _ALERT, body=ack.to_api())

    # --- agents (endpoint 9) and discovery --------------------------------------------------

    def get_agent_links(self, project_id: str) -> AgentLinks:
        """Links to the project's monitoring, backup and automation agent resources."""
        return self._call(GET_AGENT_LINKS, (project_id,), _AGENT_LINKS)

    def get_project(self, project_id: str) -> models.Project:
        """The project, for its name (reports name projects, not only their ids)."""
        return self._call(GET_PROJECT, (project_id,), _PROJECT)

    def list_clusters(self, project_id: str) -> ListWalk[models.Cluster]:
        """The project's clusters (replica sets, sharded clusters and their shards)."""
        return ListWalk(self, LIST_CLUSTERS, (project_id,), models.CLUSTER_PAGE)

    def list_hosts(self, project_id: str) -> ListWalk[models.Host]:
        """The project's hosts; legacy mirrored config servers have typeName SHARD_CONFIG."""
        return ListWalk(self, LIST_HOSTS, (project_id,), models.HOST_PAGE)

    def get_snapshot_schedule(self, project_id: str, cluster_id: str) -> SnapshotSchedule | None:
        """The cluster's snapshot schedule; None when the service says it has none (backup
        not configured, or the cluster not monitored: endpoints.means_no_schedule)."""
        try:
            ids = (project_id, cluster_id)
            return self._call(GET_SNAPSHOT_SCHEDULE, ids, models.SNAPSHOT_SCHEDULE)
        except ApiError as exc:
            if means_no_schedule(exc.status, str(exc)):
                return None
            raise

    # --- the request core -------------------------------------------------------------------

    def url_for(self, endpoint: Endpoint, ids: tuple[str, ...]) -> str:
        """The absolute URL of an endpoint for these ids (percent-encoded)."""
        return self.base_url + build_path(endpoint, ids)

    def _call(
        self,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        adapter: Decoder[T],
        *,
        params: Mapping[str, str | int] | None = None,
        body: dict[str, Any] | None = None,
    ) -> T:
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
            if self.stop is not None:
                self.stop.check(name)
            self.stats.count_request()
            try:
                with calling(name):
                    response = self._session.request(
                        endpoint.method,
                        url,
                        params=query,
                        json=body,
                        timeout=self.timeouts.as_requests(),
                        # Per request, not the session's: requests lets REQUESTS_CA_BUNDLE
                        # or CURL_CA_BUNDLE (set in many images) override a session's
                        # verify, so api.ca_bundle was silently ignored wherever one of
                        # them was set. An explicit bundle is kept by the merge above.
                        verify=self._environment["verify"],
                        proxies=self._environment["proxies"],
                        cert=self._environment["cert"],
                        stream=True,
                    )
                    # One read of the whole body: Response.content reads 10 kB at a time,
                    # which cost a sixth of the client's CPU on a 300-snapshot page.
                    raw = b"".join(response.iter_content(chunk_size=None))
            except requests.exceptions.RequestException as exc:
                raise self._transport_error(exc, name, request) from None
            self.notes.answer()
            if not is_stale_challenge(response) or attempt == STALE_RETRIES:
                break
            # The key is right but the nonce went stale twice in one request (a retry reused
            # it): start the digest handshake over rather than report wrong credentials.
            log.info("%s: nonce stale again; answering a fresh challenge", name)
            auth = self._session.auth
            if isinstance(auth, DigestAuth):
                auth.forget_nonce()
        return parse_answer(endpoint, self._check(endpoint, request, response, raw), adapter)

    def _transport_error(
        self, exc: requests.exceptions.RequestException, name: str, request: RequestInfo
    ) -> ApiError:
        """Name what went wrong on the wire; requests wraps a spent retry of a read timeout
        in ConnectionError, so the urllib3 cause decides, not the requests class."""
        cause = urllib3_cause(exc)
        if isinstance(exc, requests.exceptions.SSLError) or isinstance(cause, Urllib3SSLError):
            failure = describe_tls_failure(exc, self.base_url, self.tls, self.base_url_setting)
            return TLSError(
                failure.diagnosis, remedy=failure.remedy, endpoint=name, request=request
            )
        tries = counted(tries_made(), "try")
        if isinstance(exc, requests.exceptions.ReadTimeout) or isinstance(cause, ReadTimeoutError):
            return RequestTimeoutError(
                f"no answer within {self.timeouts.read:g}s after {tries}",
                endpoint=name,
                request=request,
            )
        described = connection_failure(cause, host_port(self.base_url)) or first_line(exc)
        # Nothing has answered yet: the URL itself is the likeliest mistake.
        check = f"check {self.base_url_setting}" if not self.notes.answered else None
        return ConnectError(
            f"cannot reach the API at {self.base_url}: {described}, after {tries}",
            remedy=check,
            endpoint=name,
            request=request,
        )

    def _check(
        self,
        endpoint: Endpoint,
        request: RequestInfo,
        response: requests.Response,
        raw: bytes,
    ) -> Answer:
        # Noted before the status is checked: an error answer still says what served it.
        version = service_version(response.headers)
        if version:
            self.service_version = version
        self._note_date(response.headers.get("Date"))
        return check_answer(endpoint, request, response, raw, version, envelope=self.envelope)

    def _note_date(self, header: str | None) -> None:
        if not header:
            return
        try:
            sent = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return
        if sent.tzinfo is not None:
            self.server_date = (sent.astimezone(UTC), self._clock())

    def get_page(
        self,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        params: Mapping[str, str | int],
        adapter: Decoder[Page[ItemT]],
    ) -> Page[ItemT]:
        """One page of a list endpoint (ListWalk reads the pages in turn)."""
        return self._call(endpoint, ids, adapter, params=params)


_SNAPSHOT: TypeAdapter[Snapshot] = TypeAdapter(Snapshot)
_CONFIG_SERVER_SNAPSHOT: TypeAdapter[ConfigServerSnapshot] = TypeAdapter(ConfigServerSnapshot)
_ALERT: TypeAdapter[Alert] = TypeAdapter(Alert)
_AGENT_LINKS: TypeAdapter[AgentLinks] = TypeAdapter(AgentLinks)
_PROJECT: TypeAdapter[models.Project] = TypeAdapter(models.Project)
