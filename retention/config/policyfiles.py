"""Finding and reading policy files; the policy package turns their bytes into policies.

A folder is read flat (not recursively), ``*.yaml`` and ``*.yml`` only, hidden entries left
out: those are editor backups and Kubernetes ConfigMap internals (``..data``), not policies.
A file that cannot be read is a problem reported with all the others, not a stop.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from retention.core.policy.loader import PolicySet, parse_policies

POLICY_SUFFIXES = (".yaml", ".yml")


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
