"""Writing the plan file (``plan.json``) and ``decisions.jsonl``: the one writer, through the
model of retention.core.planfile (retention.runfolder.planread reads the files back through
the same model).

The planner builds the records as plain dicts and orjson encodes them: no text is spliced,
so any cluster name round-trips. Layout: the head's members indented by two, then
``changes``, ``held`` and ``advisory`` with one entry a line (what grep and diff want), then
``errors``; planread.py streams a file in this layout entry by entry. ``PlanBuilder`` takes
cluster plans in the plan's order and streams what grows with the fleet (decisions to
decisions.jsonl, changes to spool files).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

import orjson

from retention.core.model import ClusterPlan
from retention.core.planfile import (
    FORMAT,
    LISTS,
    Change,
    ClusterEntry,
    HoldRecordEntry,
    PlanHead,
    Summary,
)
from retention.runfolder.planrecords import (
    change_record,
    cluster_entry,
    decision_record,
    hold_record_entry,
)

# Large write buffers: every flush releases the GIL, and getting it back means waiting for
# the walk threads busy parsing; with 8 KiB buffers the planner spent a quarter of its
# time in write() (benchmarks/plan_memory.py, cProfile).
WRITE_BUFFER = 1 << 20
# The file's order of members: the head's, with the lists before "errors".
_TAIL = ("notices", "warnings", "errors")
_ORDER = [k for k in PlanHead.__annotations__ if k not in _TAIL]
_ORDER += [*LISTS, *_TAIL]

# orjson writes a UTC datetime as YYYY-MM-DDTHH:MM:SSZ, dropping sub-second digits as
# format_timestamp does (a naive one is taken as UTC, as everywhere in retention);
# planrecords.py converts any other zone first. It encodes a record ten times as fast as
# json.dumps, and a 2,000-cluster plan writes 1.2 million of them.
_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_OMIT_MICROSECONDS | orjson.OPT_NAIVE_UTC
_LINE = _OPTIONS | orjson.OPT_APPEND_NEWLINE


def encode_line(record: Mapping[str, Any]) -> bytes:
    """A record as one line of JSON (compact, newline-terminated), datetimes as the API
    writes them."""
    return orjson.dumps(record, option=_LINE)


def _member(key: str, value: Any) -> bytes:
    # Nested lines one level deeper; JSON strings hold no raw newline, so only layout moves.
    text = orjson.dumps(value, option=_OPTIONS | orjson.OPT_INDENT_2)
    return b"  " + orjson.dumps(key) + b": " + text.replace(b"\n", b"\n  ")


def _write_member(out: IO[bytes], key: str, value: Any) -> None:
    """A member of the head as _member lays it out; a non-empty list entry by entry, in the
    same bytes: ``clusters`` grows with the fleet (a megabyte per thousand clusters), and
    encoding it whole held three copies of it at once."""
    if not isinstance(value, list) or not value:
        out.write(_member(key, value))
        return
    out.write(b"  " + orjson.dumps(key) + b": [\n")
    for n, item in enumerate(value):
        text = orjson.dumps(item, option=_OPTIONS | orjson.OPT_INDENT_2)
        out.write((b",\n    " if n else b"    ") + text.replace(b"\n", b"\n    "))
    out.write(b"\n  ]")


def write_plan(out: IO[bytes], head: PlanHead, lists: Mapping[str, Iterable[bytes]]) -> None:
    """Write a plan file: the head's members, and each list from its encoded lines (as
    encode_line makes them), one entry a line."""
    out.write(b"{\n")
    members: dict[str, Any] = dict(head)
    # An optional member a head read from an older plan lacks is written empty (notices),
    # or not at all (holdRecords, written only when there is one).
    members.setdefault("notices", [])
    keys = [key for key in _ORDER if key != "holdRecords" or key in members]
    for n, key in enumerate(keys):
        out.write(b",\n" if n else b"")
        if key in LISTS:
            out.write(b"  " + orjson.dumps(key) + b": ")
            _write_list(out, lists.get(key, ()))
        else:
            _write_member(out, key, members[key])
    out.write(b"\n}\n")


def _write_list(out: IO[bytes], lines: Iterable[bytes]) -> None:
    # A block of whole lines becomes list entries with one replace (JSON lines hold no raw
    # newline): a write per entry cost 2.7 us a change on a 140,000-change plan.
    first = True
    for block in _whole_lines(lines):
        out.write((b"[\n    " if first else b",\n    ") + block[:-1].replace(b"\n", b",\n    "))
        first = False
    out.write(b"[]" if first else b"\n  ]")


def _whole_lines(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Blocks of whole newline-terminated lines: a spool file's in blocks of a mebibyte,
    any other iterable's a line at a time (a line without its newline gets one)."""
    read = getattr(lines, "read", None)
    chunks: Iterable[bytes] = (
        iter(lambda: read(WRITE_BUFFER), b"")
        if read
        else (line if line.endswith(b"\n") else line + b"\n" for line in lines)
    )
    rest = b""
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        rest = data[cut:]
    if rest:
        yield rest + b"\n"


@dataclass(frozen=True)
class PolicyDigest:
    """A policy's name and the sha256 of the file it came from."""

    name: str
    sha256: str
    path: str = ""


@dataclass(frozen=True)
class EncodedCluster:
    """One cluster's plan as the files hold it, ready for PlanBuilder to write (made by
    encode_cluster, which is pure: all a plan's I/O stays in PlanBuilder)."""

    key: tuple[str, str, str]  # project, kind, cluster id: the plan's order
    decisions: bytes  # lines of decisions.jsonl
    lists: dict[str, bytes]  # lines of changes, held and advisory, by snapshot id
    summary: ClusterEntry  # the cluster's entry in plan.json's clusters, with its counts
    # The hold records of the cluster's policies, by (policy, place in protect.ids).
    hold_records: list[tuple[tuple[str, int], HoldRecordEntry]] = field(default_factory=list)


def encode_cluster(plan: ClusterPlan) -> EncodedCluster:
    """Encode one cluster's plan: its decision lines, its list entries and its summary."""
    t = plan.target
    # Lines go into a bytearray as they come: keeping 300 encoded lines alive to join them
    # later cost 2.4 us a line (allocation of blocks above pymalloc's 512 bytes), against
    # 0.1 us to copy each into a buffer and let it go.
    decisions = bytearray()
    entries: dict[str, list[Change]] = {name: [] for name in LISTS}
    # Snapshots by state and by action (held and advisory ones counted apart), in the pass
    # that encodes them.
    counts: dict[str, int] = {"snapshots": len(plan.decisions)}
    for d in plan.decisions:
        record = decision_record(plan, d)
        decisions += encode_line(record)
        state = "state:" + d.state
        counts[state] = counts.get(state, 0) + 1
        if (listed := d.listed_as) is not None:
            into = listed if listed in ("held", "advisory") else "changes"
            entries[into].append(change_record(record, plan.grace_seconds))
            action = "action:" + listed
            counts[action] = counts.get(action, 0) + 1
    lists: dict[str, bytes] = {}
    for name, items in entries.items():
        lines = bytearray()
        for item in sorted(items, key=lambda c: c["snapshotId"]):
            lines += encode_line(item)
        lists[name] = bytes(lines)
    key = (t.project_id, t.kind, t.cluster_id)
    summary = cluster_entry(plan, counts, entries)
    records = [((r.policy, r.index), hold_record_entry(plan, r)) for r in plan.hold_records]
    return EncodedCluster(key, bytes(decisions), lists, summary, records)


@dataclass
class PlanBuilder:
    """Collects cluster plans into a plan file, streaming what can grow with the fleet.

    Clusters must come in the plan's order (project, kind, cluster id), which is the order
    the planner walks them in: decisions go straight to decisions.jsonl, and the changes,
    held and advisory entries to anonymous spool files, so memory holds one cluster's
    decisions and the per-cluster summaries, never the fleet's changes.
    """

    evaluated_at: datetime
    created_at: datetime
    base_url: str
    policies: list[PolicyDigest]
    decisions_out: IO[bytes] | None = None
    lease_seconds: float = 0.0
    service_version: str | None = None
    what_if: bool = False
    projects: dict[str, str | None] = field(default_factory=dict)  # id: name
    clusters: list[ClusterEntry] = field(default_factory=list)
    by_state: Counter[str] = field(default_factory=Counter)
    by_action: Counter[str] = field(default_factory=Counter)
    # The hold records of the policies that matched, by (policy, place in protect.ids).
    hold_records: dict[tuple[str, int], HoldRecordEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Anonymous files that live as long as the builder; write() closes them.
        self._spools: dict[str, IO[bytes]] = {
            name: tempfile.TemporaryFile("w+b", buffering=WRITE_BUFFER)  # noqa: SIM115
            for name in LISTS
        }
        self._last: tuple[str, str, str] | None = None

    def add(self, plan: ClusterPlan) -> None:
        """Take one cluster's plan: write its decisions, spool its changes, keep its summary."""
        self.add_encoded(encode_cluster(plan))

    def add_encoded(self, cluster: EncodedCluster) -> None:
        """Take one cluster's plan as encode_cluster made it (maybe in another process)."""
        if self._last is not None and cluster.key <= self._last:
            raise ValueError(
                f"clusters must be added in plan order; {cluster.key} came after {self._last}"
            )
        self._last = cluster.key
        if self.decisions_out is not None:
            self.decisions_out.write(cluster.decisions)
        for name, lines in cluster.lists.items():
            self._spools[name].write(lines)
        for key, count in cluster.summary["counts"].items():
            kind, _, name = key.partition(":")  # "state:kept", "action:extend"
            if kind == "state":
                self.by_state[name] += count
            elif kind == "action":
                self.by_action[name] += count
        self.clusters.append(cluster.summary)
        for place, entry in cluster.hold_records:
            seen = self.hold_records.get(place)
            # Every cluster of the policy lists the record: the one that has its snapshot wins.
            if seen is None or (seen["state"] is None and entry["state"] is not None):
                self.hold_records[place] = entry

    def close(self) -> None:
        """Drop the spool files (write() closes them; an aborted plan needs this)."""
        for spool in self._spools.values():
            spool.close()

    def head(
        self,
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        notices: list[str] | None = None,
    ) -> PlanHead:
        """The plan without its changes, held and advisory lists (what summaries need)."""
        head: PlanHead = {
            "format": FORMAT,
            "createdAt": self.created_at,
            "evaluatedAt": self.evaluated_at,
            "whatIf": self.what_if,
            "baseUrl": self.base_url,
            "serviceVersion": self.service_version,
            "leaseSeconds": self.lease_seconds,
            "projects": [
                {"projectId": pid, "name": name} for pid, name in sorted(self.projects.items())
            ],
            "policies": [
                {"name": p.name, "sha256": p.sha256}
                for p in sorted(self.policies, key=lambda p: p.name)
            ],
            "unusedPolicies": sorted(
                {p.name for p in self.policies} - {n for c in self.clusters for n in c["policies"]}
            ),
            "summary": self.summary(),
            "clusters": self.clusters,
            "notices": notices or [],
            "warnings": warnings or [],
            "errors": errors or [],
        }
        if self.hold_records:
            head["holdRecords"] = [self.hold_records[key] for key in sorted(self.hold_records)]
        return head

    def write(
        self,
        out: IO[bytes],
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        notices: list[str] | None = None,
    ) -> PlanHead:
        """Write the plan file and return its head."""
        head = self.head(errors, warnings, notices)
        for spool in self._spools.values():
            spool.seek(0)
        write_plan(out, head, self._spools)
        self.close()
        return head

    def summary(self) -> Summary:
        """Counts by state and by action, holds and errors."""
        return {
            "clusters": len(self.clusters),
            "snapshots": sum(self.by_state.values()),
            "byState": dict(sorted(self.by_state.items())),
            "byAction": dict(sorted(self.by_action.items())),
            "clustersHeld": sum(1 for c in self.clusters if c["holds"]),
            "clustersWithErrors": sum(1 for c in self.clusters if c["errors"]),
            "clustersUnmanaged": sum(1 for c in self.clusters if not c["policies"]),
            "bytesGivenBack": sum(c["bytesGivenBack"] for c in self.clusters),
            "bytesHeld": sum(c["bytesHeld"] for c in self.clusters),
            "expiresFrom": min(
                (c["expiresFrom"] for c in self.clusters if c["expiresFrom"] is not None),
                default=None,
            ),
            "clustersStale": sum(
                1 for c in self.clusters if c.get("newestRestorable", {}).get("stale")
            ),
        }


def jsonable(value: Any) -> Any:
    """A record with its timestamps as the file writes them (for templates and --format json)."""
    return orjson.loads(orjson.dumps(value, option=_OPTIONS))
