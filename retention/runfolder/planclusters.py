"""plan.json in the layout planwrite writes: its head on the first line, then its cluster
entries, one a line, and a closing line. The head is read from the first line alone, and
its clusters (PlanClusters) from the lines after it, each time they are iterated, so a
head of 20,000 clusters costs the memory of one entry. planread.read_head takes this way
for a file in that layout, and its slower one for any other.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError

from retention.core.ids import id_problem
from retention.core.planfile import CLUSTER, FORMAT, HEAD, ClusterEntry, PlanHead
from retention.errors import PlanFileError
from retention.runfolder.planwrite import CLUSTERS_CLOSE, CLUSTERS_OPEN


def problem(where: str, exc: ValidationError) -> PlanFileError:
    """A validation error as a PlanFileError naming ``where`` and the first field wrong."""
    first = exc.errors()[0]
    place = ".".join(str(part) for part in first["loc"]) or "(the entry)"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    message = first["msg"]
    value = first.get("input")
    if place.endswith("Id") and isinstance(value, str) and (why := id_problem(value)):
        # The rule in words, not its regular expression.
        message = f"{value!r} is not an id a plan can carry: {why}"
    return PlanFileError(where, f"{place}: {message}{more}")


def written_head(path: Path) -> tuple[bytes, _Stamp] | None:
    """The first line of a plan.json in the layout planwrite writes (every member but the
    clusters, which follow an entry a line), whole (it ends the file with
    CLUSTERS_CLOSE), and the stamp of the file it was read from; else None."""
    with path.open("rb") as lines:
        first = lines.readline().rstrip(b"\n")
        if not first.endswith(b"," + CLUSTERS_OPEN):
            return None
        lines.seek(0, os.SEEK_END)
        if lines.tell() < len(first) + len(_END):
            return None
        lines.seek(-len(_END), os.SEEK_END)
        return (first, _stamp(lines)) if lines.read() == _END else None


_END = b"\n" + CLUSTERS_CLOSE + b"\n"
# Which file, and which version of it: the clusters are read again after the head, and
# must be that head's (not those of a plan written over it since).
_Stamp = tuple[int, int, int, int]


def _stamp(file: IO[bytes]) -> _Stamp:
    status = os.fstat(file.fileno())
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def head_value(path: Path, first: bytes) -> dict[str, Any]:
    """The first line of a plan in the written layout as a JSON object, its clusters
    empty; PlanFileError when it is not one."""
    try:
        value: Any = orjson.loads(first + CLUSTERS_CLOSE)
    except orjson.JSONDecodeError as exc:
        raise PlanFileError(str(path), f"not a plan file (not JSON: {exc})") from None
    if not isinstance(value, dict):
        raise PlanFileError(str(path), f"it holds a JSON {type(value).__name__}, not a plan")
    return value


def head_of(path: Path, first: bytes, stamp: _Stamp) -> PlanHead:
    """The head on the first line of a plan written by this version, its clusters streamed
    from the lines after it (from the file ``stamp`` names)."""
    value = head_value(path, first)
    if value.get("format") != FORMAT:
        raise PlanFileError(str(path), f"not a {FORMAT} plan (format: {value.get('format')!r})")
    try:
        head = HEAD.validate_python(value)
    except ValidationError as exc:
        raise problem(str(path), exc) from None
    head["clusters"] = PlanClusters(path, stamp)
    return head


class PlanClusters(Collection[ClusterEntry]):
    """The cluster entries of a plan.json in the written layout, read from the file each
    time they are iterated, each validated as it comes (PlanFileError naming the entry):
    a head's clusters at the memory of one entry. The file must still be the one the head
    was read from (``stamp``), unchanged, or PlanFileError says so."""

    def __init__(self, path: Path, stamp: _Stamp) -> None:
        self._path = path
        self._stamp = stamp
        self._count: int | None = None

    def _lines(self) -> Iterator[bytes]:
        where = str(self._path)
        with self._path.open("rb") as lines:
            if _stamp(lines) != self._stamp:
                raise PlanFileError(where, "changed since its head was read: read it again")
            lines.readline()  # the head
            for line in lines:
                text = line.rstrip(b"\n")
                if text == CLUSTERS_CLOSE:
                    if lines.read(1):
                        raise PlanFileError(where, "clusters: lines after the end of the list")
                    return
                yield text.removesuffix(b",")
        raise PlanFileError(where, "clusters: cut short (the file has no end)")

    def __iter__(self) -> Iterator[ClusterEntry]:
        for n, text in enumerate(self._lines()):
            try:
                yield CLUSTER.validate_json(text)
            except ValidationError as exc:
                where = f"{self._path}: clusters[{n}]"
                if exc.errors()[0]["type"] != "json_invalid":
                    raise problem(where, exc) from None
                # Valid JSON, maybe, laid out by hand: say which layout is read.
                why = "after its first line, plan.json holds its clusters an entry a line"
                raise PlanFileError(where, f"not one whole entry on its line ({why})") from None

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self._lines())
        return self._count

    def __contains__(self, entry: object) -> bool:
        return any(entry == c for c in self)

    def __eq__(self, other: object) -> bool:
        """Equal to any list, tuple or PlanClusters of the same entries."""
        if not isinstance(other, list | tuple | PlanClusters):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment] # compared by content, as a list is

    def __repr__(self) -> str:
        return f"PlanClusters({str(self._path)!r})"
