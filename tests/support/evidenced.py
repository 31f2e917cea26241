"""A ledger of daily runs for the evidence tests, written through the same path a plan and
an apply write it (RunRecord): clusters with a snapshot a day, a policy whose text the
ledger keeps, a cluster whose backups stop for some days, a change made outside retention,
and an apply whose held changes a named person approved."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from retention.core.model import SnapshotView, Target
from retention.core.outside import Retained, cluster_drift
from retention.ledger.database import Ledger
from retention.ledger.recorder import PolicyText, RunEnd, RunRecord, RunStart, Sent

POLICY = "name: gfs\nmatch: {clusters: ['prod-*']}\nkeep: {daily: 7, monthly: 3}\n"
SHA = hashlib.sha256(POLICY.encode()).hexdigest()
REFS = ({"name": "gfs", "path": "policies/gfs.yaml", "sha256": SHA},)
TEXTS = (PolicyText(SHA, "policies/gfs.yaml", POLICY),)
WITHIN = 36 * 3600
FIRST = date(2026, 8, 1)


def day_at(day: date, hour: int = 3) -> datetime:
    """``day`` at ``hour`` UTC."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@dataclass
class Fleet:
    """Clusters and their snapshots as the service has them, day after day."""

    targets: Sequence[Target]
    stopped: dict[str, tuple[date, date]] = field(default_factory=dict)  # name: days
    snapshots: dict[str, dict[str, SnapshotView]] = field(default_factory=dict)
    expected: bool = True  # the policy says expect.newest_within (checked with no snapshot)

    def take(self, day: date) -> None:
        """Each cluster's snapshot of ``day`` (01:00), unless its backups stopped."""
        for t in self.targets:
            span = self.stopped.get(t.name)
            if span and span[0] <= day <= span[1]:
                continue
            sid = f"{t.cluster_id}-{day:%Y%m%d}"
            self.snapshots.setdefault(t.name, {})[sid] = SnapshotView(
                sid, day_at(day, 1), True, False, None
            )

    def newest(self, name: str) -> datetime | None:
        """The newest snapshot of cluster ``name``."""
        found = self.snapshots.get(name, {})
        return max((s.created for s in found.values()), default=None)


def plan_day(ledger: Ledger, fleet: Fleet, day: date, n: int, actor: str = "cron") -> RunRecord:
    """One daily plan at 03:00 of ``day``: every cluster walked and recorded."""
    at = day_at(day)
    record = RunRecord.begin(
        ledger,
        RunStart(f"run-{n:03d}", "run", "", at, actor, policies=REFS, policy_texts=TEXTS),
    )
    for t in fleet.targets:
        walked = list(fleet.snapshots.get(t.name, {}).values())
        drift = cluster_drift(t, record.known(t), walked, at)
        newest = fleet.newest(t.name)
        age = None if newest is None else int((at - newest).total_seconds())
        entry: dict[str, Any] = {
            "counts": {"snapshots": len(walked)},
            "holds": [],
            "policies": ["gfs"],
        }
        if newest is not None or fleet.expected:  # as a plan: no snapshot, nothing expected
            entry["newestRestorable"] = {
                "newest": newest,
                "ageSeconds": age,
                "withinSeconds": WITHIN,
                "expectedFrom": "policy",
                "stale": age is None or age > WITHIN,
                "text": "",
            }
        record.observe(t, drift, entry, at)
    return record


def generate(
    ledger: Ledger,
    fleet: Fleet,
    days: int,
    *,
    outside_on: dict[int, tuple[str, str]] | None = None,
    approved_on: dict[int, tuple[str, str, str]] | None = None,
) -> None:
    """``days`` daily runs from FIRST. ``outside_on``: day number: (cluster, snapshot id)
    deleted by someone else before that day's run. ``approved_on``: day number:
    (cluster, snapshot id, approver): that day's run sends a protect the approver let
    through."""
    for i in range(days):
        day = FIRST + timedelta(days=i)
        fleet.take(day)
        if outside_on and i in outside_on:
            name, sid = outside_on[i]
            del fleet.snapshots[name][sid]
        record = plan_day(ledger, fleet, day, i)
        if approved_on and i in approved_on:
            name, sid, approver = approved_on[i]
            protect(record, fleet, name, sid, approver, day_at(day, 4))
        record.finish(RunEnd(day_at(day, 4), 0, approvals={"clusters": [name], "by": approver}
                             if approved_on and i in approved_on else {}))  # fmt: skip


def protect(
    record: RunRecord, fleet: Fleet, name: str, sid: str, approver: str, at: datetime
) -> None:
    """``record``'s run sends a protect of cluster ``name``'s snapshot ``sid``, which
    ``approver`` let through, and the service takes it."""
    target = next(t for t in fleet.targets if t.name == name)
    before = fleet.snapshots[name][sid]
    after = Retained(True, None, True)
    change = Sent(
        target.project_id,
        target.cluster_id,
        sid,
        "protect",
        after,
        approval=approver,
        before=Retained(True, before.expires, before.do_not_delete),
        policy="gfs",
        why="protect: monthly snapshot",
    )
    record.intend([change], at)
    record.outcomes([Sent(**{**change.__dict__, "outcome": "sent", "status": 200})], at)
    fleet.snapshots[name][sid] = SnapshotView(sid, before.created, True, True, None)


def generate_gone(ledger: Ledger, fleet: Fleet, days: int, cleared_on: dict[int, str]) -> None:
    """As ``generate``; on each day of ``cleared_on`` someone deletes every snapshot of
    that cluster before the run."""
    for i in range(days):
        day = FIRST + timedelta(days=i)
        fleet.take(day)
        if i in cleared_on:
            fleet.snapshots[cleared_on[i]].clear()
        plan_day(ledger, fleet, day, i).finish(RunEnd(day_at(day, 4), 0))
