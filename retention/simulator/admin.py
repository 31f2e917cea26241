"""The simulator's admin surface for tests and benchmarks, outside the API base path and
without authentication (the simulator listens on loopback by default):

    GET  /__admin/counters       requests by endpoint and status, 401 challenges, max
                                 itemsPerPage, faults injected, snapshots in the fleet
    GET  /__admin/patches        the log of PATCH bodies with each snapshot's state before/after
    GET  /__admin/fleet          projects, clusters and hosts with their ids and snapshot counts
    GET  /__admin/clock          {"now": ..., "frozen": bool}
    POST /__admin/clock          {"now": "2026-11-21T00:00:00Z", "frozen": true}, {"advance": 60};
                                 answers the clock and how many snapshots schedules took
    POST /__admin/reset          rebuild the fleet, clear counters and the PATCH log
    POST /__admin/faults         {"spec": "503=0.1,reset=0.02"} (empty spec: no faults)
    POST /__admin/nonces/expire  make every digest nonce issued so far stale
    POST /__admin/outside        a change made outside retention, "as someone else", with
                                 the audit alert it opens (outside.py has the bodies)
    GET  /__admin/outside        the log of those changes
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from retention.core.timestamps import format_timestamp, parse_timestamp
from retention.simulator.digest import DigestAuthority
from retention.simulator.faults import FaultInjector, FaultSpec, FaultSpecError
from retention.simulator.messages import SimRequest, SimResponse
from retention.simulator.outside import Where, make_outside_change
from retention.simulator.store import Fleet, SimClock


@dataclass
class Counters:
    """What the simulator saw, for tests and benchmarks."""

    by_endpoint: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    challenges: int = 0
    max_items_per_page: int = 0
    requests: int = 0

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return {
            "requests": self.requests,
            "byEndpoint": dict(self.by_endpoint),
            "byStatus": {str(k): v for k, v in self.by_status.items()},
            "challenges": self.challenges,
            "maxItemsPerPage": self.max_items_per_page,
        }


class SimulatorApp(Protocol):
    """What the admin surface reads and resets of the simulator (app.SimulatorApp)."""

    fleet: Fleet
    fleet_factory: Callable[[], Fleet]
    counters: Counters
    patch_log: list[dict[str, Any]]
    outside_log: list[dict[str, Any]]
    faults: FaultInjector
    auth: DigestAuthority
    clock: SimClock
    lock: threading.RLock
    reap_delay: timedelta
    base_url: str

    def take_snapshots(self) -> int:
        """Let the snapshot schedules catch up with the clock; how many were taken."""


class AdminError(Exception):
    """A bad admin request; answered with 400."""


def handle_admin(app: SimulatorApp, request: SimRequest, path: str, query: str) -> SimResponse:
    """Answer an admin request."""
    del query
    action = _ACTIONS.get((request.method, path.rstrip("/")))
    try:
        payload = _payload(request.body)
        if action is None:
            status, body = 404, {"error": f"no admin resource {request.method} {path}"}
        else:
            status, body = 200, action(app, payload)
    except (AdminError, ValueError, KeyError) as exc:
        status, body = 400, {"error": str(exc)}
    return SimResponse(status, [("Content-Type", "application/json")], json.dumps(body).encode())


def _payload(raw: bytes) -> dict[str, Any]:
    payload = json.loads(raw) if raw else {}
    if not isinstance(payload, dict):
        raise AdminError("the body must be a JSON object")
    return payload


def _counters(app: SimulatorApp, _payload: dict[str, Any]) -> dict[str, Any]:
    app.take_snapshots()
    with app.lock:
        return {
            **app.counters.as_json(),
            "faultsInjected": dict(app.faults.injected),
            "snapshots": app.fleet.snapshot_count(),
            "patches": len(app.patch_log),
        }


def _patches(app: SimulatorApp, _payload: dict[str, Any]) -> dict[str, Any]:
    with app.lock:
        return {"patches": list(app.patch_log)}


def _fleet(app: SimulatorApp, _payload: dict[str, Any]) -> dict[str, Any]:
    app.take_snapshots()
    with app.lock:
        return fleet_summary(app)


def _get_clock(app: SimulatorApp, _payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """The simulator clock as JSON."""
    return {"now": format_timestamp(app.clock.now()), "frozen": app.clock.frozen}


def _set_clock(app: SimulatorApp, payload: dict[str, Any]) -> dict[str, Any]:
    if "advance" in payload:
        app.clock.advance(float(payload["advance"]))
    elif "now" in payload:
        app.clock.set(parse_timestamp(str(payload["now"])), frozen=bool(payload.get("frozen")))
    else:
        raise AdminError('clock: send {"now": timestamp, "frozen": bool} or {"advance": seconds}')
    return {**_get_clock(app), "taken": app.take_snapshots()}


def _reset(app: SimulatorApp, _payload: dict[str, Any]) -> dict[str, Any]:
    fleet = app.fleet_factory()
    with app.lock:
        app.fleet = fleet
        app.counters = Counters()
        app.patch_log = []
        app.outside_log = []
        app.faults.injected = Counter()
    return {"reset": True, "snapshots": fleet.snapshot_count()}


def _faults(app: SimulatorApp, payload: dict[str, Any]) -> dict[str, Any]:
    try:
        spec = FaultSpec.parse(str(payload.get("spec", "")))
    except FaultSpecError as exc:
        raise AdminError(str(exc)) from None
    app.faults = FaultInjector(spec, seed=int(payload.get("seed", 0)))
    return {"faults": str(spec)}


def _make_outside_change(app: SimulatorApp, payload: dict[str, Any]) -> dict[str, Any]:
    where = Where(app.clock.now(), app.reap_delay, app.base_url)
    with app.lock:
        entry = make_outside_change(app.fleet, payload, where)
        app.outside_log.append(entry)
    return entry


def _outside_changes(app: SimulatorApp, _payload: dict[str, Any]) -> dict[str, Any]:
    with app.lock:
        return {"outside": list(app.outside_log)}


def _expire_nonces(app: SimulatorApp, _payload: dict[str, Any]) -> dict[str, Any]:
    app.auth.expire_nonces()
    return {"expired": True}


_ACTIONS: dict[tuple[str, str], Callable[[SimulatorApp, dict[str, Any]], dict[str, Any]]] = {
    ("GET", "/__admin/counters"): _counters,
    ("GET", "/__admin/patches"): _patches,
    ("GET", "/__admin/fleet"): _fleet,
    ("GET", "/__admin/clock"): _get_clock,
    ("POST", "/__admin/clock"): _set_clock,
    ("POST", "/__admin/reset"): _reset,
    ("POST", "/__admin/faults"): _faults,
    ("POST", "/__admin/nonces/expire"): _expire_nonces,
    ("POST", "/__admin/outside"): _make_outside_change,
    ("GET", "/__admin/outside"): _outside_changes,
}


def fleet_summary(app: SimulatorApp) -> dict[str, Any]:
    """Ids, names and snapshot counts of everything in the fleet."""
    return {
        "projects": [
            {
                "id": project.id,
                "name": project.name,
                "clusters": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "typeName": c.type_name,
                        "shardName": c.shard_name,
                        "snapshots": len(c.snapshots),
                    }
                    for c in project.clusters.values()
                ],
                "hosts": [
                    {
                        "id": h.id,
                        "hostname": h.hostname,
                        "typeName": h.type_name,
                        "snapshots": len(h.snapshots),
                    }
                    for h in project.hosts.values()
                ],
                "alerts": len(project.alerts),
            }
            for project in app.fleet.projects.values()
        ]
    }
