"""Finding, reading and parsing policy files; the core's loader turns what they hold into
policies, and every problem of every file ends up in one PolicyError (exit code 2).

A folder is read flat (not recursively), ``*.yaml`` and ``*.yml`` only, hidden entries left
out: those are editor backups and Kubernetes ConfigMap internals (``..data``), not policies.
A file that cannot be read is a problem reported with all the others, not a stop.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from retention.core import yamldoc
from retention.core.policy.loader import (
    Found,
    PolicySet,
    duplicate_names,
    grace_warnings,
    hold_record_warnings,
    policies_in,
    protect_trail_warnings,
)
from retention.core.validation import in_file_order
from retention.core.wording import counted
from retention.errors import PolicyError

POLICY_SUFFIXES = (".yaml", ".yml")
EXPECTED = "a policy (a mapping) or a list of policies"


def load_policies(source: Path | str | Sequence[Path | str]) -> PolicySet:
    """Load a directory of ``*.yaml``/``*.yml`` files (not recursive) or the files given.

    Raises PolicyError listing every problem found, in every file.
    """
    problems: list[str] = []
    files: list[tuple[Path, bytes]] = []
    for path in _policy_files(source, problems):
        try:
            files.append((path, path.read_bytes()))
        except OSError as exc:
            problems.append(f"{path}: cannot read the file ({exc.strerror or exc})")
    return parse_policies(files, problems)


def parse_policies(files: Iterable[tuple[Path, bytes]], unread: Sequence[str] = ()) -> PolicySet:
    """The policies in ``files`` (each its path and the bytes read from it).

    ``unread`` are the problems met while finding and reading the files, so that every
    problem is reported in one round. Raises PolicyError listing them all.
    """
    problems = list(unread)
    loaded: list[Found] = []
    for path, data in files:
        document, found = yamldoc.parse(data, EXPECTED, (dict, list))
        if document is not None:
            sha256 = hashlib.sha256(data).hexdigest()
            policies, invalid = policies_in(path, sha256, document.value, document.lines)
            loaded += policies
            found += invalid
        problems += [problem.at(str(path)) for problem in in_file_order(found)]
    problems += duplicate_names(loaded)
    if problems:
        raise PolicyError(f"{counted(len(problems), 'problem')} in policies", problems)
    return PolicySet(found.policy for found in loaded)


def _policy_files(source: Path | str | Sequence[Path | str], problems: list[str]) -> list[Path]:
    given = [Path(source)] if isinstance(source, str | os.PathLike) else [Path(s) for s in source]
    if not given:
        problems.append("no policy files given")
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            found = _directory_files(path, problems)
            if found is not None and not found:
                problems.append(f"{path}: no policy files (*.yaml, *.yml) in this directory")
            files += found or []
        elif path.exists():
            files.append(path)
        else:
            problems.append(f"{path}: no such file or directory")
    return files


def _directory_files(directory: Path, problems: list[str]) -> list[Path] | None:
    try:
        entries = sorted(directory.iterdir())
    except OSError as exc:
        problems.append(f"{directory}: cannot list the directory ({exc.strerror or exc})")
        return None
    return [
        entry
        for entry in entries
        if entry.suffix in POLICY_SUFFIXES and not entry.name.startswith(".") and entry.is_file()
    ]


@dataclass(frozen=True)
class Validated:
    """Policies that load, and what is worth a warning in them (each with its event: a
    grace in months, hold records that ended or end soon, protect rules that leave a
    trail)."""

    policies: PolicySet
    warnings: list[tuple[str, str]]

    def document(self) -> dict[str, Any]:
        """validate --format json."""
        return {
            "command": "validate",
            "exitCode": 0,
            "warnings": [warning for warning, _ in self.warnings],
            "policies": [
                {
                    "name": p.name,
                    "file": str(p.path),
                    "sha256": p.sha256,
                    "description": p.policy.describe(),
                }
                for p in self.policies
            ],
        }

    def lines(self) -> list[str]:
        """What a person reads: how many are valid, and each file with what it does."""
        count = len(self.policies)
        said = f"{counted(count, 'policy')} {'is' if count == 1 else 'are'} valid:"
        return [said, *(f"  {p.path}: {p.policy.describe()}" for p in self.policies)]


def validate_policies(source: Path | Sequence[Path], now: datetime) -> Validated:
    """The policies at ``source``, and their warnings as of ``now``; PolicyError (exit 2)
    listing every problem when they do not load."""
    policies = load_policies(source)
    return Validated(policies, policy_warnings(policies, now))


def policy_warnings(policies: PolicySet, now: datetime) -> list[tuple[str, str]]:
    """What is worth a warning in ``policies`` as of ``now`` without asking the API, each
    with its event: a grace in months, hold records that ended or end soon, protect rules
    that leave a trail. validate says them; a plan, a run and doctor say them too, with the
    globs that match nothing (retention.core.policy.globs), which need discovery."""
    found = [(w, "grace-warning") for w in grace_warnings(policies)]
    found += [(w, "hold-warning") for w in hold_record_warnings(policies, now)]
    found += [(w, "protect-warning") for w in protect_trail_warnings(policies)]
    return found
