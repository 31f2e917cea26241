"""The evidence in its four formats, from one document (build.py): HTML and Markdown by
the run reports' Jinja environments (the same escaping), the change log as CSV, and the
whole document as JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from retention.evidence.coverage import STRIP
from retention.report.render import html_environment, markdown_environment

FORMATS = ("html", "md", "json", "csv")
# Changes listed in the HTML and the Markdown; the CSV and the JSON have every one.
LOG_ROWS = 200
STRIP_NAMES = {mark: name for name, mark in STRIP.items()}
CSV_COLUMNS = (
    "at",
    "by",
    "kind",
    "outcome",
    "runId",
    "mode",
    "actor",
    "approval",
    "projectId",
    "clusterId",
    "cluster",
    "snapshotId",
    "action",
    "beforeExpires",
    "beforeDoNotDelete",
    "afterExpires",
    "afterDoNotDelete",
    "policy",
    "why",
    "alertId",
)


def render(doc: Mapping[str, Any], fmt: str) -> str:
    """The document in format ``fmt`` (one of FORMATS)."""
    if fmt == "json":
        return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return change_log(doc)
    env = html_environment() if fmt == "html" else markdown_environment()
    template = env.get_template(f"evidence.{fmt}.j2")
    return template.render(doc=doc, LOG_ROWS=LOG_ROWS, STRIP_NAMES=STRIP_NAMES)


def change_log(doc: Mapping[str, Any]) -> str:
    """Every change of the period, retention's and those made outside it, one row each."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for ch in doc["changes"]["log"]:
        writer.writerow(
            {
                **{k: ch[k] for k in ("at", "outcome", "runId", "mode", "actor", "approval")},
                **{k: ch[k] for k in ("projectId", "clusterId", "cluster", "snapshotId")},
                "by": "retention",
                "kind": "undo" if ch["mode"] == "undo" else "change",
                "action": ch["action"],
                **_fields("before", ch["before"]),
                **_fields("after", ch["after"]),
                "policy": ch["policy"],
                "why": ch["why"],
                "alertId": None,
            }
        )
    for o in doc["changes"]["outside"]:
        writer.writerow(
            {
                "at": o["at"],
                "by": "outside",
                "kind": o["kind"],
                **{k: o[k] for k in ("projectId", "clusterId", "cluster", "snapshotId")},
                **_fields("before", o["before"]),
                **_fields("after", o["after"]),
                "alertId": o["alertId"],
            }
        )
    return out.getvalue()


def _fields(side: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    value = value or {}
    dnd = value.get("doNotDelete")
    return {
        f"{side}Expires": value.get("expires"),
        f"{side}DoNotDelete": None if dnd is None else str(dnd).lower(),
    }
