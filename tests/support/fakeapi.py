"""A fake of the API for unit tests on top of ``responses``: digest auth checked for real,
routes answered by small handler functions, every request recorded."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import responses
from requests import PreparedRequest

from tests.support.digest import UNAUTHORIZED_BODY, UNAUTHORIZED_HEADERS, DigestChecker

BASE_URL = "https://om.test:8443/api/public/v1.0"
BASE_PATH = urlsplit(BASE_URL).path
SERVICE_VERSION = "gitHash=0123abcd; versionString=8.0.0.500"

Answer = tuple[int, dict[str, str], bytes | str]
Handler = Callable[["Request"], Answer]


@dataclass
class Request:
    """What a handler sees: method, path below the base, query, JSON body, regex groups."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    groups: tuple[str, ...] = ()


@dataclass
class Seen:
    """One request as it reached the fake (a retried or re-authenticated call is several)."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    had_authorization: bool
    status: int


@dataclass
class FakeApi:
    """Routes plus a digest checker; ``seen`` lists every request in order."""

    checker: DigestChecker
    routes: list[tuple[str, re.Pattern[str], Handler]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)

    def route(self, method: str, path_regex: str, handler: Handler) -> None:
        """Answer ``method`` on paths (below the base, raw, percent-encoded) matching the regex."""
        self.routes.append((method, re.compile(path_regex + r"\Z"), handler))

    def answer(self, method: str, path: str, body: Any, status: int = 200) -> None:
        """Always answer ``method path`` with this JSON body."""
        self.route(method, re.escape(path), lambda _r: json_answer(body, status))

    def script(self, method: str, path: str, answers: list[Answer]) -> None:
        """Answer ``method path`` with these answers in turn, the last one from then on."""
        queue = list(answers)

        def handler(_r: Request) -> Answer:
            return queue.pop(0) if len(queue) > 1 else queue[0]

        self.route(method, re.escape(path), handler)

    def calls(self, status: int | None = None) -> list[Seen]:
        """Recorded requests, optionally only those answered with ``status``."""
        return [s for s in self.seen if status is None or s.status == status]

    def dispatch(self, prepared: PreparedRequest) -> tuple[int, dict[str, str], bytes | str]:
        """The responses callback: check digest, then route."""
        method = prepared.method or "GET"
        split = urlsplit(prepared.url or "")
        path_url = prepared.path_url
        query = dict(parse_qsl(split.query))
        raw_body = prepared.body
        body = json.loads(raw_body) if raw_body else None
        authorization = prepared.headers.get("Authorization")
        verdict = self.checker.verify(method, path_url, authorization)
        payload: bytes | str
        if verdict != "ok":
            status, headers, payload = (
                401,
                {
                    **UNAUTHORIZED_HEADERS,
                    "WWW-Authenticate": self.checker.challenge(stale=verdict == "stale"),
                },
                UNAUTHORIZED_BODY,
            )
        else:
            status, headers, payload = self._route(method, split.path, query, body)
            headers = {"X-MongoDB-Service-Version": SERVICE_VERSION, **headers}
        self.seen.append(Seen(method, split.path, query, body, authorization is not None, status))
        return status, headers, payload

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Answer:
        below = path[len(BASE_PATH) :]
        for route_method, pattern, handler in self.routes:
            match = pattern.match(below)
            if route_method == method and match:
                return handler(Request(method, below, query, body, match.groups()))
        return json_answer({"detail": f"no route for {method} {below}", "error": 404}, 404)

    def install(self, rsps: responses.RequestsMock) -> None:
        """Send every request to the base URL through this fake."""
        pattern = re.compile(re.escape(BASE_URL) + r"(/.*)?(\?.*)?")
        for method in ("GET", "PATCH", "POST", "PUT", "DELETE"):
            rsps.add_callback(method, pattern, callback=self.dispatch)


def json_answer(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    """A JSON answer as the API sends it."""
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body)


def snapshot(snap_id: str, created: str = "2026-11-01T00:00:00Z", **fields: Any) -> dict[str, Any]:
    """A cluster snapshot resource with the fields the spec's examples carry."""
    return {
        "id": snap_id,
        "groupId": "5e2211c17a3e5a48f5497de3",
        "clusterId": "5e4e593f70dfbf1e2f6e1d30",
        "clusterName": "prod-rs0",
        "complete": True,
        "created": {"date": created, "increment": 1},
        "doNotDelete": False,
        "expires": "2026-12-01T00:00:00Z",
        "links": [{"href": f"{BASE_URL}/snapshots/{snap_id}", "rel": "self"}],
        "parts": [],
        **fields,
    }


def list_page(items: list[dict[str, Any]], total: int, **extra: Any) -> dict[str, Any]:
    """A list wrapper around ``items``."""
    return {
        "results": items,
        "links": [{"href": f"{BASE_URL}/list", "rel": "self"}],
        "totalCount": total,
        **extra,
    }


def paged(items: list[dict[str, Any]]) -> Handler:
    """A handler that pages ``items`` the way the API does (pageNum, itemsPerPage)."""

    def handler(request: Request) -> Answer:
        page_num = int(request.query.get("pageNum", "1"))
        per_page = int(request.query.get("itemsPerPage", "100"))
        start = (page_num - 1) * per_page
        return json_answer(list_page(items[start : start + per_page], len(items)))

    return handler


def shifted(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Handler:
    """A list that changes after its first page is read: page 1 from ``before``, the rest
    from ``after`` (what a snapshot created or reaped mid-walk does to the pages)."""

    def handler(request: Request) -> Answer:
        page_num = int(request.query["pageNum"])
        per_page = int(request.query.get("itemsPerPage", "100"))
        items = before if page_num == 1 else after
        start = (page_num - 1) * per_page
        return json_answer(list_page(items[start : start + per_page], len(items)))

    return handler
