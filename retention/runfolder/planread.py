"""Reading plan.json and decisions.jsonl back, validated by the model of core/planfile.py.

The shell's side of the plan file: the core (retention.core.planfile) defines the model,
planwrite.py writes the files, this module opens them.

A file in the layout planwrite writes is streamed entry by entry, so memory stays flat on
a 600k-change plan; a file re-saved in another layout is read whole. decisions.jsonl is
searched with a cheap text test before a line is parsed. Every problem is a PlanFileError
that names the file, the entry and the field.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from retention.core.ids import id_problem
from retention.core.planfile import (
    CHANGE,
    DECISION,
    FORMAT,
    HEAD,
    LISTS,
    Change,
    DecisionRecord,
    ListName,
    PlanHead,
)
from retention.core.wording import printable
from retention.errors import PlanFileError

# ---- reading ---------------------------------------------------------------------------


def _problem(where: str, exc: ValidationError) -> PlanFileError:
    first = exc.errors()[0]
    place = ".".join(str(part) for part in first["loc"]) or "(the entry)"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    message = first["msg"]
    value = first.get("input")
    if place.endswith("Id") and isinstance(value, str) and (why := id_problem(value)):
        # The rule in words, not its regular expression.
        message = f"{value!r} is not an id a plan can carry: {why}"
    return PlanFileError(where, f"{place}: {message}{more}")


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
    """A plan file's head, validated; its lists are skipped line by line (flat memory).

    Raises PlanFileError naming the file and the first field that is wrong, or OSError.
    """
    text = _head_lines(path)
    try:
        value: Any = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        value = _whole(path)  # another layout (re-saved, one line), or not a plan at all
    # In another layout the lists were not recognised above, and came along.
    value = {k: v for k, v in value.items() if k not in LISTS}
    if value.get("format") != FORMAT:
        raise PlanFileError(str(path), f"not a {FORMAT} plan (format: {value.get('format')!r})")
    try:
        return HEAD.validate_python(value)
    except ValidationError as exc:
        raise _problem(str(path), exc) from None


def read_list(path: Path, name: ListName) -> Iterator[Change]:
    """The entries of list ``name``, each validated, streamed when the file is in the
    written layout. Raises PlanFileError naming the entry that is wrong."""
    for n, raw in enumerate(_raw_entries(path, name)):
        try:
            yield CHANGE.validate_python(raw)
        except ValidationError as exc:
            snapshot = raw.get("snapshotId") if isinstance(raw, dict) else None
            # An id that failed validation may hold control characters: escaped for people.
            named = f" (snapshot {printable(str(snapshot))})" if snapshot else ""
            raise _problem(f"{path}: {name}[{n}]{named}", exc) from None


def to_send(path: Path, approved: frozenset[tuple[str, str]]) -> Iterator[Change]:
    """The changes to send, in plan order: ``changes``, merged with the held changes of the
    approved clusters (no longer held)."""
    if not approved:
        yield from read_list(path, "changes")
        return
    released = (
        _unheld(c) for c in read_list(path, "held") if (c["projectId"], c["clusterId"]) in approved
    )
    order = operator.itemgetter("projectId", "clusterId", "snapshotId")
    yield from heapq.merge(read_list(path, "changes"), released, key=order)


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


def read_decisions(path: Path) -> Iterator[DecisionRecord | None]:
    """The records of a decisions.jsonl, validated; None for a line that is not one (cut
    short by a kill, or edited)."""
    with path.open("rb") as lines:
        for line in lines:
            if not line.strip():
                continue
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
            raise _problem(f"{path}: the line of snapshot {snapshot_id}", exc) from None
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
    with path.open("rb") as lines:
        yield from (line for line in lines if quoted in line)
