"""The hold records of protect: ids as the report lists them (plan.json's ``holdRecords``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from retention.core.planfile import HoldRecordEntry


@dataclass(frozen=True)
class HoldRecordRow:
    """A hold record of protect: ids as the report lists it: whose, on which snapshot, why,
    under which ticket, until when, and whether it still protects at the plan's time."""

    policy: str
    snapshot_id: str
    reason: str
    ticket: str | None
    until: str | None  # as the policy writes it; None: no end
    ends: datetime | None  # the instant it ends
    in_force: bool
    setting: str  # FILE:LINE
    cluster: str | None  # where the plan found its snapshot; None: in no cluster of the plan
    state: str | None

    @classmethod
    def of(cls, entry: HoldRecordEntry) -> HoldRecordRow:
        """The row of a plan.json holdRecords entry."""
        return cls(
            policy=entry["policy"],
            snapshot_id=entry["snapshotId"],
            reason=entry["reason"],
            ticket=entry["ticket"],
            until=entry["until"],
            ends=entry["ends"],
            in_force=entry["inForce"],
            setting=entry["setting"],
            cluster=entry["clusterName"],
            state=entry["state"],
        )

    @property
    def status(self) -> str:
        """ "in force" or "ended", in words."""
        return "in force" if self.in_force else "ended"

    @property
    def rank(self) -> tuple[int, bool, datetime, str, str]:
        """The order of the list: ended first, then the soonest to end, open-ended last."""
        ends = self.ends or datetime.max.replace(tzinfo=UTC)
        return (int(self.in_force), self.ends is None, ends, self.policy, self.snapshot_id)
