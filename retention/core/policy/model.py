"""The policy language (docs/policies.md), as frozen pydantic models.

Every model forbids unknown keys: a misspelt rule (``dayly``) must be an error, never a
silently ignored line that lets snapshots expire. Values arrive from YAML, so validators
accept only what YAML gives naturally (integers stay integers, durations are strings such
as ``2d`` or ``1y6m``) and say what is wrong in plain words; the loader adds file, line and
field path. ``policy_json_schema()`` describes the same format for editors.
"""

from __future__ import annotations

import difflib
import functools
import re
import zoneinfo
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    Strict,
    TypeAdapter,
    WithJsonSchema,
    model_validator,
)

from retention.core.policy import rules, spec
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule, checked_count
from retention.core.policy.holdrecords import HoldRecord, entry_id, id_entries
from retention.core.snapshot import Kind
from retention.core.wording import counted, decimal_text, joined, plural, show_value

DURATION_PATTERN = r"^\s*([0-9]+[ymdh])+\s*$"
NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
DEFAULT_MAX_EXPIRE_FRACTION = 0.5
DEFAULT_HOLD_ON_ALERTS = (
    "BAD_CLUSTERSHOTS",
    "RESYNC_REQUIRED",
    "OPLOG_BEHIND",
    "INCONSISTENT_BACKUP_CONFIGURATION",
)
EMPTY_POLICY = (
    "a policy must keep or protect something; an empty policy would expire every snapshot "
    "it matches"
)


def _duration(value: object) -> RetentionDuration:
    if isinstance(value, RetentionDuration):
        return value
    if not isinstance(value, str):
        shown = show_value(value)
        # TypeError would escape pydantic: only ValueError becomes a field error.
        raise ValueError(  # noqa: TRY004
            f"{shown} is not a duration: give a number with a unit, e.g. 24h, 7d or 1y6m"
        )
    return RetentionDuration.parse(value)


_DURATION_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": DURATION_PATTERN,
    "examples": ["24h", "7d", "1y6m"],
}

# Durations are strings in YAML and JSON, RetentionDuration in Python.
Duration = Annotated[
    RetentionDuration,
    PlainValidator(_duration),
    PlainSerializer(str, return_type=str),
    WithJsonSchema(_DURATION_SCHEMA),
]
OptionalDuration = Duration | None


# Strict: YAML gives integers as integers; `daily: true` or `daily: "7"` is a mistake.
Count = Annotated[
    int, Strict(), AfterValidator(checked_count), WithJsonSchema({"type": "integer", "minimum": -1})
]


def _name(value: str) -> str:
    if not re.fullmatch(NAME_PATTERN, value):
        raise ValueError(
            f"{value!r} is not a valid policy name: use letters, digits, '_', '.' and '-' only"
        )
    return value


@functools.cache
def _zone_names() -> tuple[str, ...]:
    return tuple(sorted(zoneinfo.available_timezones()))


def zone_suggestion(name: str) -> str | None:
    """The known time zone closest to ``name``, or None when nothing is close."""
    names = _zone_names()
    folded = {zone.casefold(): zone for zone in names}
    if name.casefold() in folded:
        return folded[name.casefold()]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _timezone(value: str) -> str:
    try:
        zoneinfo.ZoneInfo(value)
    # A directory name (Europe) or an overlong one is an OSError, which pydantic would not catch.
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        suggestion = zone_suggestion(value)
        hint = f"; did you mean {suggestion!r}?" if suggestion else " (e.g. 'Europe/Berlin')"
        raise ValueError(f"unknown time zone {value!r}{hint}") from None
    return value


def _not_empty(value: list[str] | None) -> list[str] | None:
    if value is not None and not value:
        raise ValueError("an empty list matches nothing; leave the key out to match any")
    return value


Globs = Annotated[list[str] | None, AfterValidator(_not_empty)]


def _about(rule: str) -> str:
    """A rule's description in the schema, from its row in the rules' table."""
    return rules.BY_NAME[rule].description


class KeepRules(BaseModel):
    """restic ``forget`` rules: a snapshot kept by any rule is kept."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # The docstring is the schema's description; the fields are the rules of rules.RULES
    # this section takes, by name (tests/test_policy_rules.py holds them to it).
    section: ClassVar[rules.Section] = "keep"

    last: Count = Field(0, description=_about("last"))
    hourly: Count = Field(0, description=_about("hourly"))
    daily: Count = Field(0, description=_about("daily"))
    weekly: Count = Field(0, description=_about("weekly"))
    monthly: Count = Field(0, description=_about("monthly"))
    yearly: Count = Field(0, description=_about("yearly"))
    within: OptionalDuration = Field(None, description=_about("within"))
    within_hourly: OptionalDuration = Field(None, description=_about("within_hourly"))
    within_daily: OptionalDuration = Field(None, description=_about("within_daily"))
    within_weekly: OptionalDuration = Field(None, description=_about("within_weekly"))
    within_monthly: OptionalDuration = Field(None, description=_about("within_monthly"))
    within_yearly: OptionalDuration = Field(None, description=_about("within_yearly"))
    every: list[EveryRule] = Field(default_factory=list, description=_about("every"))

    def to_spec(self) -> spec.KeepSpec:
        """The engine-ready form of these rules."""
        return self._spec

    @functools.cached_property
    def _spec(self) -> spec.KeepSpec:
        # Made once: the model is frozen, and a plan (a forecast: every step) asks again
        # for each cluster the policy matches.
        values = {rule.name: self._engine_value(rule) for rule in rules.in_section(self.section)}
        return spec.KeepSpec(**values)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (pydantic's), without the engine form cached on this one: an update
        changes the rules it is made from."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("_spec", None)
        return copied

    def _engine_value(self, rule: rules.Rule) -> Any:
        value = getattr(self, rule.name)
        if rule.kind == "every":
            return tuple(value)
        if rule.kind == "ids":
            return frozenset(v if isinstance(v, str) else v.to_engine() for v in value)
        return value

    @property
    def is_empty(self) -> bool:
        """True when no rule is set, so these rules would keep nothing."""
        return self.to_spec().empty


class ProtectRules(KeepRules):
    """Keep rules whose snapshots get ``doNotDelete: true``, plus snapshots named by id."""

    section: ClassVar[rules.Section] = "protect"

    ids: Annotated[list[str | HoldRecord], BeforeValidator(id_entries)] = Field(
        default_factory=list, description=_about("ids")
    )

    @property
    def records(self) -> list[tuple[int, HoldRecord]]:
        """The entries of ``ids`` written as hold records, with their place in the list."""
        return [(n, entry) for n, entry in enumerate(self.ids) if isinstance(entry, HoldRecord)]


class Selector(BaseModel):
    """Which clusters a policy applies to; every given selector must match, omitted = any."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    projects: Globs = Field(None, description="Project ids (shell globs allowed).")
    clusters: Globs = Field(
        None, description="Shell globs on clusterName (config servers: on hostname)."
    )
    kinds: Annotated[list[Kind] | None, AfterValidator(_not_empty)] = Field(
        None, description="Kinds of target: cluster, config-server."
    )

    def matches(self, project_id: str, name: str, kind: str) -> bool:
        """True when the target is in scope of every selector given."""
        if self.projects is not None and not any(fnmatchcase(project_id, p) for p in self.projects):
            return False
        if self.clusters is not None and not any(fnmatchcase(name, c) for c in self.clusters):
            return False
        return self.kinds is None or kind in self.kinds


class Safety(BaseModel):
    """Gates applied after the decisions, per cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_keep: Annotated[int, Strict()] = Field(
        1, ge=0, description="Never leave fewer complete, consistent survivors than this."
    )
    max_expire_fraction: Annotated[float, Strict()] = Field(
        DEFAULT_MAX_EXPIRE_FRACTION,
        ge=0,
        le=1,
        description="Hold every destructive change of a cluster above this share of it.",
    )
    hold_on_alerts: list[str] = Field(
        default_factory=lambda: list(DEFAULT_HOLD_ON_ALERTS),
        description="Open alerts of these types hold destructive changes.",
    )
    hold_on_outside_change: Annotated[bool, Strict()] = Field(
        False,
        description=(
            "Hold a cluster's destructive changes when the ledger saw a change made outside "
            "retention since the last run (an expiry changed, a snapshot deleted early)."
        ),
    )


class Expect(BaseModel):
    """What the policy expects of the clusters it matches, checked on every plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    newest_within: OptionalDuration = Field(
        None,
        description=(
            "Warn when a cluster's newest restorable snapshot is older than this "
            "(default: twice the cluster's own cadence and an hour)."
        ),
    )


# The rules of a policy without a keep (or protect) section: one value, so its ``empty`` is
# worked out once.
_NO_RULES = spec.KeepSpec()


class Policy(BaseModel):
    """One retention policy: scope, keep and protect rules, grace and safety gates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, AfterValidator(_name)] = Field(
        description="Unique across all policy files.",
        json_schema_extra={"pattern": NAME_PATTERN},
    )
    description: str | None = Field(None, description="Free text for people.")
    match: Selector = Field(default_factory=Selector, description="Scope; omitted = any.")
    timezone: Annotated[str, AfterValidator(_timezone)] = Field(
        "UTC", description="IANA zone in which calendar buckets are computed."
    )
    keep: KeepRules | None = Field(None, description="restic forget semantics.")
    protect: ProtectRules | None = Field(
        None, description="Same vocabulary plus ids; these get doNotDelete: true."
    )
    release_protection: bool = Field(
        False,
        description="true: protected snapshots outside `protect` lose doNotDelete.",
    )
    grace: Duration = Field(
        RetentionDuration(hours=24),
        description="Unkept snapshots expire at now + grace (0h = delete at once; m is months).",
        # The schema shows the default as written in YAML, not as the dataclass.
        json_schema_extra={"default": "24h"},
    )
    inconsistent: Literal["ignore", "expire"] = Field(
        "ignore", description="What to do with possibly inconsistent snapshots."
    )
    safety: Safety = Field(default_factory=Safety, description="Safety gates.")
    expect: Expect = Field(
        default_factory=Expect, description="What to expect of the clusters' backups."
    )

    @model_validator(mode="after")
    def _keeps_something(self) -> Policy:
        if self.keep_spec().empty and self.protect_spec().empty:
            raise ValueError(EMPTY_POLICY)
        return self

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        """The policy's time zone."""
        return zoneinfo.ZoneInfo(self.timezone)

    def keep_spec(self) -> spec.KeepSpec:
        """The keep rules, engine-ready (empty when there are none)."""
        return self.keep.to_spec() if self.keep is not None else _NO_RULES

    def protect_spec(self) -> spec.KeepSpec:
        """The protect rules, engine-ready (empty when there are none)."""
        return self.protect.to_spec() if self.protect is not None else _NO_RULES

    def describe(self) -> str:
        """One plain sentence summing the policy up, for logs and reports."""
        parts = [_describe_rules("keep", self.keep_spec()) or "no keep rules"]
        protect = _describe_rules("protect", self.protect_spec())
        if protect:
            parts.append(protect)
        if self.release_protection:
            parts.append("release other protections")
        # A grace in months is seldom meant (m is months, not minutes): said in words.
        said = " (delete at once)" if self.grace.zero else ""
        said = f" ({self.grace.words()})" if self.grace.months else said
        parts.append(f"grace {self.grace}{said}")
        if self.inconsistent == "expire":
            parts.append("expire inconsistent snapshots")
        parts.extend(_describe_safety(self.safety))
        if self.expect.newest_within is not None:
            parts.append(f"expect a snapshot within {self.expect.newest_within}")
        parts.append(f"times in {self.timezone}")
        return f"{self.name}: {_describe_scope(self.match)}, {'; '.join(parts)}."


def _describe_scope(selector: Selector) -> str:
    kinds = set(selector.kinds or ("cluster", "config-server"))
    noun = "clusters and config servers"
    if kinds == {"cluster"}:
        noun = "clusters"
    elif kinds == {"config-server"}:
        noun = "config servers"
    scope = f"{noun} {joined(selector.clusters, 'or')}" if selector.clusters else f"all {noun}"
    if selector.projects:
        label = plural("project", len(selector.projects))
        scope += f" in {label} {joined(selector.projects, 'or')}"
    return scope


def _amount(count: int) -> str:
    return "unlimited" if count == -1 else str(count)


def _describe_rules(verb: str, spec: spec.KeepSpec) -> str:
    words = [words for rule in rules.RULES for words in _rule_words(rule, spec)]
    return f"{verb} {joined(words)}" if words else ""


def _rule_words(rule: rules.Rule, spec: spec.KeepSpec) -> list[str]:
    """What one rule of ``spec`` keeps, in the summary's words, when it keeps anything."""
    if not rule.keeps_with(getattr(spec, rule.name)):
        return []
    if rule.kind == "count":
        count = spec.count_of(rule)
        # last counts by position ("last 3"), the others by calendar ("7 daily").
        by_position = rule.calendar is None
        return [f"{rule.name} {_amount(count)}" if by_position else f"{_amount(count)} {rule.name}"]
    if rule.kind == "within":
        return [f"everything within {spec.duration_of(rule)}"]
    if rule.kind == "window":
        return [rule.reason.format(within=spec.duration_of(rule))]  # "daily within 30d"
    if rule.kind == "every":
        return [
            f"{_amount(every.count)} {plural('interval', every.count)} of cron '{every.cron}'"
            for every in spec.every
        ]
    ids = len({entry_id(e) for e in spec.ids}) if rule.kind == "ids" else 0
    return [f"{counted(ids, 'snapshot')} by id"] if ids else []


def _describe_safety(safety: Safety) -> list[str]:
    # Only what differs from the defaults: the sentence stays short for the common case.
    parts = []
    if safety.min_keep != 1:
        parts.append(f"min_keep {safety.min_keep}")
    if safety.max_expire_fraction != DEFAULT_MAX_EXPIRE_FRACTION:
        parts.append(f"max_expire_fraction {decimal_text(safety.max_expire_fraction)}")
    if tuple(safety.hold_on_alerts) != DEFAULT_HOLD_ON_ALERTS:
        alerts = joined(safety.hold_on_alerts)
        parts.append(f"hold on {alerts}" if alerts else "no alert holds")
    return parts


def policy_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of one policy file: a policy mapping or a list of them."""
    schema = TypeAdapter(Policy | list[Policy]).json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "retention policy file",
        "description": "One retention policy (a mapping) or a list of them; see docs/policies.md "
        "in the retention repository. Durations use restic's units: y, m (months), d, h.",
        **schema,
    }
