"""The evidence in its four formats, from one document (build.py): HTML and Markdown by
the run reports' Jinja environments (the same escaping), the whole document as JSON and
every change as CSV. The document holds the first changes only; the JSON and the CSV
stream every one from the ledger as they are written (a year of a fleet has hundreds of
thousands), so that no format needs them all in memory."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from retention.evidence.coverage import STRIP
from retention.evidence.gather import PREVIEW
from retention.report.render import html_environment, markdown_environment

FORMATS = ("html", "md", "json", "csv")
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
# Where the JSON's change log goes: a string no document holds (json escapes the NULs).
_LOG = "\0log\0"
# A cell a spreadsheet would take for a formula: written with a leading apostrophe.
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def render(doc: Mapping[str, Any], fmt: str) -> str:
    """The document as HTML or Markdown."""
    env = html_environment() if fmt == "html" else markdown_environment()
    template = env.get_template(f"evidence.{fmt}.j2")
    return template.render(doc=doc, LOG_ROWS=PREVIEW, STRIP_NAMES=STRIP_NAMES)


def write(doc: Mapping[str, Any], fmt: str, out: TextIO, log: Iterable[dict[str, Any]]) -> None:
    """Write the document in ``fmt`` to ``out``; ``log`` gives every change of ours (the
    JSON and the CSV read it; the others list the document's first ones)."""
    if fmt == "json":
        write_json(doc, out, log)
    elif fmt == "csv":
        write_csv(doc, out, log)
    else:
        out.write(render(doc, fmt))


def write_json(doc: Mapping[str, Any], out: TextIO, log: Iterable[dict[str, Any]]) -> None:
    """The whole document, its ``changes.log`` every change, streamed."""
    shell = {**doc, "changes": {**doc["changes"], "log": _LOG}}
    text = json.dumps(shell, indent=2, sort_keys=True, ensure_ascii=False)
    before, after = text.split(json.dumps(_LOG))
    out.write(before)
    out.write("[")
    first = True
    for entry in log:
        out.write("\n      " if first else ",\n      ")
        out.write(json.dumps(_public(entry), sort_keys=True, ensure_ascii=False))
        first = False
    out.write("\n    ]" if not first else "]")
    out.write(after)
    out.write("\n")


def write_csv(doc: Mapping[str, Any], out: TextIO, log: Iterable[dict[str, Any]]) -> None:
    """Every change of the period, retention's and those made outside it, one row each."""
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for ch in log:
        writer.writerow(
            _cells(
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
        )
    for o in doc["changes"]["outside"]:
        writer.writerow(
            _cells(
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
        )


def _public(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if not k.startswith("_")}


def _cells(row: dict[str, Any]) -> dict[str, Any]:
    """A row whose text cells cannot run as a spreadsheet formula (a cluster named
    "=cmd|..." by someone): such a cell starts with an apostrophe."""
    return {
        k: "'" + v if isinstance(v, str) and v.startswith(_FORMULA) else v for k, v in row.items()
    }


def _fields(side: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    value = value or {}
    dnd = value.get("doNotDelete")
    return {
        f"{side}Expires": value.get("expires"),
        f"{side}DoNotDelete": None if dnd is None else str(dnd).lower(),
    }
