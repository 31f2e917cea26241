"""The JSON bodies the simulator answers with, in the shapes the real service uses: list
pages with their paging links and ``totalCount``, the error body, the ``envelope=true``
wrapper, and the project, cluster, host and agent-links resources.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from retention.simulator.messages import ApiFailure, Call
from retention.simulator.store import SimCluster, SimHost, SimProject

REL_NAMESPACE = "http://server.example.net/rel"
REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


def error_body(failure: ApiFailure) -> str:
    """The body of an error answer."""
    return json.dumps(
        {
            "detail": failure.detail,
            "error": failure.status,
            "errorCode": failure.code,
            "parameters": [],
            "reason": REASONS.get(failure.status, "Error"),
        }
    )


def page_body(
    base_url: str,
    call: Call,
    items: list[Any],
    render: Callable[[Any], str],
    *,
    page_num: int,
    per_page: int,
) -> str:
    """One page of a list: results, links with the paging query, totalCount."""
    if page_num < 1:
        raise ApiFailure(400, "INVALID_QUERY_PARAMETER", "pageNum must be 1 or more")
    if not 1 <= per_page <= 500:
        raise ApiFailure(
            400, "INVALID_QUERY_PARAMETER", f"itemsPerPage={per_page}: must be 1 to 500"
        )
    start = (page_num - 1) * per_page
    chunk = items[start : start + per_page]
    links = [link(base_url, call, page_num, per_page, "self")]
    if page_num > 1:
        links.append(link(base_url, call, page_num - 1, per_page, "previous"))
    if start + per_page < len(items):
        links.append(link(base_url, call, page_num + 1, per_page, "next"))
    results = ",".join(render(item) for item in chunk)
    return f'{{"links":{json.dumps(links)},"results":[{results}],"totalCount":{len(items)}}}'


def group_json(project: SimProject, base_url: str) -> str:
    """The project, in the shape the real service answers GET /groups/{id} with."""
    sharded = [c for c in project.clusters.values() if c.sharded]
    body = {
        "id": project.id,
        "name": project.name,
        "orgId": "5980cfdf0b6d97029d82f86e",
        "activeAgentCount": 2,
        "publicApiEnabled": True,
        "replicaSetCount": sum(1 for c in project.clusters.values() if not c.sharded),
        "shardCount": sum(len(c.shard_names) for c in sharded),
        "tags": [],
        "links": self_links(base_url, "groups", project.id),
    }
    return json.dumps(body)


def agents_json(project: SimProject, base_url: str) -> str:
    """The project's agent links (endpoint 9): its monitoring, backup and automation agents."""
    group = href(base_url, "groups", project.id)
    links = [
        {"href": f"{group}/agents", "rel": "self"},
        {"href": group, "rel": f"{REL_NAMESPACE}/group"},
    ]
    for rel, kind in (
        ("monitoringAgents", "MONITORING"),
        ("backupAgents", "BACKUP"),
        ("automationAgents", "AUTOMATION"),
    ):
        links.append({"href": f"{group}/agents/{kind}", "rel": f"{REL_NAMESPACE}/{rel}"})
    return json.dumps({"links": links})


def envelope_body(body: str, status: int) -> str:
    """An ``envelope=true`` body: a list page gets a ``status`` field, anything else is
    wrapped as ``{"content": ..., "status": N}``."""
    if body.startswith('{"links":') and '"totalCount":' in body:
        return body[:-1] + f',"status":{status}}}'
    return f'{{"content":{body},"status":{status}}}'


def link(base_url: str, call: Call, page_num: int, per_page: int, rel: str) -> dict[str, str]:
    """A paging link: the call's own query with another page."""
    query = {k: v for k, v in call.query.items() if k not in ("pageNum", "itemsPerPage")}
    query.update(pageNum=str(page_num), itemsPerPage=str(per_page))
    return {"href": f"{href(base_url, *call.segments)}?{urlencode(query)}", "rel": rel}


def href(base_url: str, *segments: str) -> str:
    """The URL of a resource below the base URL, each segment percent-encoded."""
    return base_url + "/" + "/".join(quote(s, safe="") for s in segments)


def self_links(base_url: str, *segments: str) -> list[dict[str, str]]:
    """The links of a resource that has only its own."""
    return [{"href": href(base_url, *segments), "rel": "self"}]


def cluster_json(cluster: SimCluster, base_url: str) -> str:
    """A cluster as the clusters list shows it."""
    body: dict[str, Any] = {
        "id": cluster.id,
        "groupId": cluster.group_id,
        "clusterName": cluster.name,
        "typeName": cluster.type_name,
        "links": self_links(base_url, "groups", cluster.group_id, "clusters", cluster.id),
    }
    if cluster.replica_set_name:
        body["replicaSetName"] = cluster.replica_set_name
    if cluster.shard_name or cluster.listed_shard_name:
        body["shardName"] = cluster.shard_name or cluster.listed_shard_name
    return json.dumps(body)


def host_json(host: SimHost, base_url: str) -> str:
    """A host as the hosts list shows it."""
    body: dict[str, Any] = {
        "id": host.id,
        "groupId": host.group_id,
        "hostname": host.hostname,
        "port": host.port,
        "typeName": host.type_name,
        "links": self_links(base_url, "groups", host.group_id, "hosts", host.id),
    }
    if host.replica_set_name:
        body["replicaSetName"] = host.replica_set_name
    return json.dumps(body)
