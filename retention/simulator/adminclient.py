"""A client of a running simulator's admin surface, over HTTP as any client of it: what
``retention simulator outside`` uses to make a change "as someone else" in a simulator
served elsewhere (``retention simulator serve``). It lives with the simulator, which stands
apart from the product: retention.api speaks only the API.

    admin = AdminClient("http://127.0.0.1:8080/api/public/v1.0")
    target = find_deployment(admin.fleet(), "prod-orders")
    admin.outside({"action": "delete", "clusterId": target.id, "snapshotId": "..."})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests

# Names said when a name matches nothing; the fleet summary has them all.
NAMES_LISTED = 8


class AdminClientError(Exception):
    """The admin surface could not be asked (``unreachable``: nothing answered there), or
    refused what it was asked, with its message."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass(frozen=True)
class Deployment:
    """A cluster or legacy config server of the simulated fleet, as ``--cluster`` names it."""

    id: str
    name: str
    kind: str  # "cluster" or "config server"
    project_id: str


def admin_root(url: str) -> str:
    """The admin surface of the simulator at ``url``: its base URL as `simulator serve`
    prints it, its admin URL, or only its scheme, host and port."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AdminClientError(f"{url!r} is no http:// or https:// URL")
    return f"{parts.scheme}://{parts.netloc}/__admin"


class AdminClient:
    """GET and POST to one simulator's admin surface; every answer is JSON."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.root = admin_root(url)
        self.timeout = timeout
        self.session = requests.Session()

    def fleet(self) -> dict[str, Any]:
        """Projects, clusters and hosts with their ids and snapshot counts."""
        return self._call("GET", "fleet")

    def outside(self, body: dict[str, Any]) -> dict[str, Any]:
        """Make a change "as someone else"; what the simulator logged of it."""
        return self._call("POST", "outside", body)

    def close(self) -> None:
        """Close the connections."""
        self.session.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        url = f"{self.root}/{path}"
        try:
            answer = self.session.request(method, url, json=body, timeout=self.timeout)
        except requests.Timeout:
            raise AdminClientError(
                f"no answer from {url} within {self.timeout:g} s", unreachable=True
            ) from None
        except requests.RequestException as exc:
            raise AdminClientError(
                f"nothing answers at {url} ({type(exc).__name__}); is "
                "`retention simulator serve` running at that address?",
                unreachable=True,
            ) from None
        try:
            document = answer.json()
        except ValueError:
            document = None
        if answer.status_code == 400 and isinstance(document, dict) and "error" in document:
            raise AdminClientError(str(document["error"]))
        if answer.status_code != 200 or not isinstance(document, dict):
            raise AdminClientError(
                f"{method} {url} answered HTTP {answer.status_code}, not as a simulator's "
                "admin surface does; give the address `retention simulator serve` printed"
            )
        return document


def find_deployment(fleet: dict[str, Any], name_or_id: str) -> Deployment:
    """The cluster or legacy config server ``name_or_id`` names in a fleet summary (GET
    /__admin/fleet): by id, or by a name that only one has. LookupError says why not."""
    found = deployments(fleet)
    by_id = [d for d in found if d.id == name_or_id]
    if by_id:
        return by_id[0]
    named = [d for d in found if d.name == name_or_id]
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(f"{d.id} (project {d.project_id})" for d in named)
        raise LookupError(f"{len(named)} clusters have that name: {ids}; give the id")
    names = sorted({d.name for d in found})
    more = f" and {len(names) - NAMES_LISTED} more" if len(names) > NAMES_LISTED else ""
    listed = ", ".join(names[:NAMES_LISTED]) + more
    raise LookupError(f"no cluster or config server has that name or id (there are: {listed})")


def deployments(fleet: dict[str, Any]) -> list[Deployment]:
    """Every cluster (not a shard's or a config server's row of a sharded cluster) and every
    legacy config server of a fleet summary."""
    found: list[Deployment] = []
    for project in fleet.get("projects", []):
        for row in project.get("clusters", []):
            if row.get("shardName") is None and row.get("typeName") != "CONFIG_SERVER_REPLICA_SET":
                found.append(Deployment(row["id"], row["name"], "cluster", project["id"]))
        for host in project.get("hosts", []):
            if host.get("typeName") == "SHARD_CONFIG":
                name = host.get("hostname") or host["id"]
                found.append(Deployment(host["id"], name, "config server", project["id"]))
    return found
