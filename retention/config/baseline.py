"""The base side of a review: the policies as they are on a git ref (``git:REF``) of the
repository the policies folder lives in, or in a folder or file given, read and checked by
the same parser as the current ones (config/policyfiles.py).

A git ref is read with the git binary (``rev-parse``, ``ls-tree``, ``cat-file``), never
checked out: the working copy is left as it is, whatever its state. The policies source of
the configuration (a folder, or a list of files) names what to read at the ref, each path
taken relative to the top of its repository; a folder is read flat, ``*.yaml`` and
``*.yml`` only, hidden entries left out, as the loader reads a folder on disk.

Every problem names its side ("base policies (git:origin/main): policies/prod.yaml:12:
..." or "current policies: ..."), so a review that cannot start says which side to fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from retention.config.policyfiles import POLICY_SUFFIXES, load_policies, parse_policies
from retention.core.policy.loader import PolicySet
from retention.errors import PolicyError, UsageError

GIT_PREFIX = "git:"
CURRENT_SIDE = "current policies"
# No git command of a review should take long; one that does is stuck (a credential prompt
# of a filter, a lock), and a review waiting on it forever helps nobody.
_GIT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Baseline:
    """The base policies of a review and where they came from."""

    spec: str  # as given: "git:origin/main", "../policies-old"
    kind: Literal["git", "path"]
    where: str  # the repository's top folder, or the folder or file read
    policies: PolicySet
    ref: str | None = None
    commit: str | None = None  # the commit the ref named when it was read

    def entry(self) -> dict[str, Any]:
        """The base as the JSON of diff and forecast give it: where it came from and its
        policies' names."""
        return {
            "spec": self.spec,
            "kind": self.kind,
            "ref": self.ref,
            "commit": self.commit,
            "where": self.where,
            "policies": sorted(p.name for p in self.policies),
        }


def labelled(side: str, load: Callable[[], PolicySet]) -> PolicySet:
    """``load()``'s policies; its PolicyError again, each problem prefixed with ``side``."""
    try:
        return load()
    except PolicyError as exc:
        problems = [f"{side}: {problem}" for problem in exc.problems]
        raise PolicyError(f"{side}: {exc}", problems) from None


def base_side(spec: str) -> str:
    """How messages name the base side: "base policies (git:origin/main)"."""
    return f"base policies ({spec})"


def current_policies(source: Path | Sequence[Path]) -> PolicySet:
    """The policies of the configuration as they are on disk."""
    return labelled(CURRENT_SIDE, lambda: load_policies(source))


def load_baseline(spec: str, source: Path | Sequence[Path]) -> Baseline:
    """The base policies ``spec`` names: ``git:REF`` reads ``source`` (the configuration's
    policies) at REF; anything else is a folder or file to load. UsageError (exit 2) when
    the ref cannot be read, PolicyError (exit 2) when its policies do not validate."""
    if not spec.startswith(GIT_PREFIX):
        path = Path(spec)
        if not path.exists():
            raise UsageError(f"--base {spec}: no such folder or file")
        policies = labelled(base_side(spec), lambda: load_policies(path))
        return Baseline(spec, "path", str(path), policies)
    ref = spec.removeprefix(GIT_PREFIX)
    if not ref or ref.startswith("-"):
        raise UsageError(f"--base {spec}: give a git ref after git:, e.g. git:origin/main")
    paths = [Path(source)] if isinstance(source, str | Path) else [Path(s) for s in source]
    repo = _repository(paths, spec)
    commit = repo.commit(ref, spec)
    policies = labelled(base_side(spec), lambda: repo.policies_at(commit, paths, ref))
    return Baseline(spec, "git", str(repo.top), policies, ref, commit)


def _repository(paths: list[Path], spec: str) -> _Repository:
    """The git repository the policies live in; UsageError when there is none (or git)."""
    if not paths:
        raise UsageError(f"--base {spec}: the configuration names no policy files")
    git = shutil.which("git")
    if git is None:
        raise UsageError(f"--base {spec}: git is not installed (no git on PATH)")
    first = paths[0].resolve()
    start = first if first.is_dir() else first.parent
    while not start.is_dir() and start != start.parent:
        start = start.parent  # a folder deleted in the working copy: its nearest parent
    repo = _Repository(git, start)
    done = repo.run("rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise UsageError(
            f"--base {spec}: the policies ({paths[0]}) are not in a git repository; "
            "give --base a folder or a file instead"
        )
    repo.top = Path(done.stdout.decode().strip()).resolve()
    return repo


class _Repository:
    """A git repository read through the git binary, from its top folder."""

    def __init__(self, git: str, top: Path) -> None:
        self.git = git
        self.top = top

    def run(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        """git ARGS in the repository, its output captured; never a prompt."""
        try:
            # The arguments are ours and the ref is passed after --end-of-options or as
            # part of an object name, so no argument of the user is read as an option.
            return subprocess.run(  # noqa: S603
                [self.git, "-C", str(self.top), *args],
                capture_output=True,
                check=False,
                timeout=_GIT_TIMEOUT,
                env=_git_environment(),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"cannot run git in {self.top}: {exc}") from None

    def commit(self, ref: str, spec: str) -> str:
        """The commit ``ref`` names; UsageError when it names none."""
        done = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        if done.returncode != 0:
            raise UsageError(
                f"--base {spec}: no commit {ref!r} in the git repository at {self.top} "
                "(in CI, fetch the history: fetch-depth: 0)"
            )
        return done.stdout.decode().strip()

    def policies_at(self, commit: str, paths: list[Path], ref: str) -> PolicySet:
        """The policies ``paths`` (folders or files of the working copy) hold at ``commit``."""
        problems: list[str] = []
        files: list[tuple[Path, bytes]] = []
        for path in paths:
            try:
                relative = PurePosixPath(path.resolve().relative_to(self.top).as_posix())
            except ValueError:
                problems.append(f"{path}: not in the git repository at {self.top}")
                continue
            files += self._files(commit, relative, ref, problems)
        return parse_policies(files, problems)

    def _files(
        self, commit: str, relative: PurePosixPath, ref: str, problems: list[str]
    ) -> list[tuple[Path, bytes]]:
        """The policy files at ``relative`` (a folder read flat, or a file) with their bytes."""
        shown = str(relative) if str(relative) != "." else "the repository's top folder"
        entries = self._tree(commit, None if str(relative) == "." else str(relative))
        if str(relative) != ".":
            if not entries:
                problems.append(f"{shown}: no such file or directory at {ref}")
                return []
            own = [(kind, obj) for kind, obj, name in entries if name == str(relative)]
            if own and own[0][0] == "blob":
                return [(Path(relative), self._blob(own[0][1]))]
            entries = self._tree(commit, f"{relative}/")
        found = [
            (Path(name), obj)
            for kind, obj, name in entries
            if kind == "blob"
            and PurePosixPath(name).suffix in POLICY_SUFFIXES
            and not PurePosixPath(name).name.startswith(".")
        ]
        if not found:
            problems.append(f"{shown}: no policy files (*.yaml, *.yml) in this directory at {ref}")
        return [(path, self._blob(obj)) for path, obj in found]

    def _tree(self, commit: str, path: str | None) -> list[tuple[str, str, str]]:
        """``git ls-tree`` of ``path`` at ``commit``: (type, object, path) of each entry."""
        args = ["ls-tree", "-z", commit, "--"] + ([path] if path is not None else [])
        done = self.run(*args)
        if done.returncode != 0:
            raise UsageError(f"git ls-tree failed in {self.top}: {_stderr(done)}")
        entries = []
        for line in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
            if line:
                meta, _, name = line.partition("\t")
                _mode, kind, obj = meta.split(" ")
                entries.append((kind, obj, name))
        return entries

    def _blob(self, obj: str) -> bytes:
        done = self.run("cat-file", "blob", obj)
        if done.returncode != 0:
            raise UsageError(f"git cat-file failed in {self.top}: {_stderr(done)}")
        return done.stdout


def _stderr(done: subprocess.CompletedProcess[bytes]) -> str:
    return " ".join(done.stderr.decode("utf-8", "replace").split())[:300]


def _git_environment() -> dict[str, str]:
    """The environment for git: ours, without a terminal prompt (a review runs in CI)."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def both_sides(source: Path | list[Path], base: str) -> tuple[PolicySet, Baseline]:
    """The current and the base policies; when both sides have problems, one PolicyError
    lists them all, each named with its side."""
    current: PolicySet | None = None
    baseline: Baseline | None = None
    failed: list[PolicyError] = []
    try:
        current = current_policies(source)
    except PolicyError as exc:
        failed.append(exc)
    try:
        baseline = load_baseline(base, source)
    except PolicyError as exc:
        failed.append(exc)
    if failed:
        message = "; ".join(str(exc) for exc in failed)
        raise PolicyError(message, [p for exc in failed for p in exc.problems])
    if current is None or baseline is None:  # only when failed, handled above
        raise AssertionError("a side of the review was not loaded")
    return current, baseline
