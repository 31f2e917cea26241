"""Plan files written by hand for tests, in the format the planner writes (v2): plan.json
(the head, naming its decisions by digest and count) and decisions.jsonl.zst beside it.

``write_plan_files`` is for a test that edits what a plan holds (a record, the head) and
must still produce a plan that reads back as one; ``decision_lines`` reads what a plan's
decisions file holds, decompressed, for golden files and assertions."""

from __future__ import annotations

import hashlib
import io
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retention.core.planfile import PlanHead
from retention.runfolder.folder import decisions_path
from retention.runfolder.planread import decision_lines as _lines
from retention.runfolder.planwrite import compress, encode_line, write_plan


def write_plan_files(
    plan_path: Path, head: PlanHead | Mapping[str, Any], records: Iterable[Mapping[str, Any]]
) -> Path:
    """Write ``head`` to ``plan_path`` and ``records`` (decision records, in plan order)
    beside it, one zstd frame per cluster, with the digest and count in the head."""
    frames = bytearray()
    count = 0
    for _key, group in itertools.groupby(
        records, key=lambda r: (r["projectId"], r["kind"], r["clusterId"])
    ):
        lines = b"".join(encode_line(r) for r in group)
        count += lines.count(b"\n")
        frames += compress(lines)
    decisions_path(plan_path).write_bytes(bytes(frames))
    whole = {**head, "decisions": {"sha256": hashlib.sha256(frames).hexdigest(), "records": count}}
    clusters = whole.pop("clusters", [])
    out = io.BytesIO()
    write_plan(out, whole, clusters)  # type: ignore[arg-type] # a head, maybe edited on purpose
    plan_path.write_bytes(out.getvalue())
    return plan_path


def decision_lines(plan_path: Path) -> list[bytes]:
    """The lines of a plan's decisions file (decompressed), each with its newline."""
    return [line + b"\n" for line in _lines(decisions_path(plan_path))]
