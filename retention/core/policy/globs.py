"""The globs of a policy's ``match`` that find nothing in the fleet discovery found, each
said with its file and line and the closest real names: ``policies/prod.yaml:7:
match.clusters[0]: 'prdo-*' matches none of the 13 clusters and config servers discovery
found; did you mean 'prod-*' (prod-billing, prod-catalog, prod-orders, prod-users)?``

A glob that misses takes clusters out of management without an error, and a run left
unwatched by cron never says so; the plan, the run, doctor and ``retention clusters`` warn
with these words. The suggestion is the glob itself mended: its literal characters edited
(a character changed, dropped, added, or two swapped) the fewest times that make it match
a real name, its wildcards kept; the names it would then match are listed with it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from retention.core.model import Target
from retention.core.policy.loader import LoadedPolicy
from retention.core.wording import counted, joined

# Names listed after a suggestion, and the closest names said when nothing is close enough.
NAMES_LISTED = 5
CLOSEST_LISTED = 3
# An edit per this many literal characters of a glob (at least one) is still a typo; more
# is another name, not a misspelling of this one.
CHARACTERS_PER_EDIT = 3

_STAR, _ANY, _CLASS, _LITERAL = "*", "?", "[", "="
_Token = tuple[str, str]  # (kind, text)


@dataclass(frozen=True)
class Suggestion:
    """A mended glob, the real names it matches, and how many edits it took."""

    glob: str
    names: tuple[str, ...]
    edits: int

    def text(self) -> str:
        """``'prod-*' (prod-billing, prod-orders)``; a glob without a wildcard is its name."""
        if self.names == (self.glob,):
            return repr(self.glob)
        return f"{self.glob!r} ({_listed(self.names, NAMES_LISTED)})"


def glob_warnings(
    policies: Iterable[LoadedPolicy],
    targets: Sequence[Target],
    projects: Sequence[str],
    undiscovered: Collection[str] = (),
) -> list[str]:
    """A warning for each glob of the policies' ``match.projects`` that matches none of
    ``projects`` (the configuration's project ids), and for each glob of ``match.clusters``
    that matches no name of the ``targets`` in the policy's projects and kinds. A policy
    whose projects or kinds leave no target gets no cluster-glob warning (that it matches
    nothing is said already: the plan's unusedPolicies), nor does one that takes a project
    of ``undiscovered`` (whose discovery failed: its names are not known)."""
    found: list[str] = []
    for loaded in policies:
        match = loaded.policy.match
        for index, glob in enumerate(match.projects or []):
            if not any(fnmatchcase(project, glob) for project in projects):
                among = f"none of the configuration's projects ({_listed(projects, NAMES_LISTED)})"
                setting = f"match.projects.{index}"
                found.append(_warning(loaded, setting, glob, among, projects, closest=False))
        scope = [
            t
            for t in targets
            if _takes(match.projects, t.project_id)
            and (match.kinds is None or t.kind in match.kinds)
        ]
        names = sorted({t.name for t in scope})
        if not names or any(_takes(match.projects, p) for p in undiscovered):
            continue
        for index, glob in enumerate(match.clusters or []):
            if not any(fnmatchcase(name, glob) for name in names):
                among = f"none of the {_kinds_noun(scope, match.kinds)} discovery found"
                among += " in its projects" if match.projects is not None else ""
                found.append(_warning(loaded, f"match.clusters.{index}", glob, among, names))
    return found


def _takes(globs: Sequence[str] | None, project: str) -> bool:
    """Whether a policy whose ``match.projects`` is ``globs`` takes ``project``."""
    return globs is None or any(fnmatchcase(project, glob) for glob in globs)


def _warning(
    loaded: LoadedPolicy,
    setting: str,
    glob: str,
    among: str,
    names: Sequence[str],
    *,
    closest: bool = True,
) -> str:
    """``FILE:LINE: match.clusters[0]: 'prdo-*' matches none of ...; did you mean ...?``,
    else the ``closest`` names when asked (an id's closest says nothing)."""
    section, _, index = setting.rpartition(".")
    said = f"{loaded.where(setting)}: {section}[{index}]: {glob!r} matches {among}"
    suggestions = suggest(glob, names)
    if suggestions:
        return f"{said}; did you mean {joined([s.text() for s in suggestions], 'or')}?"
    nearest = closest_names(glob, names) if closest else []
    if not nearest:
        return said
    return f"{said}; the closest: {_listed(nearest, CLOSEST_LISTED)}"


def suggest(glob: str, names: Sequence[str], *, most: int = 2) -> list[Suggestion]:
    """The mended globs closest to ``glob`` that match some of ``names`` (at most ``most``,
    fewest edits first, then those matching the most names): ``prdo-*`` -> ``prod-*``. None
    when every name takes more than an edit per CHARACTERS_PER_EDIT literal characters."""
    tokens = _tokens(glob)
    allowed = max(1, sum(kind in (_LITERAL, _CLASS) for kind, _ in tokens) // CHARACTERS_PER_EDIT)
    mended: dict[str, int] = {}
    for name in names:
        edits, candidate = _align(tokens, name)
        if 0 < edits <= allowed and edits < mended.get(candidate, allowed + 1):
            mended[candidate] = edits
    ranked = sorted(
        (
            Suggestion(candidate, tuple(n for n in names if fnmatchcase(n, candidate)), edits)
            for candidate, edits in mended.items()
        ),
        key=lambda s: (s.edits, -len(s.names), s.glob),
    )
    best = [s for s in ranked if s.names]
    return [s for s in best if s.edits == best[0].edits][:most] if best else []


def closest_names(glob: str, names: Sequence[str], *, most: int = CLOSEST_LISTED) -> list[str]:
    """The ``most`` names that take the fewest edits of ``glob``'s literal characters to
    match, in that order (then by name)."""
    tokens = _tokens(glob)
    return sorted(names, key=lambda name: (_align(tokens, name)[0], name))[:most]


def _tokens(glob: str) -> list[_Token]:
    """``glob`` as fnmatch reads it: stars (a run of them is one), ``?``, ``[...]`` classes
    and literal characters (a ``[`` without its ``]`` is a literal)."""
    tokens: list[_Token] = []
    at = 0
    while at < len(glob):
        char = glob[at]
        if char == "*":
            if not tokens or tokens[-1][0] != _STAR:
                tokens.append((_STAR, "*"))
        elif char == "?":
            tokens.append((_ANY, "?"))
        elif char == "[" and (end := _class_end(glob, at)) is not None:
            tokens.append((_CLASS, glob[at : end + 1]))
            at = end
        else:
            tokens.append((_LITERAL, char))
        at += 1
    return tokens


def _class_end(glob: str, start: int) -> int | None:
    """Where the class opened at ``start`` closes (a ``]`` first in it, after an optional
    ``!``, is one of its characters), or None."""
    at = start + 1
    if at < len(glob) and glob[at] == "!":
        at += 1
    if at < len(glob) and glob[at] == "]":
        at += 1
    end = glob.find("]", at)
    return end if end >= 0 else None


def _escaped(char: str) -> str:
    return f"[{char}]" if char in "*?[" else char


def _align(tokens: Sequence[_Token], name: str) -> tuple[int, str]:
    """The fewest edits of the literal characters (and classes) of ``tokens`` that make
    them match ``name``, wildcards matching freely, and the glob those edits make.

    An edit distance (substitute, drop, add, swap two neighbours: optimal string alignment)
    in which a star takes any run of characters and ``?`` any one for nothing."""
    rows, cols = len(tokens) + 1, len(name) + 1
    never = len(tokens) + len(name) + 1
    cost = [[never] * cols for _ in range(rows)]
    back: list[list[tuple[int, int, str] | None]] = [[None] * cols for _ in range(rows)]
    cost[0][0] = 0

    def reach(i: int, j: int, at: int, came: tuple[int, int, str]) -> None:
        if at < cost[i][j]:
            cost[i][j], back[i][j] = at, came

    for i in range(rows):
        for j in range(cols):
            here = cost[i][j]
            if here == never:
                continue
            after_star = i > 0 and tokens[i - 1][0] == _STAR
            if j < len(name):
                # The star before takes the character for nothing; else it is added.
                added = "" if after_star else _escaped(name[j])
                reach(i, j + 1, here + (0 if after_star else 1), (i, j, added))
            if i == len(tokens):
                continue
            kind, text = tokens[i]
            if kind == _STAR:
                reach(i + 1, j, here, (i, j, text))
                continue
            reach(i + 1, j, here + 1, (i, j, ""))  # dropped
            if j == len(name):
                continue
            char = name[j]
            fits = kind == _ANY or (kind == _CLASS and fnmatchcase(char, text)) or text == char
            kept = text if fits else _escaped(char)
            reach(i + 1, j + 1, here + (0 if fits else 1), (i, j, kept))
            if (
                kind == _LITERAL
                and i + 1 < len(tokens)
                and tokens[i + 1][0] == _LITERAL
                and j + 1 < len(name)
                and text != tokens[i + 1][1]
                and (name[j], name[j + 1]) == (tokens[i + 1][1], text)
            ):
                reach(i + 2, j + 2, here + 1, (i, j, _escaped(name[j]) + _escaped(name[j + 1])))
    pieces: list[str] = []
    i, j = len(tokens), len(name)
    while (came := back[i][j]) is not None:
        i, j, piece = came
        pieces.append(piece)
    return cost[-1][-1], "".join(reversed(pieces))


def _kinds_noun(scope: Sequence[Target], kinds: Sequence[str] | None) -> str:
    """ "13 clusters and config servers", or of the one kind the policy takes."""
    count = len(scope)
    if kinds is not None and set(kinds) == {"cluster"}:
        return counted(count, "cluster")
    if kinds is not None and set(kinds) == {"config-server"}:
        return counted(count, "config server")
    either = " or config server" if count == 1 else " and config servers"
    return counted(count, "cluster") + either


def _listed(names: Sequence[str], listed: int) -> str:
    more = f" and {len(names) - listed} more" if len(names) > listed else ""
    return ", ".join(names[:listed]) + more
