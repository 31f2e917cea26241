"""The list of a plan's clusters that only max_expire_fraction holds (approve.txt beside the
plan): what `retention apply PLAN --approve-from FILE` reads, so that approving many clusters
is a file a person reviews and edits, not a command line too long to paste.

A line is a cluster id or name; ``#`` starts a comment. The planner writes each cluster's
id, then its name, held changes and hold as a comment: ids, unlike names, never hold a
``#`` or a space, and are never shared by two clusters.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from retention.core.guard import APPROVABLE
from retention.core.planfile import ClusterEntry
from retention.core.wording import counted, printable
from retention.errors import UsageError
from retention.runfolder.folder import approve_list_path, partial_path


@dataclass(frozen=True)
class Approvable:
    """A cluster whose holds --approve may lift: its id, its name, how many changes are
    held and why."""

    cluster_id: str
    name: str
    held: int
    reason: str

    @classmethod
    def of(cls, entry: ClusterEntry) -> Approvable | None:
        """The cluster of a plan entry when max_expire_fraction alone holds it."""
        holds = entry["holds"]
        if not holds:
            return None
        if any(h["kind"] not in APPROVABLE for h in holds):
            return None
        reason = "; ".join(h["reason"] for h in holds)
        held = entry["counts"].get("action:held", 0)
        return cls(entry["clusterId"], entry["name"], held, reason)

    def line(self) -> str:
        """Its line in approve.txt."""
        what = f"{self.name}: {counted(self.held, 'held change')}; {self.reason}"
        return f"{self.cluster_id}  # {one_line(what)}"


def write_approve_list(plan_path: Path, clusters: Sequence[Approvable]) -> Path | None:
    """Write the list of ``clusters`` beside the plan at ``plan_path`` (whole or not at all);
    its path, or None (and no file) when there is none to approve."""
    path = approve_list_path(plan_path)
    if not clusters:
        path.unlink(missing_ok=True)  # an older plan's, written over by this one
        return None
    command = apply_command(plan_path, approve_from=path)
    head = [
        f"# The clusters of {plan_path} that only max_expire_fraction holds. After review",
        "# (report.html, Holds), send their held changes, each still with its full grace:",
        f"#   {command}",
        "# Delete the line of a cluster you do not approve. A line is a cluster id or name;",
        '# "#" starts a comment.',
    ]
    text = "\n".join([*head, *(c.line() for c in clusters)]) + "\n"
    partial = partial_path(path)
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
    return path


# Clusters an approve command names on its line; more go through the list beside the plan.
INLINE = 3


def apply_command(
    plan: Path,
    names: Sequence[str] = (),
    *,
    approve_from: Path | None = None,
    approve_all: bool = False,
) -> str:
    """`retention apply PLAN` with the approvals given, each word quoted for a shell."""
    words = ["retention", "apply", shlex.quote(_not_an_option(plan))]
    words += ["--approve-all"] if approve_all else []
    words += [f"--approve {shlex.quote(name)}" for name in names]
    words += ["--approve-from", shlex.quote(_not_an_option(approve_from))] if approve_from else []
    return " ".join(words)


def _not_an_option(path: Path) -> str:
    """``path`` as a command line takes it: ./-x.json, not -x.json (an option to click)."""
    text = str(path)
    return f"./{text}" if text.startswith("-") else text


def approve_names(chosen: Iterable[tuple[str, str]], named: Mapping[str, int]) -> list[str]:
    """What --approve calls each of the ``chosen`` clusters (name, id): its name, or its id
    when ``named`` (how many of the plan's clusters bear each name) says the name is not
    the plan's only one (--approve refuses a name two clusters share)."""
    return [name if named.get(name, 0) == 1 else cluster_id for name, cluster_id in chosen]


def approve_hint(plan: Path, names: Sequence[str]) -> str:
    """The command that approves the clusters ``names`` of the plan at ``plan``: each on the
    line when there are few (INLINE) or no list beside the plan, else its list."""
    listed = approve_list_path(plan)
    if len(names) <= INLINE or not listed.is_file():
        return apply_command(plan, names)
    return apply_command(plan, approve_from=listed)


def one_line(text: str) -> str:
    """``text`` with every character that could end a line written as an escape: a name
    from the service must not start a line of its own in the list (an approval nobody
    wrote). Python's splitlines breaks at more than \\n and \\r."""
    return printable(text).translate(_BREAKS)


# The line breaks printable leaves as they are, and str.splitlines breaks at.
_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\u2028\u2029"})


def read_approve_list(path: Path) -> dict[str, str]:
    """The cluster ids and names ``path`` lists (--approve-from), each with where it is
    (``--approve-from FILE:LINE: NAME``, for the messages); UsageError naming the file when
    it cannot be read or lists none. Lines end at \\n alone (a \\r before it is dropped),
    and a byte order mark a Windows editor writes is not part of the first name."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--approve-from {path}: cannot read it: {why}") from None
    listed: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):
        name = line.split("#", 1)[0].strip()
        if name and name not in listed:
            listed[name] = f"--approve-from {path}:{number}: {printable(name)}"
    if not listed:
        raise UsageError(
            f"--approve-from {path}: it lists no cluster (a line is a cluster id or name; "
            '"#" starts a comment): nothing to approve'
        )
    return listed
