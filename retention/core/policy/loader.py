"""Policies from parsed documents: the ``LoadedPolicy`` a decision takes, the set of them,
and every problem of a document as a value.

The shell finds, reads and parses the files (``retention.config.policyfiles``) and raises
one PolicyError with every problem of every file, so a user fixes a folder of files in one
round. A problem reads ``policies/prod.yaml:7: keep.dayly: unknown field; did you mean
'daily'?``, worded by ``retention.core.validation`` as for the configuration.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.core.policy import rules
from retention.core.policy.holdrecords import HoldRecord, until_instant, until_text
from retention.core.policy.model import Policy
from retention.core.validation import Lines, Loc, Problem, field_path, validate
from retention.core.wording import counted


@dataclass(frozen=True)
class LoadedPolicy:
    """A validated policy and where it came from (the plan file records name and sha256)."""

    policy: Policy
    path: Path
    sha256: str
    index: int = 0
    # The line of each key the file sets, by dotted path ("safety.max_expire_fraction").
    lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The policy's name."""
        return self.policy.name

    def where(self, setting: str) -> str:
        """Where a reader finds ``setting``: ``FILE:LINE``, or the policy's own line with
        "(default KEY)" when the file leaves the setting out."""
        line = self.lines.get(setting)
        if line is not None:
            return f"{self.path}:{line}"
        start = self.lines.get("name")
        at = f"{self.path}:{start}" if start is not None else str(self.path)
        return f"{at} (default {setting.rsplit('.', 1)[-1]})"


class PolicySet:
    """The loaded policies, sorted by name; names are unique."""

    def __init__(self, policies: Iterable[LoadedPolicy]) -> None:
        self._policies = tuple(sorted(policies, key=lambda loaded: loaded.name))
        self._by_name = types.MappingProxyType({p.name: p for p in self._policies})
        if len(self._by_name) != len(self._policies):
            raise ValueError("policy names must be unique")

    @property
    def by_name(self) -> Mapping[str, LoadedPolicy]:
        """The policies by name (read-only)."""
        return self._by_name

    def __iter__(self) -> Iterator[LoadedPolicy]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)

    def __repr__(self) -> str:
        return f"PolicySet({[p.name for p in self._policies]!r})"

    def __reduce__(self) -> tuple[type[PolicySet], tuple[tuple[LoadedPolicy, ...]]]:
        # Planning workers get the policies pickled; a mapping proxy does not pickle.
        return (PolicySet, (self._policies,))

    def matching(self, project_id: str, name: str, kind: str) -> list[LoadedPolicy]:
        """Every policy whose selector matches the target, sorted by name."""
        return [p for p in self._policies if p.policy.match.matches(project_id, name, kind)]


# How soon before its end ``hold_record_warnings`` warns that a hold record ends.
ENDING_SOON = timedelta(days=7)


def hold_record_warnings(
    policies: Iterable[LoadedPolicy], now: datetime, soon: timedelta = ENDING_SOON
) -> list[str]:
    """Warnings about the hold records of ``policies`` at ``now``: each one whose end has
    passed (it protects nothing any more) and each one that ends within ``soon``, as
    ``FILE:LINE: protect.ids[N].until: ...``. They stop nothing: a policy with an ended hold
    is valid, and a person decides whether the hold still stands."""
    found: list[str] = []
    for loaded in policies:
        protect = loaded.policy.protect
        for index, record in protect.records if protect is not None else []:
            if record.until is None:
                continue
            ends = until_instant(record.until)
            where = f"{loaded.where(f'protect.ids.{index}.until')}: protect.ids[{index}].until"
            about = _about(record)
            if ends <= now:
                found.append(
                    f"{where}: the hold on snapshot {record.id} ended {until_text(record.until)} "
                    f"({about}) and protects it no more; remove the entry, or set a later "
                    "until if the hold still stands"
                )
            elif ends - now <= soon:
                found.append(
                    f"{where}: the hold on snapshot {record.id} ends {until_text(record.until)}, "
                    f"within {counted(soon.days, 'day')} ({about}); set a later until if it "
                    "must stay"
                )
    return found


def grace_warnings(policies: Iterable[LoadedPolicy]) -> list[str]:
    """A warning for each policy whose grace has months, as ``FILE:LINE: grace: ...``. In
    restic's units m is months, right for ``within`` but seldom what a grace means: a grace
    of "30m" was nearly always meant as 30 minutes, and keeps snapshots 30 months longer."""
    found: list[str] = []
    for loaded in policies:
        grace = loaded.policy.grace
        if grace.months:
            found.append(
                f"{loaded.where('grace')}: grace: {str(grace)!r} is {grace.words()} (in "
                "durations m is months); if minutes were meant, write hours, e.g. 1h: "
                "durations have no minutes"
            )
    return found


def protect_trail_warnings(policies: Iterable[LoadedPolicy]) -> list[str]:
    """A warning for each policy whose protect rules move (any rule but ids) while
    release_protection is off, as ``FILE:LINE: protect: ...``. Such a rule protects a newer
    snapshot as each is taken (``yearly: 1`` the newest of the year, every day), and the one
    it leaves keeps its doNotDelete: a manual hold no run lifts. A year of daily snapshots
    leaves about 365 of them."""
    found: list[str] = []
    for loaded in policies:
        policy = loaded.policy
        if policy.protect is None or policy.release_protection:
            continue
        moving = [
            rule.name
            for rule in rules.in_section("protect")
            if rule.kind != "ids" and rule.keeps_with(getattr(policy.protect, rule.name))
        ]
        if moving:
            named = " and ".join(moving)
            verb = "moves" if len(moving) == 1 else "move"
            found.append(
                f"{loaded.where('protect')}: protect: {named} {verb} on to each newer "
                "snapshot as it is taken, and the snapshot left behind keeps doNotDelete, "
                "which no run lifts while release_protection is false: about one held "
                "snapshot more for every snapshot taken; set release_protection: true (it "
                "also lifts holds set by hand), or protect by ids"
            )
    return found


def _about(record: HoldRecord) -> str:
    return f"{record.reason}; ticket {record.ticket}" if record.ticket else record.reason


@dataclass(frozen=True)
class Found:
    """A valid policy, with where its name is (for duplicate-name problems)."""

    policy: LoadedPolicy
    line: int | None
    field: str | None


def policies_in(
    path: Path, sha256: str, value: object, lines: Lines
) -> tuple[list[Found], list[Problem]]:
    """The valid policies of one parsed file (its ``value``: a policy or a list of them),
    and a problem for every error in it. ``sha256`` is the digest of the file's bytes."""
    is_list = isinstance(value, list)
    items = value if isinstance(value, list) else [value]
    found: list[Found] = []
    problems: list[Problem] = []
    for index, item in enumerate(items):
        prefix: Loc = (index,) if is_list else ()
        policy, invalid = validate(Policy, item, lines, prefix=prefix)
        problems += invalid
        if policy is not None:
            name: Loc = (*prefix, "name")
            source = LoadedPolicy(policy, path, sha256, index, lines.under(prefix))
            found.append(Found(source, lines.find(name), field_path(name)))
    return found, problems


def duplicate_names(found: Sequence[Found]) -> list[str]:
    """A problem for every policy whose name an earlier one of ``found`` already has."""
    problems: list[str] = []
    first: dict[str, Found] = {}
    for policy in found:
        earlier = first.setdefault(policy.policy.name, policy)
        if earlier is not policy:
            where = _format(earlier.policy.path, earlier.line, earlier.field, "")
            message = f"duplicate policy name {policy.policy.name!r} (also in {where})"
            problems.append(_format(policy.policy.path, policy.line, policy.field, message))
    return problems


def _format(path: Path, line: int | None, field: str | None, message: str) -> str:
    return Problem(line, field, message).at(str(path))
