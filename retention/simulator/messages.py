"""The simulator's messages: a request as the transport read it, the answer to send back,
the API's error answer as an exception a handler raises, and the reading of what a routed
request asks for (path template, query flags and numbers, JSON body, the resource it names),
each failing as the API's 400, 404 or 405 would.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class SimRequest:
    """One HTTP request as the transport read it; ``raw_uri`` is path and query, undecoded."""

    method: str
    raw_uri: str
    headers: Mapping[str, str]
    body: bytes = b""


@dataclass
class SimResponse:
    """What to send back; ``reset`` drops the connection instead; ``delay`` is slept first."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reset: bool = False
    delay: float = 0.0


class ApiFailure(Exception):  # noqa: N818 - an answer to send, not a crash
    """An error answer of the API."""

    def __init__(
        self, status: int, code: str, detail: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail
        self.headers = headers or []


@dataclass
class Call:
    """A routed API request."""

    request: SimRequest
    path: str
    segments: list[str]
    query: dict[str, str]
    now: datetime


def path_template(segments: list[str]) -> str:
    """The spec's path template for routed segments (ids replaced by placeholders)."""
    names = {1: "{PROJECT-ID}"}
    if len(segments) > 3:
        kinds = {"clusters": "{CLUSTER-ID}", "backupConfigs": "{CLUSTER-ID}", "hosts": "{HOST-ID}"}
        names[3] = {**kinds, "alerts": "{ALERT-ID}"}.get(segments[2], "{ID}")
    if len(segments) > 5:
        names[5] = "{SNAPSHOT-ID}"
    return "/" + "/".join(names.get(i, s) for i, s in enumerate(segments))


def find(table: Mapping[str, T], key: str, what: str) -> T:
    """The ``what`` with id ``key``, or the API's 404."""
    try:
        return table[key]
    except KeyError:
        raise ApiFailure(404, "NOT_FOUND", f"No {what} with ID {key}.") from None


def allow(method: str, *allowed: str) -> None:
    """Nothing if the resource takes ``method``, else the API's 405 with an Allow header."""
    if method not in allowed:
        raise ApiFailure(
            405,
            "METHOD_NOT_ALLOWED",
            f"{method} is not supported on this resource",
            [("Allow", ", ".join(allowed))],
        )


def flag(query: Mapping[str, str], name: str) -> bool:
    """A true/false query parameter (false when absent)."""
    value = query.get(name, "false").lower()
    if value not in ("true", "false"):
        raise ApiFailure(400, "INVALID_QUERY_PARAMETER", f"{name}={value}: use true or false")
    return value == "true"


def int_param(query: Mapping[str, str], name: str, default: int) -> int:
    """A number query parameter, ``default`` when absent."""
    value = query.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ApiFailure(400, "INVALID_QUERY_PARAMETER", f"{name}={value}: not a number") from None


def json_body(raw: bytes) -> Any:
    """The request body as JSON (None when empty)."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        raise ApiFailure(400, "INVALID_JSON", "the request body is not valid JSON") from None
