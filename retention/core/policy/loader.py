"""Policies from the bytes of their files: every problem of every file at once.

A problem reads ``policies/prod.yaml:7: keep.dayly: unknown field; did you mean 'daily'?``;
YAML and pydantic's errors are worded by ``retention.config.yamldoc``, the same way as for the
configuration. All problems end up in one PolicyError (exit code 2) so a user fixes a folder
of files in one round. Finding and reading the files is the shell's (config/policyfiles.py).
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.config import yamldoc
from retention.core.policy.holds import HoldRecord, until_instant, until_text
from retention.core.policy.model import Policy
from retention.errors import PolicyError

Loc = yamldoc.Loc
EXPECTED = "a policy (a mapping) or a list of policies"


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


# How soon before its end ``hold_warnings`` warns that a hold record ends.
ENDING_SOON = timedelta(days=7)


def hold_warnings(
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
                days = soon.days
                found.append(
                    f"{where}: the hold on snapshot {record.id} ends {until_text(record.until)}, "
                    f"within {days} days ({about}); set a later until if it must stay"
                )
    return found


def _about(record: HoldRecord) -> str:
    return f"{record.reason}; ticket {record.ticket}" if record.ticket else record.reason


def parse_policies(files: Iterable[tuple[Path, bytes]], unread: Sequence[str] = ()) -> PolicySet:
    """The policies in ``files`` (each its path and the bytes read from it).

    ``unread`` are the problems met while finding and reading the files, so that every
    problem is reported in one round. Raises PolicyError listing them all.
    """
    problems = list(unread)
    loaded: list[_Found] = []
    for path, data in files:
        _load_file(path, data, loaded, problems)
    problems += _duplicate_names(loaded)
    if problems:
        count = len(problems)
        raise PolicyError(f"{count} problem{'s' if count > 1 else ''} in policies", problems)
    return PolicySet(found.policy for found in loaded)


@dataclass(frozen=True)
class _Found:
    """A valid policy, with where its name is (for duplicate-name problems)."""

    policy: LoadedPolicy
    line: int | None
    field: str | None


def _load_file(path: Path, data: bytes, loaded: list[_Found], problems: list[str]) -> None:
    document, found = yamldoc.parse(data, EXPECTED, (dict, list))
    if document is not None:
        found += _validate(path, data, document, loaded)
    problems += [problem.at(str(path)) for problem in yamldoc.in_file_order(found)]


def _validate(
    path: Path, data: bytes, document: yamldoc.Document, loaded: list[_Found]
) -> list[yamldoc.Problem]:
    digest = hashlib.sha256(data).hexdigest()
    is_list = isinstance(document.value, list)
    items = document.value if is_list else [document.value]
    found: list[yamldoc.Problem] = []
    for index, item in enumerate(items):
        prefix: Loc = (index,) if is_list else ()
        policy, problems = yamldoc.validate(Policy, item, document.lines, prefix=prefix)
        found += problems
        if policy is not None:
            name: Loc = (*prefix, "name")
            source = LoadedPolicy(policy, path, digest, index, document.lines.under(prefix))
            loaded.append(_Found(source, document.lines.find(name), yamldoc.field_path(name)))
    return found


def _duplicate_names(loaded: list[_Found]) -> list[str]:
    problems: list[str] = []
    first: dict[str, _Found] = {}
    for found in loaded:
        earlier = first.setdefault(found.policy.name, found)
        if earlier is not found:
            where = _format(earlier.policy.path, earlier.line, earlier.field, "")
            message = f"duplicate policy name {found.policy.name!r} (also in {where})"
            problems.append(_format(found.policy.path, found.line, found.field, message))
    return problems


def _format(path: Path, line: int | None, field: str | None, message: str) -> str:
    return yamldoc.Problem(line, field, message).at(str(path))
