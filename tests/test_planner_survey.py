"""The planner's survey of projects (alerts and discovery, read concurrently) and what it
does when either fails."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from retention.api.client import OpsManagerClient
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.errors import PermissionDeniedError
from retention.plan.planner import make_plan
from tests.support.fakeapi import FakeApi, list_page, paged, snapshot

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
POLICY = "name: prod\nkeep: {last: 1}\ngrace: 24h\nsafety: {max_expire_fraction: 1.0}\n"


def error(status: int, code: str) -> dict[str, Any]:
    """An error body as the spec shows it."""
    return {"detail": f"{code} detail", "error": status, "errorCode": code, "reason": code}


def plan(client: OpsManagerClient, tmp_path: Path, *projects: str) -> Any:
    """make_plan over ``projects`` with one keep-last-1 policy."""
    (tmp_path / "policies").mkdir(exist_ok=True)
    (tmp_path / "policies" / "prod.yaml").write_text(POLICY)
    policies = load_policies(tmp_path / "policies")
    scope = Scope(policies, [ProjectTargets(p) for p in projects], concurrency=4)
    return make_plan(client, scope, plan_path=tmp_path / "plan.json", now=NOW)


def one_cluster(fake: FakeApi, project: str, cluster: str) -> None:
    """A project with one replica set of three snapshots and no config server."""
    fake.answer(
        "GET", f"/groups/{project}/clusters", list_page([{"id": cluster, "clusterName": "rs"}], 1)
    )
    fake.answer("GET", f"/groups/{project}/hosts", list_page([], 0))
    days = ["2026-11-20T00:00:00Z", "2026-11-19T00:00:00Z", "2026-11-18T00:00:00Z"]
    items = [snapshot(f"{cluster}-{i}", d, clusterName="rs") for i, d in enumerate(days)]
    fake.route("GET", f"/groups/{project}/clusters/{cluster}/snapshots", paged(items))


def test_failed_alerts_hold_the_project_and_failed_discovery_skips_it(
    fake: FakeApi, client: OpsManagerClient, tmp_path: Path
) -> None:
    """Unreadable alerts hold every destructive change of the project's clusters; a project
    that cannot be discovered is reported and skipped; the others are planned as usual."""
    fake.answer("GET", "/groups/p1/alerts", error(404, "RESOURCE_NOT_FOUND"), status=404)
    one_cluster(fake, "p1", "c1")
    fake.answer("GET", "/groups/p2/alerts", list_page([], 0))
    fake.answer("GET", "/groups/p2/clusters", error(404, "RESOURCE_NOT_FOUND"), status=404)
    fake.answer("GET", "/groups/p3/alerts", list_page([], 0))
    one_cluster(fake, "p3", "c3")

    result = plan(client, tmp_path, "p3", "p2", "p1")

    assert [e.split(":")[0] for e in result.errors] == [
        "cannot read the project's alerts, so no alert can be honoured",
        "project p2",
    ]
    assert "discovery failed" in result.errors[1]
    clusters = {c["clusterId"]: c for c in result.plan.read_clusters()}
    assert sorted(clusters) == ["c1", "c3"]
    assert [h["kind"] for h in clusters["c1"]["holds"]] == ["walk"]
    assert clusters["c3"]["holds"] == []
    assert result.plan.head["summary"]["byAction"] == {"held": 2, "shorten": 2}


def test_an_unreachable_api_stops_the_plan_before_anything_is_written(
    fake: FakeApi, client: OpsManagerClient, tmp_path: Path
) -> None:
    """Permission denied on a project's alerts is exit 5 at once, and no plan is written."""
    fake.answer("GET", "/groups/p1/alerts", error(403, "USER_CANNOT_ACCESS_GROUP"), status=403)
    one_cluster(fake, "p1", "c1")

    with pytest.raises(PermissionDeniedError) as raised:
        plan(client, tmp_path, "p1")

    assert raised.value.exit_code == 5
    assert not (tmp_path / "plan.json").exists()
