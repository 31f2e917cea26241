"""Reading a plan back: plan.json and the decisions beside it, validated by the model of
core/planfile.py (planwrite.py writes them).

plan.json has one layout: its head on the first line (every member but the clusters), then
its cluster entries, one a line, then a closing line. ``open_plan`` reads the head; the
``PlanFile`` it returns holds the head as plain values and reads the rest only when asked,
from the file it was opened from (a plan written over it since is refused), so a plan of
20,000 clusters costs the memory of one entry. Its decisions (decisions.jsonl.zst, zstd
frames of JSON lines) are checked against the digest and count the head gives: a plan is
never read with another plan's decisions. A plan of format v1, or in another layout (saved
again by an editor), is refused whole. Every problem is a PlanFileError that names the
file, the entry and the field. The decisions are searched with a cheap text test before a
line is parsed.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar, cast

import orjson
import zstandard
from pydantic import ValidationError

from retention.core.ids import id_problem
from retention.core.planfile import (
    CHANGE,
    CLUSTER,
    DECISION,
    FORMAT,
    HEAD,
    OLD_FORMAT,
    Change,
    ClusterEntry,
    DecisionRecord,
    ListName,
    PlanHead,
    list_of,
)
from retention.core.wording import printable
from retention.errors import PlanFileError
from retention.runfolder.folder import decisions_path
from retention.runfolder.planrecords import change_record
from retention.runfolder.planwrite import CLUSTERS_CLOSE, CLUSTERS_OPEN

# Blocks read from a decisions file: large, as the writer's.
READ_BLOCK = 1 << 20
_NO_BODY = b'"body":null'
_END = b"\n" + CLUSTERS_CLOSE + b"\n"
# Which file, and which version of it: the clusters are read after the head, and must be
# that head's (not those of a plan written over it since).
_Stamp = tuple[int, int, int, int]


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


def open_plan(path: Path, *, copy_of: Path | None = None) -> PlanFile:
    """The plan at ``path``: its head read and validated, the rest left in the files.
    ``copy_of``: ``path`` is a copy of that plan, which its problems name.

    Raises PlanFileError naming the file and the first field that is wrong (a plan of
    another format or layout, or one cut short, is refused whole), or OSError."""
    shown = copy_of or path
    with path.open("rb") as lines:
        first = lines.readline().rstrip(b"\n")
        lines.seek(0, os.SEEK_END)
        size = lines.tell()
        lines.seek(max(0, size - len(_END)))
        whole = size >= len(first) + len(_END) and lines.read() == _END
        stamp = _stamp(lines)
    if not first.endswith(b"," + CLUSTERS_OPEN) or not whole:
        raise PlanFileError(str(shown), _not_written_here(path, first, whole=whole))
    value = _head_value(shown, first)
    if value.get("format") != FORMAT:
        raise PlanFileError(str(shown), f"not a {FORMAT} plan (format: {value.get('format')!r})")
    del value["clusters"]
    try:
        head = HEAD.validate_python(value)
    except ValidationError as exc:
        raise problem(str(shown), exc) from None
    return PlanFile(path, head, stamp, shown, clusters_at=len(first) + 1)


def _not_written_here(path: Path, first: bytes, *, whole: bool) -> str:
    """Why a file is not a plan this version reads: another format (v1), a plan saved again
    in another layout, a plan cut short, or not a plan at all."""
    try:
        value: Any = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        if first.endswith(b"," + CLUSTERS_OPEN) and not whole:
            return "clusters: cut short (the file has no end)"
        return f"not a plan file (not JSON: {exc})"
    if not isinstance(value, dict):
        return f"it holds a JSON {type(value).__name__}, not a plan object"
    if (found := value.get("format")) == OLD_FORMAT:
        return (
            f"this plan is of format {found}, written by an older retention; this version "
            f"reads {FORMAT} plans only. Run `retention plan` again"
        )
    if found != FORMAT:
        return f"not a {FORMAT} plan (format: {found!r})"
    return (
        "not in the layout retention writes (its head on the first line, then its clusters "
        "an entry a line): saved again by an editor? Run `retention plan` again"
    )


def _stamp(file: IO[bytes]) -> _Stamp:
    status = os.fstat(file.fileno())
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _head_value(path: Path, first: bytes) -> dict[str, Any]:
    """The first line of a plan as a JSON object, its clusters empty; PlanFileError when it
    is not one."""
    try:
        value: Any = orjson.loads(first + CLUSTERS_CLOSE)
    except orjson.JSONDecodeError as exc:
        raise PlanFileError(str(path), f"not a plan file (not JSON: {exc})") from None
    if not isinstance(value, dict):
        raise PlanFileError(str(path), f"it holds a JSON {type(value).__name__}, not a plan")
    return value


T = TypeVar("T")


class Once(Generic[T]):
    """A stream read from a file as it is consumed, once: a second pass would read the file
    again, which the apply path promises not to (a bug, so an error)."""

    def __init__(self, items: Iterator[T], what: str) -> None:
        self._items, self._what, self._read = items, what, False

    def __iter__(self) -> Iterator[T]:
        if self._read:
            raise RuntimeError(f"{self._what} is read once")
        self._read = True
        return self._items


@dataclass(frozen=True)
class OpenedPlan:
    """A plan opened to be applied: its file, and its cluster entries and changes (those of
    ``changes`` and ``held``, each with its list), streams that read the files once as
    they are consumed."""

    file: PlanFile
    clusters: Once[ClusterEntry]
    changes: Once[tuple[ListName, Change]]

    @property
    def head(self) -> PlanHead:
        """The plan's head."""
        return self.file.head


@dataclass(frozen=True)
class PlanFile:
    """A plan opened by ``open_plan``: its head, and the files it reads the rest from, each
    time it is asked (a read each: nothing here is cached)."""

    path: Path
    head: PlanHead
    stamp: _Stamp
    # The file its problems name: ``path``, or the plan it is a copy of.
    shown: Path
    # Where its cluster entries start: after the head's line.
    clusters_at: int

    @property
    def decisions(self) -> Path:
        """Its decisions file, beside it."""
        return decisions_path(self.path)

    def read_clusters(self) -> Iterator[ClusterEntry]:
        """Its cluster entries, in plan order, each validated as it is read (PlanFileError
        naming the entry, or saying the file changed since it was opened)."""
        for n, text in enumerate(self._cluster_lines()):
            try:
                yield CLUSTER.validate_json(text)
            except ValidationError as exc:
                where = f"{self.shown}: clusters[{n}]"
                if exc.errors()[0]["type"] != "json_invalid":
                    raise problem(where, exc) from None
                # Valid JSON, maybe, laid out by hand: say which layout is read.
                why = "after its first line, plan.json holds its clusters an entry a line"
                raise PlanFileError(where, f"not one whole entry on its line ({why})") from None

    def _cluster_lines(self) -> Iterator[bytes]:
        where = str(self.shown)
        with self.path.open("rb") as lines:
            if _stamp(lines) != self.stamp:
                raise PlanFileError(where, "changed since its head was read: read it again")
            lines.seek(self.clusters_at)  # past the head, read once already
            for line in lines:
                text = line.rstrip(b"\n")
                if text == CLUSTERS_CLOSE:
                    if lines.read(1):
                        raise PlanFileError(where, "clusters: lines after the end of the list")
                    return
                yield text.removesuffix(b",")
        raise PlanFileError(where, "clusters: cut short (the file has no end)")

    def document(self) -> dict[str, Any]:
        """The whole plan as one JSON object in the file's order of members, its clusters
        an iterator that reads them (planwrite.pretty_json writes it an entry at a time)."""
        document: dict[str, Any] = {}
        for key, value in self.head.items():
            document[key] = value
            if key == "summary":
                document["clusters"] = self.read_clusters()
        return document

    def opened(self) -> OpenedPlan:
        """This plan opened to be applied: its clusters and changes as streams, read once."""
        return OpenedPlan(
            self,
            Once(self.read_clusters(), f"{self.shown}: the clusters"),
            Once(self.read_candidates(), f"{self.shown}: the changes"),
        )

    def read_list(self, name: ListName) -> Iterator[Change]:
        """The entries of list ``name`` (changes, held, advisory), each validated, in plan
        order (project, kind, cluster; snapshot id within a cluster). Raises
        PlanFileError naming the entry that is wrong."""
        for cluster in self._cluster_changes():
            yield from (change for listed, change in cluster if listed == name)

    def read_candidates(self) -> Iterator[tuple[ListName, Change]]:
        """The entries of ``changes`` and ``held``, each with its list, in plan order:
        what apply may send (core.guard.to_send chooses)."""
        for cluster in self._cluster_changes():
            yield from ((listed, c) for listed, c in cluster if listed in ("changes", "held"))

    def _cluster_changes(self) -> Iterator[list[tuple[ListName, Change]]]:
        """Each cluster's changes, in plan order, sorted by snapshot id, each with the list
        it belongs to; the decisions file checked against the head's digest and count
        (PlanFileError when it is not this plan's)."""
        records = (self._numbered_change(n, line) for n, line in enumerate(self._checked()))
        changes = (found for found in records if found is not None)
        for _cluster, group in itertools.groupby(changes, key=operator.itemgetter(2)):
            yield sorted(((listed, c) for listed, c, _ in group), key=lambda f: f[1]["snapshotId"])

    def _numbered_change(
        self, n: int, line: bytes
    ) -> tuple[ListName, Change, tuple[str, str, str]] | None:
        """The change of the decision on line ``n`` (with its list, and its cluster's
        project, kind and id), or None when it has none; PlanFileError naming the line when
        it is not valid. A line without a body is passed over unparsed: most are, and the
        file's digest already says it is the plan's (encode_line writes ``"body":null``,
        which no JSON string holds)."""
        if _NO_BODY in line:
            return None
        where = f"{decisions_path(self.shown)}: line {n + 1}"
        try:
            record = DECISION.validate_json(line)
        except ValidationError as exc:
            raise problem(where, exc) from None
        if (listed := list_of(record)) is None:
            return None
        if "grace" not in record:
            raise PlanFileError(where, "grace: missing (a change needs its cluster's grace)")
        raw = change_record(record, record["grace"])
        try:
            change = CHANGE.validate_python(raw)
        except ValidationError as exc:
            named = f" (snapshot {printable(str(record['snapshotId']))})"
            raise problem(where + named, exc) from None
        return listed, change, (record["projectId"], record["kind"], record["clusterId"])

    def _checked(self) -> Iterator[bytes]:
        """The lines of the decisions, checked at the end against the digest and count the
        head gives (PlanFileError: another plan's decisions, or a file cut short)."""
        expected = self.head.get("decisions")
        shown = decisions_path(self.shown)
        if expected is None:
            raise PlanFileError(
                str(self.shown), "decisions: missing (a v2 plan names its decisions file)"
            )
        digest, count = hashlib.sha256(), 0
        try:
            with self.decisions.open("rb") as raw:
                for line in _decompressed_lines(raw, digest.update):
                    count += 1
                    yield line
        except OSError as exc:
            raise PlanFileError(str(shown), f"cannot read the plan's decisions: {exc}") from None
        if (digest.hexdigest(), count) != (expected["sha256"], expected["records"]):
            raise PlanFileError(
                str(shown),
                f"not the decisions of {self.shown.name} ({count} records with sha256 "
                f"{digest.hexdigest()[:12]}..., the plan names {expected['records']} with "
                f"{expected['sha256'][:12]}...): plan again",
            )


class _Seen:
    """A binary file whose every block read is also given to ``seen`` (a digest's update)."""

    def __init__(self, raw: IO[bytes], seen: Callable[[bytes], object]) -> None:
        self._raw, self._seen = raw, seen

    def read(self, size: int = -1) -> bytes:
        block = self._raw.read(size)
        self._seen(block)
        return block


def _decompressed_lines(
    raw: IO[bytes], seen: Callable[[bytes], object] | None = None
) -> Iterator[bytes]:
    """The non-empty lines of a stream of zstd frames, a block at a time; ``seen`` is
    given every compressed block."""
    source = raw if seen is None else cast("IO[bytes]", _Seen(raw, seen))
    reader = zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True)
    rest = b""
    try:
        for block in iter(lambda: reader.read(READ_BLOCK), b""):
            data = rest + block if rest else block
            *whole, rest = data.split(b"\n")
            yield from (line for line in whole if line.strip())
    except zstandard.ZstdError as exc:
        raise OSError(f"not zstd-compressed JSON lines ({exc})") from None
    if rest.strip():
        yield rest


# ---- a decisions file alone (explain, the report, undo's checks) ------------------------


def decision_lines(path: Path) -> Iterator[bytes]:
    """The non-empty lines of a decisions file (zstd frames of JSON lines), without their
    newline; OSError when it cannot be read."""
    with path.open("rb") as raw:
        yield from _decompressed_lines(raw)


def read_decisions(path: Path) -> Iterator[DecisionRecord | None]:
    """The records of a decisions file, validated; None for a line that is not one (cut
    short by a kill, or edited)."""
    for line in decision_lines(path):
        try:
            yield DECISION.validate_json(line)
        except ValidationError:
            yield None


def find_decision(path: Path, snapshot_id: str) -> DecisionRecord | None:
    """The decision for one snapshot in a decisions file, or None (streamed: a cheap text
    test before a line is parsed)."""
    for line in _lines_naming(path, snapshot_id):
        try:
            record = DECISION.validate_json(line)
        except ValidationError as exc:
            raise problem(f"{path}: the line of snapshot {snapshot_id}", exc) from None
        if record["snapshotId"] == snapshot_id:
            return record
    return None


def cluster_decisions(path: Path, record: DecisionRecord) -> Iterator[DecisionRecord | None]:
    """The records of the cluster (or config server) of ``record`` in a decisions file,
    ``record`` included; None for a line that names the cluster but is not a valid record.
    Streamed, with a cheap text test before a line is parsed."""
    key = (record["projectId"], record["kind"], record["clusterId"])
    for line in _lines_naming(path, record["clusterId"]):
        try:
            found = DECISION.validate_json(line)
        except ValidationError:
            yield None
            continue
        if (found["projectId"], found["kind"], found["clusterId"]) == key:
            yield found


def _lines_naming(path: Path, value: str) -> Iterator[bytes]:
    """The lines of a JSON-lines file that hold ``value`` as a JSON string: a cheap text
    test that spares parsing every other line."""
    quoted = orjson.dumps(value)  # as encode_line spells it
    yield from (line for line in decision_lines(path) if quoted in line)
