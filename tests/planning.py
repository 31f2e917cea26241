"""Helpers for planner tests: a policy satisfying PolicyLike, and applying a plan's PATCHes
to snapshot states the way the API would (for the idempotence and min_keep invariants)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from retention.plan.model import ClusterPlan, SnapshotView
from retention.policy.duration import RetentionDuration
from retention.policy.engine import KeepSpec

HOLD_TYPES = frozenset(
    {"BAD_CLUSTERSHOTS", "RESYNC_REQUIRED", "OPLOG_BEHIND", "INCONSISTENT_BACKUP_CONFIGURATION"}
)


@dataclass(frozen=True)
class TestPolicy:
    """A policy for the planner, built directly (the YAML loader is tested elsewhere)."""

    __test__ = False  # not a pytest test class

    name: str = "test"
    keep: KeepSpec | None = None
    protect: KeepSpec | None = None
    grace: RetentionDuration = field(default_factory=lambda: RetentionDuration(hours=24))
    release_protection: bool = False
    inconsistent: str = "ignore"
    timezone: str = "UTC"
    min_keep: int = 1
    max_expire_fraction: float = 0.5
    hold_on_alerts: frozenset[str] = field(default=HOLD_TYPES)

    @property
    def zone(self) -> ZoneInfo:
        """The policy's time zone."""
        return ZoneInfo(self.timezone)

    def keep_spec(self) -> KeepSpec | None:
        """The keep rules."""
        return self.keep

    def protect_spec(self) -> KeepSpec | None:
        """The protect rules."""
        return self.protect

    def where(self, setting: str) -> str:
        """A made-up place, so hold messages can name one."""
        return f"{self.name}.yaml ({setting})"


def apply(snapshots: list[SnapshotView], plan: ClusterPlan, now: datetime) -> list[SnapshotView]:
    """The snapshot states after the API received every PATCH the plan sends."""
    bodies: dict[str, dict[str, Any]] = {
        d.snapshot.id: d.patch.to_api() for d in plan.decisions if d.sends and d.patch
    }
    out = []
    for s in snapshots:
        body = bodies.get(s.id)
        if body is None:
            out.append(s)
            continue
        dnd = body.get("doNotDelete", s.do_not_delete)
        expires = s.expires
        if "expires" in body:
            expires = datetime.fromisoformat(body["expires"].replace("Z", "+00:00"))
        if dnd:
            expires = None
        out.append(replace(s, do_not_delete=dnd, expires=expires))
    return out
