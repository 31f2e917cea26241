"""Writing the plan file (``plan.json``) and its decisions (``decisions.jsonl.zst``): the one
writer, through the model of retention.core.planfile (retention.runfolder.planread reads the
files back through the same model).

The planner builds the records as plain dicts and orjson encodes them: no text is spliced,
so any cluster name round-trips. Format v2: one record per snapshot, the decision, which
also is the change when it carries a body; each cluster's lines are one zstd frame, made
where the cluster is decided (a planning worker), so the compression runs in parallel and
the frames are simply written one after the other (a zstd stream may hold many). plan.json
is the head alone, compact, on one line (``jq .`` is the pretty printer), with the sha256
and line count of the decisions file. ``PlanBuilder`` takes cluster plans in the plan's
order and streams their frames out, so memory holds one cluster's decisions.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson
import zstandard

from retention.core.approving import is_long_cut
from retention.core.model import ClusterPlan
from retention.core.planfile import (
    FORMAT,
    LISTS,
    ClusterEntry,
    DecisionRecord,
    HoldRecordEntry,
    OutsideChangeEntry,
    PlanHead,
    Summary,
    list_of,
)
from retention.runfolder.planrecords import (
    cluster_entry,
    decision_record,
    hold_record_entry,
)

# Large write buffers: every flush releases the GIL, and getting it back means waiting for
# the walk threads busy parsing; with 8 KiB buffers the planner spent a quarter of its
# time in write() (benchmarks/plan_memory.py, cProfile).
WRITE_BUFFER = 1 << 20
# zstd level 1: on the bench fleet's decisions smaller than levels 3 to 9 (frames of one
# cluster, 300 lines: 23 bytes a snapshot against 26 at level 3) and the fastest.
ZSTD_LEVEL = 1
# The file's order of members: the head's, the optional ones where they fit, but
# ``clusters``, which ends the file an entry a line: the first line ends with CLUSTERS_OPEN
# and the last is CLUSTERS_CLOSE.
_ORDER = list(PlanHead.__annotations__)
CLUSTERS_OPEN = b'"clusters":['
CLUSTERS_CLOSE = b"]}"
# Cluster entries the builder keeps in memory before its spool goes to a file.
SPOOL_IN_MEMORY = 4 << 20

# orjson writes a UTC datetime as YYYY-MM-DDTHH:MM:SSZ, dropping sub-second digits as
# format_timestamp does (a naive one is taken as UTC, as everywhere in retention);
# planrecords.py converts any other zone first. It encodes a record ten times as fast as
# json.dumps, and a 2,000-cluster plan writes 600,000 of them.
_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_OMIT_MICROSECONDS | orjson.OPT_NAIVE_UTC
_LINE = _OPTIONS | orjson.OPT_APPEND_NEWLINE


def encode_line(record: Mapping[str, Any]) -> bytes:
    """A record as one line of JSON (compact, newline-terminated), datetimes as the API
    writes them."""
    return orjson.dumps(record, option=_LINE)


def compress(lines: bytes) -> bytes:
    """Lines as one zstd frame (nothing for no lines): frames written one after the other
    read back as one stream."""
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(lines) if lines else b""


def write_plan(out: IO[bytes], head: PlanHead, clusters: Iterable[ClusterEntry]) -> None:
    """Write plan.json: the head, its members in the model's order, then its ``clusters``,
    an entry a line (see _write_members). An optional member a head lacks is written empty
    (notices), or not at all (holdRecords, decisions)."""
    entries = (orjson.dumps(entry, option=_OPTIONS) for entry in clusters)
    _write_members(out, head, entries)


def _write_members(out: IO[bytes], head: PlanHead, clusters: Iterable[bytes]) -> None:
    """plan.json from a head and its cluster entries, encoded: the first line holds every
    member but ``clusters``, which comes last, each entry on a line of its own, so that
    readers take the head from the first line and stream the entries (planread.py); the
    whole is still one JSON object, which ``jq .`` prints."""
    members: dict[str, Any] = dict(head)
    members.setdefault("notices", [])
    members["format"] = FORMAT
    out.write(b"{")
    for key in (k for k in _ORDER if k in members):
        out.write(orjson.dumps(key) + b":" + orjson.dumps(members[key], option=_OPTIONS) + b",")
    out.write(CLUSTERS_OPEN)
    for n, entry in enumerate(clusters):
        out.write((b",\n" if n else b"\n") + entry)
    out.write(b"\n" + CLUSTERS_CLOSE + b"\n")


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
    decisions: bytes  # its lines of the decisions file, as one zstd frame
    records: int  # how many lines
    summary: ClusterEntry  # the cluster's entry in plan.json's clusters, with its counts
    # The hold records of the cluster's policies, by (policy, place in protect.ids).
    hold_records: list[tuple[tuple[str, int], HoldRecordEntry]] = field(default_factory=list)
    # Its newest kept snapshot would not outlast the lease (core.outage.exposed): a warning.
    warning: str | None = None


def encode_cluster(plan: ClusterPlan) -> EncodedCluster:
    """Encode one cluster's plan: its decision lines (compressed) and its summary."""
    decided = plan.decided
    t = decided.target
    # Lines go into a bytearray as they come: keeping 300 encoded lines alive to join them
    # later cost 2.4 us a line (allocation of blocks above pymalloc's 512 bytes), against
    # 0.1 us to copy each into a buffer and let it go.
    decisions = bytearray()
    # The decisions of each kind of change: what the cluster's entry sums (bytes, expiries).
    entries: dict[str, list[DecisionRecord]] = {name: [] for name in LISTS}
    # Snapshots by state and by action (held and advisory ones counted apart), in the pass
    # that encodes them.
    counts: dict[str, int] = {"snapshots": len(decided.decisions)}
    for d in decided.decisions:
        record = decision_record(decided, d)
        decisions += encode_line(record)
        state = "state:" + d.state
        counts[state] = counts.get(state, 0) + 1
        if (into := list_of(record)) is not None:
            entries[into].append(record)
            action = f"action:{d.listed_as}"
            counts[action] = counts.get(action, 0) + 1
            if not d.advisory and is_long_cut(record.get("cutSeconds")):
                counts["cut:long"] = counts.get("cut:long", 0) + 1
    key = (t.project_id, t.kind, t.cluster_id)
    summary = cluster_entry(plan, counts, entries)
    records = [((r.policy, r.index), hold_record_entry(decided, r)) for r in decided.hold_records]
    frame = compress(bytes(decisions))
    return EncodedCluster(key, frame, len(decided.decisions), summary, records)


@dataclass
class _Tally:
    """What the plan's summary says of its clusters, summed as they come (the entries
    themselves go to the builder's spool)."""

    clusters: int = 0
    held: int = 0
    with_errors: int = 0
    unmanaged: int = 0
    stale: int = 0
    long_cuts: int = 0
    bytes_given_back: int = 0
    bytes_held: int = 0
    expires_from: datetime | None = None
    policies: set[str] = field(default_factory=set)  # the names of the policies that matched

    def add(self, entry: ClusterEntry) -> None:
        self.clusters += 1
        self.held += bool(entry["holds"])
        self.with_errors += bool(entry["errors"])
        self.unmanaged += not entry["policies"]
        self.stale += bool(entry.get("newestRestorable", {}).get("stale"))
        self.long_cuts += entry["counts"].get("cut:long", 0)
        self.bytes_given_back += entry["bytesGivenBack"]
        self.bytes_held += entry["bytesHeld"]
        if (expires := entry["expiresFrom"]) is not None:
            self.expires_from = min(expires, self.expires_from or expires)
        self.policies.update(entry["policies"])


@dataclass
class PlanBuilder:
    """Collects cluster plans into a plan file, streaming what grows with the fleet.

    Clusters must come in the plan's order (project, kind, cluster id), which is the order
    the planner walks them in: their decisions go straight to the decisions file and their
    entries to a spool (a temporary file in ``spool_dir`` once past SPOOL_IN_MEMORY), so
    memory holds the summary's counts, never the fleet's clusters.
    """

    evaluated_at: datetime
    created_at: datetime
    base_url: str
    policies: list[PolicyDigest]
    decisions_out: IO[bytes] | None = None
    lease_seconds: float = 0.0
    service_version: str | None = None
    what_if: bool = False
    spool_dir: Path | None = None
    projects: dict[str, str | None] = field(default_factory=dict)  # id: name
    by_state: Counter[str] = field(default_factory=Counter)
    by_action: Counter[str] = field(default_factory=Counter)
    # The hold records of the policies that matched, by (policy, place in protect.ids).
    hold_records: dict[tuple[str, int], HoldRecordEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._last: tuple[str, str, str] | None = None
        self._digest = hashlib.sha256()
        self._records = 0
        self._tally = _Tally()
        self._warnings: list[str] = []  # the clusters' (EncodedCluster.warning)
        # What the ledger said (a plan made with one): set before ``write``.
        self.outside_changes: list[OutsideChangeEntry] | None = None
        self.ledger_baseline: bool | None = None
        # The cluster entries, encoded, a line each, until write() copies them out.
        self._spool = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - write() closes it
            SPOOL_IN_MEMORY, dir=None if self.spool_dir is None else str(self.spool_dir)
        )

    def add(self, plan: ClusterPlan) -> None:
        """Take one cluster's plan: write its decisions, spool its entry."""
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
        self._digest.update(cluster.decisions)
        self._records += cluster.records
        for key, count in cluster.summary["counts"].items():
            kind, _, name = key.partition(":")  # "state:kept", "action:extend"
            if kind == "state":
                self.by_state[name] += count
            elif kind == "action":
                self.by_action[name] += count
        self._tally.add(cluster.summary)
        if cluster.warning is not None:
            self._warnings.append(cluster.warning)
        self._spool.write(orjson.dumps(cluster.summary, option=_OPTIONS) + b"\n")
        for place, entry in cluster.hold_records:
            seen = self.hold_records.get(place)
            # Every cluster of the policy lists the record: the one that has its snapshot wins.
            if seen is None or (seen["state"] is None and entry["state"] is not None):
                self.hold_records[place] = entry

    def close(self) -> None:
        """Let the spool go (write does too): for a plan given up half way."""
        self._spool.close()

    def _head(
        self,
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        notices: list[str] | None = None,
    ) -> PlanHead:
        """plan.json's head (its clusters are in the spool until write): everything but the
        decisions, which it names by digest."""
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
            "unusedPolicies": sorted({p.name for p in self.policies} - self._tally.policies),
            "summary": self.summary(),
            "notices": notices or [],
            "warnings": [*(warnings or []), *self._warnings],
            "errors": errors or [],
        }
        if self.hold_records:
            head["holdRecords"] = [self.hold_records[key] for key in sorted(self.hold_records)]
        head["decisions"] = {"sha256": self._digest.hexdigest(), "records": self._records}
        if self.outside_changes is not None:
            head["outsideChanges"] = self.outside_changes
        if self.ledger_baseline is not None:
            head["ledger"] = {"baseline": self.ledger_baseline}
        return head

    def write(
        self,
        out: IO[bytes],
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        notices: list[str] | None = None,
    ) -> None:
        """Write the plan file (the decisions are written already), its cluster entries
        copied from the spool, which is then closed: a builder writes once."""
        self._spool.seek(0)
        with self._spool:
            entries = (line.rstrip(b"\n") for line in self._spool)
            _write_members(out, self._head(errors, warnings, notices), entries)

    def summary(self) -> Summary:
        """Counts by state and by action, holds and errors."""
        tally = self._tally
        return {
            "clusters": tally.clusters,
            "snapshots": sum(self.by_state.values()),
            "byState": dict(sorted(self.by_state.items())),
            "byAction": dict(sorted(self.by_action.items())),
            "clustersHeld": tally.held,
            "clustersWithErrors": tally.with_errors,
            "clustersUnmanaged": tally.unmanaged,
            "bytesGivenBack": tally.bytes_given_back,
            "bytesHeld": tally.bytes_held,
            "expiresFrom": tally.expires_from,
            "clustersStale": tally.stale,
            "longCuts": tally.long_cuts,
        }


# Stands for a streamed list (a plan's clusters, read from its file) in pretty_json's first
# encoding.
_STREAMED = "\u0000retention:streamed:{}\u0000"
_PRETTY = _OPTIONS | orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def pretty_json(document: Mapping[str, Any]) -> Iterator[bytes]:
    """``document`` as indented JSON (timestamps as the plan files write them), in pieces:
    an iterable that is not a list (a plan's clusters, read from its file as they come) is
    encoded an entry at a time, in the bytes the same entries as a list would give."""
    streamed: list[Iterable[Any]] = []

    def later(value: Any) -> str:
        if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
            streamed.append(value)
            return _STREAMED.format(len(streamed) - 1)
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")

    text = orjson.dumps(document, default=later, option=_PRETTY)
    for n, entries in enumerate(streamed):
        marker = orjson.dumps(_STREAMED.format(n))
        before, text = text.split(marker, 1)
        yield before
        yield from _pretty_list(entries, before.rpartition(b"\n")[2])
    yield text


def _pretty_list(entries: Iterable[Any], line: bytes) -> Iterator[bytes]:
    """A list's indented encoding, an entry at a time, nested in a line that starts as
    ``line`` (the indentation of its member)."""
    inner = b"\n" + b" " * (len(line) - len(line.lstrip(b" ")) + 2)
    n = -1
    for n, entry in enumerate(entries):
        encoded = orjson.dumps(entry, option=_PRETTY)
        yield (b"[" if n == 0 else b",") + inner + encoded.replace(b"\n", inner)
    yield b"[]" if n < 0 else inner[:-2] + b"]"


def jsonable(value: Any) -> Any:
    """A record with its timestamps as the file writes them (for templates and --format json)."""
    return orjson.loads(orjson.dumps(value, option=_OPTIONS))
