"""The simulator's request handling: the API contract of spec/ops-manager-api-v1.md, over a
transport-free ``handle(SimRequest) -> SimResponse`` (server.py puts it on a socket): auth,
faults, routing and the handlers. The messages and the reading of a request are in
messages.py, the JSON bodies in bodies.py.

Choices for what the spec leaves "not shown", kept close to the real service:

- Error bodies: ``{"detail": str, "error": status, "errorCode": str, "parameters": [],
  "reason": str}``.
- 404 ``NOT_FOUND``: unknown project, cluster, host, snapshot, alert, or path.
- 404 ``BACKUP_CONFIG_NOT_FOUND``: the snapshot schedule of a cluster without one (the
  service's error-code table; shard and config-server rows have none either).
- 400 ``INVALID_QUERY_PARAMETER``: pageNum < 1, itemsPerPage outside 1..500, a bad
  ``completed``/``status``/``pretty``/``envelope`` value.
- 400 ``INVALID_ATTRIBUTE``: a PATCH body field that is unknown or of the wrong type, and
  doNotDelete true with a timestamp expires (detail: the spec's exact message
  "Cannot modify snapshot because of invalid fields").
- 400 ``SNAPSHOT_EXPIRED``: a PATCH of a snapshot whose expiry has already passed.
- 400 ``INVALID_JSON``: a PATCH body that is not a JSON object.
- 405 ``METHOD_NOT_ALLOWED`` with an ``Allow`` header: e.g. PATCH of a config-server
  snapshot (the API has no such endpoint).
- ``envelope=true``: HTTP 200 for every answer but 401; single results become
  ``{"status": N, "content": ...}``, list bodies get a ``status`` field.
- Lists are newest first (snapshots, alerts) or in creation order (clusters, hosts), and
  their ``links`` carry ``self`` with the paging query, plus ``previous``/``next``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from email.utils import format_datetime
from typing import Any
from urllib.parse import parse_qsl, unquote

from retention.core.timestamps import format_timestamp
from retention.simulator.admin import Counters, handle_admin
from retention.simulator.audit import open_audit_alert
from retention.simulator.bodies import (
    agents_json,
    cluster_json,
    envelope_body,
    error_body,
    group_json,
    host_json,
    page_body,
    self_links,
)
from retention.simulator.digest import DigestAuthority, Verdict
from retention.simulator.faults import FaultInjector
from retention.simulator.messages import (
    ApiFailure,
    Call,
    SimRequest,
    SimResponse,
    allow,
    find,
    flag,
    int_param,
    json_body,
    path_template,
)
from retention.simulator.schedule import schedule_json
from retention.simulator.store import (
    Fleet,
    SimClock,
    SimCluster,
    SimProject,
    SimSnapshot,
    SnapshotRenderer,
    acknowledge,
    apply_snapshot_patch,
    take_due,
)

BASE_PATH = "/api/public/v1.0"
SERVICE_VERSION = "gitHash=4a2b8c1d5e; versionString=8.0.1.500.20260901T0000Z"


class SimulatorApp:
    """The API over a fleet: auth, faults, latency, routing, and the admin surface."""

    def __init__(  # noqa: PLR0913 - the simulator's parts, each made by the server from its SimulatorConfig
        self,
        fleet_factory: Callable[[], Fleet],
        *,
        auth: DigestAuthority,
        clock: SimClock,
        faults: FaultInjector,
        latency_ms: float,
        reap_delay: timedelta,
        version_header: str,
    ) -> None:
        self.fleet_factory = fleet_factory
        self.version_header = version_header
        self.fleet = fleet_factory()
        self.auth = auth
        self.clock = clock
        self.faults = faults
        self.latency_ms = latency_ms
        self.reap_delay = reap_delay
        self.base_url = "http://127.0.0.1" + BASE_PATH
        self.counters = Counters()
        self.patch_log: list[dict[str, Any]] = []
        self.outside_log: list[dict[str, Any]] = []
        self.lock = threading.RLock()

    # --- entry point -------------------------------------------------------------------------

    def handle(self, request: SimRequest) -> SimResponse:
        """Answer one request."""
        path, _, query_text = request.raw_uri.partition("?")
        if path == "/__admin" or path.startswith("/__admin/"):
            return handle_admin(self, request, path, query_text)
        delay = self.latency_ms / 1000.0
        with self.lock:
            self.counters.requests += 1
        verdict = self.auth.verify(
            request.method,
            request.raw_uri,
            request.headers.get("Authorization"),
            stale_fault=lambda: self.faults.draw("stale"),
        )
        if verdict is not Verdict.OK:
            return self._unauthorized(stale=verdict is Verdict.STALE, delay=delay)
        fault = self.faults.request_fault()
        if fault == "reset":
            return SimResponse(0, [], b"", reset=True, delay=delay)
        if fault == "slow":
            delay += self.faults.spec.slow_ms / 1000.0
        query = dict(parse_qsl(query_text, keep_blank_values=True))
        envelope = pretty = False
        try:
            envelope = flag(query, "envelope")
            pretty = flag(query, "pretty")
            status, body, extra = 200, self._answer(request, path, query, fault), []
        except ApiFailure as failure:
            status, extra = failure.status, failure.headers
            body = error_body(failure)
        if envelope:
            body = envelope_body(body, status)
            status = 200
        if pretty:
            body = json.dumps(json.loads(body), indent=2)
        with self.lock:
            self.counters.by_status[status] += 1
        return SimResponse(status, self._headers() + extra, body.encode(), delay=delay)

    def _answer(
        self, request: SimRequest, path: str, query: dict[str, str], fault: str | None
    ) -> str:
        if fault in ("503", "429"):
            retry_after = [("Retry-After", str(self.faults.spec.retry_after))]
            headers = retry_after if fault == "429" else []
            raise ApiFailure(int(fault), "SIMULATED_FAULT", f"simulated {fault}", headers)
        if not path.startswith(BASE_PATH + "/"):
            raise ApiFailure(404, "NOT_FOUND", f"no resource at {path}")
        below = path[len(BASE_PATH) :]
        segments = [unquote(s) for s in below.strip("/").split("/")]
        return self._route(Call(request, below, segments, query, self.clock.now()))

    def _headers(self) -> list[tuple[str, str]]:
        return [
            ("Vary", "Accept-Encoding"),
            ("Content-Type", "application/json"),
            ("Strict-Transport-Security", "max-age=300"),
            ("Date", format_datetime(self.clock.now(), usegmt=True)),
            ("Connection", "keep-alive"),
            (self.version_header, SERVICE_VERSION),
        ]

    def _unauthorized(self, *, stale: bool, delay: float) -> SimResponse:
        failure = ApiFailure(401, "NOT_AUTHORIZED", "You are not authorized for this resource.")
        with self.lock:
            self.counters.challenges += 1
            self.counters.by_status[401] += 1
        headers = [
            ("Content-Type", "application/json;charset=ISO-8859-1"),
            ("WWW-Authenticate", self.auth.challenge(stale=stale)),
            ("Date", format_datetime(self.clock.now(), usegmt=True)),
            ("Connection", "keep-alive"),
        ]
        return SimResponse(401, headers, error_body(failure).encode(), delay=delay)

    # --- routing -------------------------------------------------------------------------------

    def _route(self, call: Call) -> str:
        seg, method = call.segments, call.request.method
        if len(seg) < 2 or seg[0] != "groups" or not seg[1]:
            raise ApiFailure(404, "NOT_FOUND", f"no resource at {call.path}")
        template = path_template(seg)
        route = self._routes.get(template)
        if route is None:
            raise ApiFailure(404, "NOT_FOUND", f"no resource at {call.path}")
        methods, handler = route
        with self.lock:
            self.counters.by_endpoint[f"{method} {template}"] += 1
            project = find(self.fleet.projects, seg[1], "project")
            allow(method, *methods)
            return handler(call, project)

    @property
    def _routes(self) -> dict[str, tuple[tuple[str, ...], Callable[[Call, SimProject], str]]]:
        """The spec's endpoints (and the two discovery lists) by path template."""
        groups = "/groups/{PROJECT-ID}"
        return {
            groups: (("GET",), self._group),
            f"{groups}/clusters": (("GET",), self._clusters),
            f"{groups}/clusters/{{CLUSTER-ID}}/snapshots": (("GET",), self._cluster_snapshots),
            f"{groups}/clusters/{{CLUSTER-ID}}/snapshots/{{SNAPSHOT-ID}}": (
                ("GET", "PATCH"),
                self._cluster_snapshot,
            ),
            f"{groups}/hosts": (("GET",), self._hosts),
            f"{groups}/hosts/{{HOST-ID}}/snapshots": (("GET",), self._host_snapshots),
            f"{groups}/hosts/{{HOST-ID}}/snapshots/{{SNAPSHOT-ID}}": (
                ("GET",),
                self._host_snapshot,
            ),
            f"{groups}/backupConfigs/{{CLUSTER-ID}}/snapshotSchedule": (("GET",), self._schedule),
            f"{groups}/alerts": (("GET",), self._alerts),
            f"{groups}/alerts/{{ALERT-ID}}": (("GET", "PATCH"), self._alert),
            f"{groups}/agents": (("GET",), self._agents),
        }

    def _cluster(self, project: SimProject, cluster_id: str, now: datetime) -> SimCluster:
        cluster = find(project.clusters, cluster_id, "cluster")
        take_due(cluster, now)  # what its schedule took while the clock moved, then the reaper
        cluster.reap(now, self.reap_delay)
        return cluster

    def take_snapshots(self) -> int:
        """Take every snapshot the fleet's schedules are due (the admin clock calls this, so
        counts are right at once); requests take a cluster's own when they look at it."""
        now = self.clock.now()
        with self.lock:
            return sum(take_due(cluster, now) for cluster in self.fleet.clusters())

    def _schedule(self, call: Call, project: SimProject) -> str:
        cluster = self._cluster(project, call.segments[3], call.now)
        if cluster.schedule is None:
            raise ApiFailure(
                404,
                "BACKUP_CONFIG_NOT_FOUND",
                f"No backup configuration exists for cluster {cluster.id} in group {project.id}.",
            )
        links = self_links(
            self.base_url, "groups", project.id, "backupConfigs", cluster.id, "snapshotSchedule"
        )
        return schedule_json(cluster.schedule, project.id, cluster.id, links)

    def _clusters(self, call: Call, project: SimProject) -> str:
        clusters = list(project.clusters.values())
        return self._page(call, clusters, lambda c: cluster_json(c, self.base_url))

    def _hosts(self, call: Call, project: SimProject) -> str:
        hosts = list(project.hosts.values())
        return self._page(call, hosts, lambda h: host_json(h, self.base_url))

    def _host_snapshots(self, call: Call, project: SimProject) -> str:
        host = find(project.hosts, call.segments[3], "host")
        renderer = SnapshotRenderer(self.base_url, project.id, host)
        return self._page(call, host.snapshots, renderer.render)

    def _host_snapshot(self, call: Call, project: SimProject) -> str:
        host = find(project.hosts, call.segments[3], "host")
        snapshot = find(host.index, call.segments[5], "snapshot")
        return SnapshotRenderer(self.base_url, project.id, host).render(snapshot)

    def _cluster_snapshots(self, call: Call, project: SimProject) -> str:
        cluster = self._cluster(project, call.segments[3], call.now)
        completed = call.query.get("completed", "true")
        if completed not in ("true", "false", "all"):
            raise ApiFailure(
                400, "INVALID_QUERY_PARAMETER", f"completed={completed}: use true, false or all"
            )
        if int(call.query.get("pageNum", "1") or 1) >= 2 and self.faults.draw("drift"):
            self._drift(cluster, call.now)
        items = cluster.snapshots
        if completed != "all":
            items = [s for s in items if s.complete == (completed == "true")]
        renderer = SnapshotRenderer(self.base_url, project.id, cluster)
        return self._page(call, items, renderer.render)

    def _cluster_snapshot(self, call: Call, project: SimProject) -> str:
        cluster = self._cluster(project, call.segments[3], call.now)
        snapshot = find(cluster.index, call.segments[5], "snapshot")
        if call.request.method == "PATCH":
            body = json_body(call.request.body)
            before = snapshot.state()
            entry: dict[str, Any] = {
                "at": format_timestamp(call.now),
                "kind": "snapshot",
                "projectId": project.id,
                "clusterId": cluster.id,
                "snapshotId": snapshot.id,
                "body": body,
                "before": before,
                "complete": snapshot.complete,
            }
            try:
                apply_snapshot_patch(snapshot, body, call.now)
            except ApiFailure as refused:
                self.patch_log.append({**entry, "status": refused.status, "after": before})
                raise
            self.patch_log.append({**entry, "status": 200, "after": snapshot.state()})
            open_audit_alert(project, cluster, "expiry", now=call.now, base_url=self.base_url)
        return SnapshotRenderer(self.base_url, project.id, cluster).render(snapshot)

    def _drift(self, cluster: SimCluster, now: datetime) -> None:
        """Create a snapshot at the front, or reap one, between two pages of a walk."""
        if self.faults.choice(2) == 0 or len(cluster.snapshots) < 2:
            new_id = f"{int(now.timestamp()):08x}{self.faults.choice(2**64):016x}"
            cluster.add(
                SimSnapshot(new_id, now.replace(microsecond=0), expires=now + timedelta(days=2))
            )
        else:
            victims = [s for s in cluster.snapshots[1:] if not s.do_not_delete]
            if victims:
                cluster.remove(victims[self.faults.choice(len(victims))].id)

    def _alerts(self, call: Call, project: SimProject) -> str:
        status = call.query.get("status")
        if status is not None and status not in ("TRACKING", "OPEN", "CLOSED"):
            raise ApiFailure(
                400, "INVALID_QUERY_PARAMETER", f"status={status}: use TRACKING, OPEN or CLOSED"
            )
        alerts = sorted(project.alerts.values(), key=lambda a: a.get("created", ""), reverse=True)
        if status:
            alerts = [a for a in alerts if a.get("status") == status]
        return self._page(call, alerts, json.dumps)

    def _alert(self, call: Call, project: SimProject) -> str:
        alert_id = call.segments[3]
        alert = find(project.alerts, alert_id, "alert")
        if call.request.method == "PATCH":
            body = json_body(call.request.body)
            acknowledge(alert, body, self.auth.public_key)
            alert["updated"] = format_timestamp(call.now)
            self.patch_log.append(
                {
                    "at": format_timestamp(call.now),
                    "kind": "alert",
                    "projectId": project.id,
                    "alertId": alert_id,
                    "body": body,
                    "status": 200,
                }
            )
        return json.dumps(alert)

    def _group(self, call: Call, project: SimProject) -> str:
        del call
        return group_json(project, self.base_url)

    def _agents(self, call: Call, project: SimProject) -> str:
        del call
        return agents_json(project, self.base_url)

    def _page(self, call: Call, items: list[Any], render: Callable[[Any], str] = json.dumps) -> str:
        """One page of a list, noting the largest itemsPerPage asked for."""
        page_num = int_param(call.query, "pageNum", 1)
        per_page = int_param(call.query, "itemsPerPage", 100)
        self.counters.max_items_per_page = max(self.counters.max_items_per_page, per_page)
        return page_body(self.base_url, call, items, render, page_num=page_num, per_page=per_page)
