"""Several policies that match one cluster, as one: the most retentive setting of each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from retention.core.policy.loader import LoadedPolicy
from retention.core.timestamps import ceil_to_second


@dataclass(frozen=True)
class Merged:
    """Several matching policies as one: the most retentive setting of each wins."""

    grace_until: datetime
    grace_is_zero: bool
    min_keep: int
    max_expire_fraction: float
    hold_on_alerts: frozenset[str]
    release_protection: bool
    expire_inconsistent: bool
    policies: tuple[LoadedPolicy, ...]  # sorted by name: holds say which one's setting held
    # The shortest expect.newest_within of the policies that set one (None: none does).
    newest_within: timedelta | None = None
    # Any matching policy holds the cluster on a change made outside retention.
    hold_on_outside_change: bool = False

    @classmethod
    def of(cls, policies: Sequence[LoadedPolicy], now: datetime) -> Merged:
        """Largest grace and min_keep, smallest fraction and newest_within, union of alert types;
        release protection and expire inconsistent snapshots only if every policy says so."""
        settings = [p.policy for p in policies]
        return cls(
            grace_until=ceil_to_second(max(p.grace.after(now, UTC) for p in settings)),
            grace_is_zero=all(p.grace.zero for p in settings),
            min_keep=max(p.safety.min_keep for p in settings),
            max_expire_fraction=min(p.safety.max_expire_fraction for p in settings),
            hold_on_alerts=frozenset().union(*(p.safety.hold_on_alerts for p in settings)),
            release_protection=all(p.release_protection for p in settings),
            expire_inconsistent=all(p.inconsistent == "expire" for p in settings),
            policies=tuple(sorted(policies, key=lambda p: p.name)),
            hold_on_outside_change=any(p.safety.hold_on_outside_change for p in settings),
            newest_within=min(
                (
                    now - p.expect.newest_within.before(now, UTC)
                    for p in settings
                    if p.expect.newest_within is not None
                ),
                default=None,
            ),
        )

    def fraction_setting(self) -> str:
        """Where the smallest max_expire_fraction (the one that holds) is set."""
        loaded = min(self.policies, key=lambda p: p.policy.safety.max_expire_fraction)
        return loaded.where("safety.max_expire_fraction")

    def outside_setting(self) -> str | None:
        """Where the first policy that holds on an outside change says so."""
        for loaded in self.policies:
            if loaded.policy.safety.hold_on_outside_change:
                return loaded.where("safety.hold_on_outside_change")
        return None

    def alert_setting(self, event_type: str) -> str | None:
        """Where the first policy that holds on ``event_type`` says so."""
        for loaded in self.policies:
            if event_type in loaded.policy.safety.hold_on_alerts:
                return loaded.where("safety.hold_on_alerts")
        return None
