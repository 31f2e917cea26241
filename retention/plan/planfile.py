"""The plan file (``plan.json``, format ``retention-plan/v1``) and ``decisions.jsonl``.

A saved plan is the unit of review and of apply (DESIGN.md section 6). ``PlanBuilder``
takes cluster plans one at a time, in a fixed order: each decision becomes a line of
decisions.jsonl at once (so memory stays flat), and the plan keeps only what apply and
review need: per-cluster summaries, the changes, the held and the advisory ones. Nothing
in the output depends on set or dict ordering: the same inputs and ``now`` give the same
bytes, ``createdAt`` aside. The JSON Schema ships beside this file (plan.schema.json).
"""

from __future__ import annotations

import io
import json
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from retention.plan.model import ClusterPlan, Decision
from retention.timestamps import format_timestamp, to_utc

FORMAT = "retention-plan/v1"
# Large write buffers: every flush releases the GIL, and getting it back means waiting for
# the walk threads busy parsing; with 8 KiB buffers the planner spent a quarter of its
# time in write() (benchmarks/plan_memory.py, cProfile).
WRITE_BUFFER = 1 << 20


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of the plan file."""
    text = resources.files("retention.plan").joinpath("plan.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass(frozen=True)
class PolicyDigest:
    """A policy's name and the sha256 of the file it came from."""

    name: str
    sha256: str
    path: str = ""


# orjson writes a UTC datetime as YYYY-MM-DDTHH:MM:SSZ, dropping sub-second digits as
# format_timestamp does (a naive one is taken as UTC, as everywhere in retention); _utc
# converts any other zone first. It encodes a record ten times as fast as json.dumps, and
# a 2,000-cluster plan writes 1.2 million of them.
_LINE = orjson.OPT_UTC_Z | orjson.OPT_OMIT_MICROSECONDS | orjson.OPT_NAIVE_UTC
_LINE |= orjson.OPT_APPEND_NEWLINE


def encode_line(record: dict[str, Any]) -> bytes:
    """A record as one line of JSON (compact, newline-terminated), datetimes as the API
    writes them."""
    return orjson.dumps(record, option=_LINE)


def _utc(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo is UTC else to_utc(value)


def decision_record(plan: ClusterPlan, d: Decision) -> dict[str, Any]:
    """One line of decisions.jsonl: everything needed to explain this snapshot (its
    timestamps as datetimes, for encode_line to write)."""
    t, s = plan.target, d.snapshot
    return {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "clusterName": t.name,
        "kind": t.kind,
        "snapshotId": s.id,
        "created": _utc(s.created),
        "complete": s.complete,
        "consistent": s.consistent,
        # What compare-and-swap checks at apply time (SnapshotView.observed, unformatted).
        "observed": {"doNotDelete": s.do_not_delete, "expires": _utc(s.expires)},
        "state": d.state,
        "action": d.action,
        "reasons": d.reasons,
        "policies": d.policies,
        "expiresAfter": _utc(d.expires_after),
        "body": d.patch.members() if d.patch is not None else None,
        "held": d.held,
        "advisory": d.advisory,
    }


def change_record(record: dict[str, Any]) -> dict[str, Any]:
    """One entry of ``changes`` (or ``held``/``advisory``), a PATCH and why, from the
    decision's record (formatted once for both files)."""
    assert record["body"] is not None  # noqa: S101 - only decisions with a patch get here
    entry: dict[str, Any] = {
        "projectId": record["projectId"],
        "clusterId": record["clusterId"],
        "clusterName": record["clusterName"],
        "snapshotId": record["snapshotId"],
        "action": record["action"],
        "observed": record["observed"],
        "body": record["body"],
        "policy": ", ".join(record["policies"]) or "safety",
        "reasons": record["reasons"],
        "expiresAfter": record["expiresAfter"],
    }
    if record["held"]:
        entry["held"] = record["held"]
    return entry


LISTS = ("changes", "held", "advisory")


@dataclass(frozen=True)
class EncodedCluster:
    """One cluster's plan as the files hold it, ready for PlanBuilder to write (made by
    encode_cluster, which is pure: all a plan's I/O stays in PlanBuilder)."""

    key: tuple[str, str, str]  # project, kind, cluster id: the plan's order
    decisions: bytes  # lines of decisions.jsonl
    lists: dict[str, bytes]  # lines of changes, held and advisory, by snapshot id
    summary: dict[str, Any]  # the cluster's entry in plan.json's clusters, with its counts


def encode_cluster(plan: ClusterPlan) -> EncodedCluster:
    """Encode one cluster's plan: its decision lines, its list entries and its summary."""
    t = plan.target
    # Lines go into a bytearray as they come: keeping 300 encoded lines alive to join them
    # later cost 2.4 us a line (allocation of blocks above pymalloc's 512 bytes), against
    # 0.1 us to copy each into a buffer and let it go.
    decisions = bytearray()
    entries: dict[str, list[dict[str, Any]]] = {name: [] for name in LISTS}
    for d in plan.decisions:
        record = decision_record(plan, d)
        decisions += encode_line(record)
        if (listed := d.listed_as) is not None:
            entries[listed if listed in ("held", "advisory") else "changes"].append(
                change_record(record)
            )
    lists: dict[str, bytes] = {}
    for name, items in entries.items():
        lines = bytearray()
        for item in sorted(items, key=lambda c: c["snapshotId"]):
            lines += encode_line(item)
        lists[name] = bytes(lines)
    summary = {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "name": t.name,
        "kind": t.kind,
        "policies": plan.policies,
        "holds": [{"kind": h.kind, "reason": h.reason, "alertId": h.alert_id} for h in plan.holds],
        "errors": plan.errors,
        "counts": plan.counts(),
    }
    key = (t.project_id, t.kind, t.cluster_id)
    return EncodedCluster(key, bytes(decisions), lists, summary)


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
    decisions_out: BinaryIO | None = None
    lease_seconds: float | None = None
    service_version: str | None = None
    clusters: list[dict[str, Any]] = field(default_factory=list)
    by_state: Counter[str] = field(default_factory=Counter)
    by_action: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # Anonymous files that live as long as the builder; write() closes them.
        self._spools: dict[str, Any] = {
            name: tempfile.TemporaryFile("w+b", buffering=WRITE_BUFFER)  # noqa: SIM115
            for name in LISTS
        }
        self._last: tuple[str, str, str] | None = None

    def add(self, plan: ClusterPlan) -> None:
        """Take one cluster's plan: write its decisions, spool its changes, keep its summary."""
        cluster = encode_cluster(plan)
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

    def close(self) -> None:
        """Drop the spool files (write() closes them; an aborted plan needs this)."""
        for spool in self._spools.values():
            spool.close()

    def extend(self, plans: Iterable[ClusterPlan]) -> None:
        """Take several cluster plans in order."""
        for plan in plans:
            self.add(plan)

    def head(self, errors: list[str] | None = None) -> dict[str, Any]:
        """The plan without its changes, held and advisory lists (what summaries need)."""
        return {
            "format": FORMAT,
            "createdAt": format_timestamp(self.created_at),
            "evaluatedAt": format_timestamp(self.evaluated_at),
            "baseUrl": self.base_url,
            "serviceVersion": self.service_version,
            "leaseSeconds": self.lease_seconds,
            "policies": [
                {"name": p.name, "sha256": p.sha256}
                for p in sorted(self.policies, key=lambda p: p.name)
            ],
            "summary": self.summary(),
            "clusters": self.clusters,
            **{name: f"@@{name}@@" for name in LISTS},
            "errors": errors or [],
        }

    def write(self, out: BinaryIO, errors: list[str] | None = None) -> dict[str, Any]:
        """Write the plan file (UTF-8, indented by two, each entry of the three lists on a
        line of its own) and return its head."""
        head = self.head(errors)
        text = dumps(head)
        for name in LISTS:
            before, text = text.split(f'"@@{name}@@"', 1)
            out.write(before.encode())
            _write_list(out, self._spools[name])
            self._spools[name].close()
        out.write(text.encode())
        return {k: v for k, v in head.items() if k not in LISTS}

    def document(self, errors: list[str] | None = None) -> dict[str, Any]:
        """The whole plan document in memory (small plans and tests)."""
        buffer = io.BytesIO()
        self.write(buffer, errors)
        document: dict[str, Any] = json.loads(buffer.getvalue())
        return document

    def summary(self) -> dict[str, Any]:
        """Counts by state and by action, holds and errors."""
        return {
            "clusters": len(self.clusters),
            "snapshots": sum(self.by_state.values()),
            "byState": dict(sorted(self.by_state.items())),
            "byAction": dict(sorted(self.by_action.items())),
            "clustersHeld": sum(1 for c in self.clusters if c["holds"]),
            "clustersWithErrors": sum(1 for c in self.clusters if c["errors"]),
        }


def _write_list(out: BinaryIO, spool: Any) -> None:
    # One entry a line, as spooled: re-encoding 600k entries with indent=2 (json's pure
    # Python encoder) took a sixth of a 2,000-cluster plan's time, and a line per change
    # is what grep and diff want anyway.
    spool.seek(0)
    first = True
    for line in spool:
        out.write((b"[\n    " if first else b",\n    ") + line.rstrip(b"\n"))
        first = False
    out.write(b"[]" if first else b"\n  ]")


def read_entries(path: Path, name: str) -> Iterator[dict[str, Any]]:
    """Stream the entries of a plan file's list ``name`` (changes, held or advisory).

    Plans written by PlanBuilder are read entry by entry; a plan in another layout (edited
    and re-saved, say) is read whole.
    """
    opening = f'  "{name}": ['
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.rstrip("\n") in (opening + "],", opening + "]"):
                return
            if line.rstrip("\n") == opening:
                yield from _entries(lines)
                return
    document = json.loads(path.read_text(encoding="utf-8"))
    yield from document.get(name, []) if isinstance(document, dict) else []


def _entries(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    # An entry is one line (as PlanBuilder writes it) or, in a plan re-saved with
    # json.dumps(indent=2), a block from "    {" to "    }".
    block: list[str] = []
    for line in lines:
        stripped = line.rstrip("\n")
        if stripped in ("  ],", "  ]"):
            return
        block.append(stripped)
        one_line = len(block) == 1 and stripped.endswith(("}", "},"))
        if one_line or stripped in ("    },", "    }"):
            entry: dict[str, Any] = json.loads("\n".join(block).rstrip(","))
            yield entry
            block = []


def read_head(path: Path) -> dict[str, Any]:
    """A plan file without its three long lists, read line by line (flat memory)."""
    kept: list[str] = []
    skipping = False
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            stripped = line.rstrip("\n")
            if skipping:
                if stripped in ("  ],", "  ]"):
                    skipping = False
                continue
            if any(stripped == f'  "{n}": [' for n in LISTS):
                skipping = True
                continue
            if any(stripped.startswith(f'  "{n}": [') for n in LISTS):
                continue  # an empty list on one line
            kept.append(line)
    try:
        # "errors" always follows the lists, so removing them leaves valid JSON.
        head: Any = json.loads("".join(kept))
    except ValueError:
        head = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(head, dict):
        # A bad input file, not a programming error: ValueError, as for unparsable JSON.
        raise ValueError(f"it holds a JSON {type(head).__name__}, not a plan object")  # noqa: TRY004
    # In another layout (one line, another indent) the lists were not recognised above.
    return {k: v for k, v in head.items() if k not in LISTS}


def dumps(document: dict[str, Any]) -> str:
    """The plan file's text."""
    return json.dumps(document, indent=2) + "\n"
