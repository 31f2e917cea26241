"""Planning as a job: discover targets, walk them, decide, and write plan.json with
decisions.jsonl beside it. The imperative shell around the pure retention.plan.

Clusters are decided one at a time as their walks finish (in a fixed order), and each
cluster's decisions go straight to decisions.jsonl, so memory holds a few clusters at a
time whatever the size of the fleet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from retention.api import OpsManagerClient
from retention.inventory import ProjectTargets, Walk, survey_all, walk_all
from retention.plan.decide import decide
from retention.plan.horizon import lease
from retention.plan.model import Target
from retention.plan.planfile import (
    WRITE_BUFFER,
    PlanBuilder,
    PlanHead,
    PolicyDigest,
    decisions_path,
)
from retention.policy.duration import RetentionDuration
from retention.policy.engine import KeepSpec
from retention.policy.loader import LoadedPolicy, PolicySet
from retention.policy.model import Policy
from retention.sharding import Shard

log = logging.getLogger("retention.planner")

# The plan's notice when it has a legacy config server (the client logs no warning: there
# is nothing to act on, and the plan and its report say it once).
CONFIG_SERVER_NOTICE = (
    "Legacy config-server snapshots come from deprecated endpoints (mirrored config "
    "servers, database versions before 3.4): their decisions are advisory and never sent."
)


@dataclass(frozen=True)
class PolicyView:
    """A loaded policy as the decision model sees it (retention.plan.model.PolicyLike)."""

    loaded: LoadedPolicy

    @property
    def policy(self) -> Policy:
        """The validated policy."""
        return self.loaded.policy

    def where(self, setting: str) -> str:
        """The file and line of a setting (policy.loader.LoadedPolicy.where)."""
        return self.loaded.where(setting)

    @property
    def name(self) -> str:
        """The policy's name."""
        return self.policy.name

    @property
    def release_protection(self) -> bool:
        """Whether protected snapshots outside `protect` lose their hold."""
        return self.policy.release_protection

    @property
    def grace(self) -> RetentionDuration:
        """Time an unkept snapshot is given before it may be deleted."""
        return self.policy.grace

    @property
    def inconsistent(self) -> str:
        """ignore or expire."""
        return self.policy.inconsistent

    @property
    def zone(self) -> Any:
        """The policy's time zone."""
        return self.policy.zone

    def keep_spec(self) -> KeepSpec | None:
        """The keep rules, engine-ready."""
        return self.policy.keep_spec()

    def protect_spec(self) -> KeepSpec | None:
        """The protect rules, engine-ready."""
        return self.policy.protect_spec()

    @property
    def min_keep(self) -> int:
        """The safety floor of survivors."""
        return self.policy.safety.min_keep

    @property
    def max_expire_fraction(self) -> float:
        """The largest share of a cluster that may expire in one run."""
        return self.policy.safety.max_expire_fraction

    @property
    def hold_on_alerts(self) -> frozenset[str]:
        """Alert types that hold destructive changes."""
        return frozenset(self.policy.safety.hold_on_alerts)


@dataclass(frozen=True)
class PlanResult:
    """A written plan: its head (the plan without its long lists), files and errors."""

    document: PlanHead
    plan_path: Path
    decisions_path: Path
    errors: list[str]  # the plan's own and every cluster's walk error

    @property
    def held(self) -> bool:
        """True when a safety gate held destructive changes."""
        return bool(self.document["summary"]["clustersHeld"])


def make_plan(
    client: OpsManagerClient,
    policies: PolicySet,
    projects: Sequence[ProjectTargets],
    *,
    now: datetime,
    created_at: datetime,
    schedule: str | None,
    concurrency: int,
    plan_path: Path,
    on_walk: Callable[[Walk], None] | None = None,
    shard: Shard | None = None,
    what_if: bool = False,
) -> PlanResult:
    """Walk every target of ``projects``, decide with ``policies`` as of ``now``, and write
    the plan to ``plan_path`` and its decisions beside it (planfile.decisions_path).
    ``what_if``: ``now`` is a time the user asked about (--at), not the time of the plan."""
    lease_for = lease(schedule, now)
    decisions_to = decisions_path(plan_path)
    plan_path.parent.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []  # outside any one cluster: plan.json's top-level errors
    warnings: list[str] = []
    notices: list[str] = []  # facts, not warnings: nothing to act on
    walk_errors: list[str] = []  # each also in its cluster's entry
    with decisions_to.open("wb", buffering=WRITE_BUFFER) as decisions_out:
        builder = PlanBuilder(
            evaluated_at=now,
            created_at=created_at,
            base_url=client.base_url,
            policies=[_digest(p) for p in policies],
            decisions_out=decisions_out,
            lease_seconds=lease_for.total_seconds(),
            what_if=what_if,
        )
        try:
            ordered = sorted(projects, key=lambda p: p.project_id)
            surveys = {
                s.project_id: s for s in survey_all(client, ordered, concurrency=concurrency)
            }
            targets: list[Target] = []
            unread: dict[str, str] = {}  # project: why its alerts could not be honoured
            for wanted in ordered:
                found = surveys[wanted.project_id]
                builder.projects[wanted.project_id] = found.name
                warnings += found.warnings
                if found.alerts_error is not None:
                    unread[wanted.project_id] = (
                        f"cannot read the project's alerts, so no alert can be honoured: "
                        f"{found.alerts_error}"
                    )
                    errors.append(unread[wanted.project_id])
                if found.discovery_error is not None:
                    error = found.discovery_error
                    errors.append(f"project {wanted.project_id}: discovery failed: {error}")
                    continue
                targets += [t for t in found.targets if shard is None or shard.owns(t.cluster_id)]
            if any(t.kind == "config-server" for t in targets):
                notices.append(CONFIG_SERVER_NOTICE)
            # One walk across every project, so no project's start waits for the last one's end.
            for walk in walk_all(client, targets, concurrency=concurrency, on_done=on_walk):
                t = walk.target
                found = surveys[t.project_id]
                if walk.error:
                    walk_errors.append(f"{t.kind} {t.cluster_id}: {walk.error}")
                matching = [PolicyView(p) for p in policies.matching(t.project_id, t.name, t.kind)]
                builder.add(
                    decide(
                        t,
                        walk.snapshots,
                        matching,
                        found.alerts,
                        now=now,
                        lease_for=lease_for,
                        walk_error=walk.error or unread.get(t.project_id),
                    )
                )
            builder.service_version = client.service_version
            partial = plan_path.with_name(plan_path.name + ".partial")
            with partial.open("wb", buffering=WRITE_BUFFER) as out:
                head = builder.write(out, errors, warnings, notices)
            partial.replace(plan_path)  # readers never see half a plan
        finally:
            builder.close()
    return PlanResult(head, plan_path, decisions_to, errors + walk_errors)


def _digest(loaded: LoadedPolicy) -> PolicyDigest:
    return PolicyDigest(loaded.policy.name, loaded.sha256, str(loaded.path))
