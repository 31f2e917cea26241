"""What a job works on, from the configuration: the projects and what to walk in each, the
policies, the schedule and the lease, and how many requests and processes it may use. The
one place the settings of retention.yaml become the values the walk, the plan, a review
and a forecast take (and the shard the command line asks for)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from retention.config.settings import RetentionConfig
from retention.core.horizon import LEASE_MINIMUM
from retention.core.policy.loader import PolicySet
from retention.ops.cpus import planning_workers
from retention.ops.sharding import Shard


@dataclass(frozen=True)
class ProjectTargets:
    """What to walk in a project: listed ids, or None to discover them."""

    project_id: str
    clusters: Sequence[str] | None = None
    config_servers: Sequence[str] | None = None


@dataclass(frozen=True)
class Scope:
    """The fleet a job plans for and how: its projects, the policies, the job's schedule
    (the lease of kept snapshots) and its floor, the requests it sends at once
    (``concurrency``), the processes that decide (``workers``), the shard of the fleet it
    takes (None: all of it), whether a run acknowledges the expiry-audit alerts its own
    changes open, and whether the policies' warnings stop a run before it sends anything
    (``strict``: --strict)."""

    policies: PolicySet
    projects: Sequence[ProjectTargets]
    schedule: str | None = None
    lease_minimum: timedelta = LEASE_MINIMUM
    concurrency: int = 8
    workers: int = 1
    shard: Shard | None = None
    acknowledge_audit_alerts: bool = False
    strict: bool = False

    @classmethod
    def of(cls, config: RetentionConfig, policies: PolicySet, shard: Shard | None = None) -> Scope:
        """What ``config`` says, with ``policies`` (loaded from it, or a base's)."""
        return cls(
            policies,
            project_targets(config),
            schedule=config.schedule,
            lease_minimum=config.lease_floor,
            concurrency=config.api.concurrency,
            workers=planning_workers(config.api.workers),
            shard=shard,
            acknowledge_audit_alerts=config.alerts.acknowledge_own_audit_alerts,
        )


def project_targets(config: RetentionConfig) -> list[ProjectTargets]:
    """What the walk covers in each target project of ``config`` (listed ids, or None to
    discover them)."""
    return [ProjectTargets(t.project, t.clusters, t.config_servers) for t in config.targets]
