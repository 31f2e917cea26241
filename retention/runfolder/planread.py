"""Reading plan.json and its decisions back, validated by the model of core/planfile.py.

The shell's side of the plan file: the core (retention.core.planfile) defines the model,
planwrite.py writes the files, this module opens them.

A plan of format v2 is its head (plan.json, small) and decisions.jsonl.zst, streamed a
block at a time: its changes are the decisions that carry a body, and they are checked
against the digest and count plan.json gives, so a plan is never applied with another
plan's decisions. A plan of format v1 (its lists in plan.json, plain decisions.jsonl) is
still read, streamed entry by entry in the layout v1 wrote; apply refuses it
(core.guard.plan_refusal). The decisions are searched with a cheap text test before a line
is parsed. Every problem is a PlanFileError that names the file, the entry and the field.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import operator
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import orjson
import zstandard
from pydantic import TypeAdapter, ValidationError

from retention.core.planfile import (
    CHANGE,
    DECISION,
    FORMAT,
    HEAD,
    LISTS,
    OLD_FORMAT,
    Change,
    DecisionRecord,
    DecisionsEntry,
    ListName,
    PlanHead,
    list_of,
)
from retention.core.wording import printable
from retention.errors import PlanFileError
from retention.runfolder.folder import decisions_path
from retention.runfolder.planclusters import head_of, head_value, problem, written_head
from retention.runfolder.planrecords import change_record

# Blocks read from a decisions file: large, as the writer's.
READ_BLOCK = 1 << 20
_NO_BODY = b'"body":null'
DECISIONS_ENTRY = TypeAdapter(DecisionsEntry)

# ---- reading ---------------------------------------------------------------------------


def _head_lines(path: Path) -> bytes | None:
    """The file without its three lists, when it is in the written layout; else None."""
    kept: list[bytes] = []
    skipping = False
    openings = {b'  "' + n.encode() + b'": [' for n in LISTS}
    empty = {o + b"]" for o in openings}  # an empty list, written on one line
    with path.open("rb") as lines:
        if lines.read(2) != b"{\n":
            return None
        kept.append(b"{\n")
        for line in lines:
            stripped = line.rstrip(b"\n")
            if skipping:
                skipping = stripped not in (b"  ],", b"  ]")
                continue
            if stripped in openings:
                skipping = True
                continue
            if stripped.rstrip(b",") in empty:
                continue
            kept.append(line)
    return b"".join(kept)


def read_head(path: Path) -> PlanHead:
    """A plan file's head, validated; its clusters are read from the file as they are
    iterated (PlanClusters), and a v1 plan's lists are skipped line by line (flat memory).

    Raises PlanFileError naming the file and the first field that is wrong, or OSError.
    """
    if (written := written_head(path)) is not None:
        return head_of(path, *written)
    text = _head_lines(path)
    try:
        value: Any = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        value = _whole(path)  # another layout (re-saved, one line), or not a plan at all
    # In another layout the lists were not recognised above, and came along.
    value = {k: v for k, v in value.items() if k not in LISTS}
    if value.get("format") not in (FORMAT, OLD_FORMAT):
        raise PlanFileError(str(path), f"not a {FORMAT} plan (format: {value.get('format')!r})")
    try:
        return HEAD.validate_python(value)
    except ValidationError as exc:
        raise problem(str(path), exc) from None


def read_list(path: Path, name: ListName) -> Iterator[Change]:
    """The entries of list ``name`` (changes, held, advisory), each validated, streamed, in
    plan order (project, kind, cluster; snapshot id within a cluster). Raises
    PlanFileError naming the entry that is wrong."""
    if _format(path) == FORMAT:
        for cluster in _cluster_changes(path):
            yield from (change for listed, change in cluster if listed == name)
        return
    for n, raw in enumerate(_raw_entries(path, name)):
        try:
            yield CHANGE.validate_python(raw)
        except ValidationError as exc:
            snapshot = raw.get("snapshotId") if isinstance(raw, dict) else None
            # An id that failed validation may hold control characters: escaped for people.
            named = f" (snapshot {printable(str(snapshot))})" if snapshot else ""
            raise problem(f"{path}: {name}[{n}]{named}", exc) from None


def to_send(path: Path, approved: frozenset[tuple[str, str]]) -> Iterator[Change]:
    """The changes to send, in plan order: ``changes``, merged with the held changes of the
    approved clusters (no longer held)."""
    if _format(path) == FORMAT:
        for cluster in _cluster_changes(path):
            yield from (
                _unheld(c) if listed == "held" else c
                for listed, c in cluster
                if listed == "changes"
                or (listed == "held" and (c["projectId"], c["clusterId"]) in approved)
            )
        return
    if not approved:
        yield from read_list(path, "changes")
        return
    released = (
        _unheld(c) for c in read_list(path, "held") if (c["projectId"], c["clusterId"]) in approved
    )
    order = operator.itemgetter("projectId", "clusterId", "snapshotId")
    yield from heapq.merge(read_list(path, "changes"), released, key=order)


# How planwrite starts a v2 plan.json: the format is its first member.
_V2_START = orjson.dumps({"format": FORMAT})[:-1]


def _format(path: Path) -> str:
    """The plan's format: from the first bytes of a plan.json written by this version,
    else from its head, validated."""
    with path.open("rb") as start:
        if start.read(len(_V2_START)) == _V2_START:
            return FORMAT
    return read_head(path)["format"]


def _decisions_entry(path: Path) -> DecisionsEntry:
    """The plan's ``decisions`` member, validated (the rest of the head is not: its readers
    validate it; this spares a second validation of a large head)."""
    written = written_head(path)
    whole = head_value(path, written[0]) if written is not None else _whole(path)
    value = whole.get("decisions")
    if value is None:
        raise PlanFileError(str(path), "decisions: missing (a v2 plan names its decisions file)")
    try:
        return DECISIONS_ENTRY.validate_python(value)
    except ValidationError as exc:
        raise problem(f"{path}: decisions", exc) from None


def _cluster_changes(path: Path) -> Iterator[list[tuple[ListName, Change]]]:
    """Each cluster's changes of a v2 plan, in plan order, sorted by snapshot id, each with
    the list it belongs to; the decisions file checked against the head's digest and
    count (PlanFileError when it is not this plan's)."""
    records = (_numbered_change(path, n, line) for n, line in enumerate(_checked_lines(path)))
    changes = (found for found in records if found is not None)
    for _cluster, group in itertools.groupby(changes, key=operator.itemgetter(2)):
        yield sorted(((listed, c) for listed, c, _ in group), key=lambda f: f[1]["snapshotId"])


def _numbered_change(
    path: Path, n: int, line: bytes
) -> tuple[ListName, Change, tuple[str, str, str]] | None:
    """The change of the decision on line ``n`` (with its list, and its cluster's project,
    kind and id), or None when it has none; PlanFileError naming the line when it is not
    valid.
    A line without a body is passed over unparsed: most are, and the file's digest already
    says it is the plan's (encode_line writes ``"body":null``, which no JSON string holds)."""
    if _NO_BODY in line:
        return None
    where = f"{decisions_path(path)}: line {n + 1}"
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


def _checked_lines(path: Path) -> Iterator[bytes]:
    """The lines of a v2 plan's decisions, checked at the end against the digest and count
    its head gives (PlanFileError: another plan's decisions, or a file cut short)."""
    expected = _decisions_entry(path)
    decisions = decisions_path(path)
    digest, count = hashlib.sha256(), 0
    try:
        with decisions.open("rb") as raw:
            for line in _decompressed_lines(raw, digest.update):
                count += 1
                yield line
    except OSError as exc:
        raise PlanFileError(str(decisions), f"cannot read the plan's decisions: {exc}") from None
    if (digest.hexdigest(), count) != (expected["sha256"], expected["records"]):
        raise PlanFileError(
            str(decisions),
            f"not the decisions of {path.name} ({count} records with sha256 "
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


def _unheld(change: Change) -> Change:
    released = dict(change)
    released.pop("held", None)
    return released  # type: ignore[return-value] # the same record less its optional "held"


def _raw_entries(path: Path, name: str) -> Iterator[Any]:
    """The list's entries as parsed JSON: line by line in the written layout, else whole."""
    opening = b'  "' + name.encode() + b'": ['
    yielded = 0
    with path.open("rb") as lines:
        for line in lines:
            stripped = line.rstrip(b"\n")
            if stripped in (opening + b"],", opening + b"]"):
                return
            if stripped != opening:
                continue
            for entry in lines:
                text = entry.rstrip(b"\n")
                if text in (b"  ],", b"  ]"):
                    return
                try:
                    value = orjson.loads(text.removesuffix(b","))
                except orjson.JSONDecodeError:
                    break  # not one entry a line (or cut short): read the file whole
                yielded += 1
                yield value
            break
    items = _whole(path).get(name, [])
    if not isinstance(items, list):
        raise PlanFileError(str(path), f"{name}: not a list")
    yield from items[yielded:]


def _whole(path: Path) -> dict[str, Any]:
    """The whole file as a JSON object, or PlanFileError saying what it holds instead."""
    try:
        value = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise PlanFileError(str(path), f"not a plan file (not JSON: {exc})") from None
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise PlanFileError(str(path), f"it holds a JSON {kind}, not a plan object")
    return value


def decision_lines(path: Path) -> Iterator[bytes]:
    """The non-empty lines of a decisions file, without their newline: zstd frames
    (decisions.jsonl.zst) or plain (a v1 plan's decisions.jsonl); OSError when it cannot
    be read."""
    with path.open("rb") as raw:
        if path.suffix == ".zst":
            yield from _decompressed_lines(raw)
        else:
            yield from (line.rstrip(b"\n") for line in raw if line.strip())


def read_decisions(path: Path) -> Iterator[DecisionRecord | None]:
    """The records of a decisions file, validated; None for a line that is not one (cut
    short by a kill, or edited)."""
    for line in decision_lines(path):
        try:
            yield DECISION.validate_json(line)
        except ValidationError:
            yield None


def find_decision(path: Path, snapshot_id: str) -> DecisionRecord | None:
    """The decision for one snapshot in a decisions.jsonl, or None (streamed: a cheap text
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
    """The records of the cluster (or config server) of ``record`` in a decisions.jsonl,
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
