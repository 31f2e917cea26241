"""The API's operations as the spec writes them (method and path template), and the building
of a request path from an operation and its ids.

An error names its endpoint by the template (``GET /groups/{PROJECT-ID}/alerts``), not by
the URL with its ids filled in.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import quote

from retention.core.ids import carries, id_problem

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
GET_SNAPSHOT_SCHEDULE = Endpoint(
    "GET", "/groups/{PROJECT-ID}/backupConfigs/{CLUSTER-ID}/snapshotSchedule"
)


# The service's error-code table: 404 BACKUP_CONFIG_NOT_FOUND when backup was never set up
# for the cluster, 409 with this code when the cluster is not monitored. No recorded body
# shows which code a real 404 carries, so any 404 is read as "no schedule".
NOT_MONITORED = "CANNOT_GET_BACKUP_CONFIG_INVALID_STATE"


def means_no_schedule(status: int | None, message: str) -> bool:
    """True when an error answer (status, message) to GET_SNAPSHOT_SCHEDULE says the
    cluster has no schedule to give."""
    return status == 404 or (status == 409 and NOT_MONITORED in message)


def encode_segment(value: str) -> str:
    """Percent-encode one path segment built from data; ids are data, not path syntax.

    An id a plan cannot carry (retention.core.ids: empty, too long, a dot segment, a slash
    or backslash, a control character) is refused, whoever asks: encoding cannot keep it
    one segment on every server and proxy. Any other character is encoded.
    """
    if not carries(value):
        raise ValueError(f"the id {value!r} cannot be part of a path: {id_problem(value)}")
    return quote(value, safe="")


def build_path(endpoint: Endpoint, ids: tuple[str, ...]) -> str:
    """Fill the endpoint's placeholders with the given ids, each percent-encoded."""
    names = _PLACEHOLDER.findall(endpoint.template)
    if len(names) != len(ids):
        raise TypeError(f"{endpoint} takes {len(names)} ids, got {len(ids)}")
    values = iter(ids)
    return _PLACEHOLDER.sub(lambda _m: encode_segment(next(values)), endpoint.template)
