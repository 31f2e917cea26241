"""What the keep-rule engine (``engine.evaluate``) takes and gives: the items it walks, the
rules of one policy (``KeepSpec``), and its answer (kept and removed items, and a
``KeepReason`` of ``Match``es for each kept one).

Plain values, apart from the engine's walk: the engine module is compiled (mypyc, see
tools/compiled.py) where a C compiler is there, and a compiled module makes its classes
native ones, which drops a msgspec struct's ``frozen`` and ``gc`` and cannot unpickle a
frozen dataclass. These travel to planning workers and back, and are hashed, so they stay
Python classes here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

import msgspec

from retention.core.policy import rules
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule
from retention.core.policy.holdrecords import HoldRecordTerms, IdEntry
from retention.core.policy.rules import Rule


class Item(msgspec.Struct, frozen=True, gc=False):
    """What the engine sees of a snapshot: an id, when it was taken, and (for restic) tags."""

    # Structs rather than frozen dataclasses (Item, Match): an evaluation makes one per
    # snapshot and match, and a struct is built about ten times as fast (benchmarks/core.py).

    id: str
    time: datetime
    tags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class KeepSpec:
    """The keep rules of one policy (or its protect rules), engine-ready: a field for each
    row of ``rules.RULES``, by its name."""

    last: int = 0
    hourly: int = 0
    daily: int = 0
    weekly: int = 0
    monthly: int = 0
    yearly: int = 0
    within: RetentionDuration | None = None
    within_hourly: RetentionDuration | None = None
    within_daily: RetentionDuration | None = None
    within_weekly: RetentionDuration | None = None
    within_monthly: RetentionDuration | None = None
    within_yearly: RetentionDuration | None = None
    every: tuple[EveryRule, ...] = ()
    tags: tuple[tuple[str, ...], ...] = ()
    ids: frozenset[IdEntry] = frozenset()

    @functools.cached_property
    def empty(self) -> bool:
        """True when no rule is set (such a spec keeps nothing)."""
        return not any(rule.keeps_with(getattr(self, rule.name)) for rule in rules.RULES)

    def count_of(self, rule: Rule) -> int:
        """The configured count of a count rule (not what is left of it); -1: unlimited."""
        if rule.kind != "count":
            raise ValueError(f"{rule.name} is not a count rule")
        value: int = getattr(self, rule.name)
        return value

    def duration_of(self, rule: Rule) -> RetentionDuration | None:
        """The duration of ``within`` or a ``within_<bucket>`` rule; None when it is unset."""
        if rule.kind not in ("within", "window"):
            raise ValueError(f"{rule.name} has no duration")
        value: RetentionDuration | None = getattr(self, rule.name)
        return value


class Match(msgspec.Struct, frozen=True):
    """One rule that kept an item: its name, the reason text, and its parameter."""

    rule: str
    text: str
    count: int = 0  # the rule's configured count (-1: unlimited); 0 for rules without one
    within: RetentionDuration | None = None
    every: EveryRule | None = None
    counter: int = 0  # this is the rule's n-th kept item, newest first (0: not counted)
    record: HoldRecordTerms | None = None  # the hold record behind an ids match, when it is one


class KeepReason(msgspec.Struct, frozen=True):
    """Why an item is kept: the rules that matched and the counters after it (restic's)."""

    # A struct, as Item and Match: an evaluation makes one for each item it keeps.
    matches: tuple[Match, ...]
    counters: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        """The reason texts, e.g. ``["daily snapshot", "weekly snapshot"]``."""
        return [m.text for m in self.matches]


@dataclass
class Evaluation:
    """The engine's answer: kept and removed items in evaluation order, and reasons."""

    keep: list[Item]
    remove: list[Item]
    reasons: dict[str, KeepReason]
