"""Retention as promised: at a moment (a month's end, the period's end), the restore points
a cluster had against what its policy's rules promise. Pure: its points and a policy in,
one check per rule out.

What a rule promises is read as restic's ``forget`` keeps: ``monthly: 13`` keeps the
newest point of each of the 13 newest months that have one. So at a moment the rule
promises the newest point of each of the newest N buckets (in the policy's time zone) of
every complete snapshot made by then that the ledger knew, gone since or not; the check
counts how many of those buckets still had a point at that moment. Fewer buckets than N
made by then is a history too short, not a miss. ``last`` and ``within`` promise their
snapshots likewise; the window and cron (``every``) rules are not checked here, and the
check says so.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Literal

from retention.core.policy.engine import cutoff
from retention.core.policy.model import Policy
from retention.core.policy.rules import COUNTS, WINDOWS, WITHIN, Rule
from retention.core.policy.spec import KeepSpec

Status = Literal["met", "short", "missed"]


@dataclass(frozen=True)
class Point:
    """A complete snapshot as evidence places it in time: made at ``created``, there
    until ``until`` (when a run saw it gone; None: still there)."""

    snapshot_id: str
    created: datetime
    until: datetime | None

    def there_at(self, moment: datetime) -> bool:
        """Whether it was a restore point at ``moment``."""
        return self.created < moment and (self.until is None or self.until > moment)


@dataclass(frozen=True)
class Missing:
    """A promised point that was not there: its bucket in words, and the snapshot that
    would have been it."""

    bucket: str
    snapshot_id: str


@dataclass(frozen=True)
class RuleCheck:
    """One rule of one policy at one moment."""

    policy: str
    section: str  # keep or protect
    rule: str
    count: int  # what the rule says (-1: all)
    promised: int  # buckets (or snapshots) it promised at the moment
    had: int  # of them, how many had their point
    missing: tuple[Missing, ...] = ()

    @property
    def status(self) -> Status:
        """met, short (met, but fewer made than the rule counts), or missed."""
        if self.had < self.promised:
            return "missed"
        return "short" if self.count >= 0 and self.promised < self.count else "met"

    @property
    def text(self) -> str:
        """In words: "monthly 13: 12 of 13"."""
        of = "all" if self.count < 0 else str(self.count)
        return f"{self.section}.{self.rule} {of}: {self.had} of {self.promised}"


def unchecked_rules(policy: Policy) -> list[str]:
    """The rules of ``policy`` this check leaves aside (windows, cron), as keys."""
    found = []
    for section, spec in (("keep", policy.keep_spec()), ("protect", policy.protect_spec())):
        found += [f"{section}.{r.name}" for r in WINDOWS if r.keeps_with(getattr(spec, r.name))]
        if spec.every:
            found.append(f"{section}.every")
    return found


class History:
    """A cluster's points, newest first, prepared once for the checks at each moment: a
    year of a cluster is checked at thirteen moments, by each rule of each policy, and
    the local time and bucket of each point are worked out once, not at each."""

    def __init__(self, points: Sequence[Point]) -> None:
        self.newest_first = sorted(points, key=lambda p: p.created, reverse=True)
        self._ascending = [p.created for p in reversed(self.newest_first)]
        self._keys: dict[tuple[str, tzinfo], list[int]] = {}

    def made_before(self, moment: datetime) -> int:
        """Where the points made before ``moment`` begin in ``newest_first``."""
        return len(self._ascending) - bisect_left(self._ascending, moment)

    def keys(self, rule: Rule, zone: tzinfo) -> list[int]:
        """Each point's bucket of ``rule`` in ``zone``, as ``newest_first`` orders them."""
        found = self._keys.get((rule.name, zone))
        if found is None:
            calendar = rule.calendar
            if calendar is None:
                raise ValueError(f"{rule.name} counts snapshots, not buckets")
            found = [calendar.key(p.created.astimezone(zone)) for p in self.newest_first]
            self._keys[rule.name, zone] = found
        return found


def checks(policy: Policy, history: History, moment: datetime) -> list[RuleCheck]:
    """Each counted rule of ``policy`` at ``moment``, over the cluster's ``history``."""
    found = []
    for section, spec in (("keep", policy.keep_spec()), ("protect", policy.protect_spec())):
        found += _section(policy, section, spec, history, moment)
    return found


def _section(
    policy: Policy, section: str, spec: KeepSpec, history: History, moment: datetime
) -> list[RuleCheck]:
    found = []
    start = history.made_before(moment)
    made = history.newest_first
    for rule in COUNTS:
        count = int(getattr(spec, rule.name))
        if count:
            promised = _newest_per_bucket(policy, rule, history, start, count)
            found.append(_check(policy.name, section, rule.name, count, promised, moment))
    # The engine's own cut and comparison: ``within`` keeps what is strictly newer than
    # the newest point shifted back (a point made exactly that long before is not kept).
    newest = made[start].created if start < len(made) else None
    cut = cutoff(spec.within, newest, policy.zone)
    if cut is not None and newest is not None:
        promised = []
        for p in made[start:]:
            if not p.created > cut:
                break
            promised.append(("", [p]))
        found.append(_check(policy.name, section, WITHIN.name, -1, promised, moment))
    return found


def _newest_per_bucket(
    policy: Policy, rule: Rule, history: History, start: int, count: int
) -> list[tuple[str, list[Point]]]:
    """The points of each of the newest ``count`` buckets (all: -1) of ``rule`` among the
    points from ``start`` on, newest first, each bucket's newest point first; ``last``
    counts snapshots."""
    made = history.newest_first
    if rule.calendar is None:
        chosen = made[start:] if count < 0 else made[start : start + count]
        return [("", [p]) for p in chosen]
    zone, words = policy.zone, rule.calendar.words
    keys = history.keys(rule, zone)
    buckets: list[tuple[str, list[Point]]] = []
    last = None
    for i in range(start, len(made)):
        key = keys[i]
        if key != last:
            if 0 <= count <= len(buckets):
                break
            buckets.append((words(made[i].created.astimezone(zone)), []))
            last = key
        buckets[-1][1].append(made[i])
    return buckets


def _check(
    policy: str,
    section: str,
    rule: str,
    count: int,
    promised: list[tuple[str, list[Point]]],
    moment: datetime,
) -> RuleCheck:
    """The rule's check: a bucket is had when any of its points was there at ``moment``
    (its newest gone, an older one of the same bucket is still a restore point of it)."""
    missing = tuple(
        Missing(bucket, points[0].snapshot_id)
        for bucket, points in promised
        if not any(p.there_at(moment) for p in points)
    )
    had = len(promised) - len(missing)
    return RuleCheck(policy, section, rule, count, len(promised), had, missing)
