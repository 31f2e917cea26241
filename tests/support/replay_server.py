"""A small real HTTP server (a thread, digest auth, keep-alive) that answers the endpoints
retention calls with the real bodies of tests/fixtures/real, and the real service's
version header: plan, run and doctor replay against what the service sends, not against
our reading of the API document. Ids in paths are not checked: the bodies come from
different deployments, and the point is their shapes."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.digest import UNAUTHORIZED_BODY, UNAUTHORIZED_HEADERS, DigestChecker
from tests.support.wire_server import BASE_PATH, JsonHandler, run_server

FIXTURES = Path(__file__).parent.parent / "fixtures" / "real"
# A value of the form every vendor source shows (goclient's parser, the operator's tests).
VERSION = (
    "gitHash=f7bdac406b7beceb1415fd32c81fc64501b6e031; versionString=4.2.4.56729.20191105T2247Z"
)
_ID = r"[^/?]+"


def real(name: str) -> Any:
    """A real body by file name."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def page(results: list[Any]) -> dict[str, Any]:
    """The real list wrapper (results, totalCount, links) around ``results``."""
    return {"results": results, "totalCount": len(results), "links": []}


def default_routes() -> list[tuple[str, str, Any]]:
    """(method, path regex below the base, body): the real bodies, one per endpoint."""
    rows = [
        real("cluster_get_sharded_k8s.json"),  # a sharded cluster's row, with shardName
        real("cluster_get_shard_member_k8s.json"),  # its shard
        real("cluster_get_replica_set_k8s.json"),  # a replica set
    ]
    snapshots = real("cluster_snapshots_list_goclient.json")
    return [
        ("GET", rf"/groups/{_ID}/agents", real("agents_links_goclient.json")),
        ("GET", rf"/groups/{_ID}/clusters", page(rows)),
        ("GET", rf"/groups/{_ID}/hosts", real("hosts_list_goclient.json")),
        ("GET", rf"/groups/{_ID}/alerts", real("alerts_list_docs.json")),
        ("PATCH", rf"/groups/{_ID}/alerts/{_ID}", real("alert_acknowledge_response_docs.json")),
        ("GET", rf"/groups/{_ID}/clusters/{_ID}/snapshots", snapshots),
        ("GET", rf"/groups/{_ID}/clusters/{_ID}/snapshots/{_ID}", snapshots["results"][0]),
        (
            "PATCH",
            rf"/groups/{_ID}/clusters/{_ID}/snapshots/{_ID}",
            real("cluster_snapshot_patch_response_goclient.json"),
        ),
        ("GET", rf"/groups/{_ID}", real("project_get_goclient.json")),
    ]


@dataclass
class Replay:
    """The server's answers and what it was asked."""

    checker: DigestChecker
    routes: list[tuple[str, str, Any]] = field(default_factory=default_routes)
    seen: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        """The body for a request, or a real-shaped 404."""
        below = path.split("?", 1)[0][len(BASE_PATH) :]
        for want, pattern, body in self.routes:
            if want == method and re.fullmatch(pattern, below):
                return 200, body
        return 404, {
            "detail": f"No resource at {below}.",
            "error": 404,
            "errorCode": "RESOURCE_NOT_FOUND",
            "parameters": [below],
            "reason": "Not Found",
        }


class _Handler(JsonHandler):
    def _handle(self) -> None:
        replay: Replay = self.server.payload
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        verdict = replay.checker.verify(self.command, self.path, self.headers.get("Authorization"))
        if verdict != "ok":
            challenge = replay.checker.challenge(stale=verdict == "stale")
            headers = {**UNAUTHORIZED_HEADERS, "WWW-Authenticate": challenge}
            self._send(401, headers, UNAUTHORIZED_BODY)
            return
        status, body = replay.answer(self.command, self.path)
        with replay.lock:
            replay.seen.append((self.command, self.path, status))
        headers = {"Content-Type": "application/json", "X-MongoDB-Service-Version": VERSION}
        self._send(status, headers, json.dumps(body).encode())


@contextmanager
def serve(replay: Replay) -> Iterator[str]:
    """Run the replay server on a free loopback port; yield its base URL."""
    with run_server(_Handler, replay) as base_url:
        yield base_url
