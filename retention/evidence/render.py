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

import msgspec

from retention.evidence.coverage import STRIP
from retention.evidence.log import PREVIEW
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


def write(
    doc: Mapping[str, Any], outs: Mapping[str, TextIO], log: Iterable[dict[str, Any]]
) -> None:
    """Write the document in each format of ``outs`` to its stream; ``log`` gives every
    change of ours, read once for the JSON and the CSV together (the HTML and the
    Markdown list the document's first ones)."""
    sinks: list[_JsonLog | _CsvLog] = []
    for fmt, out in outs.items():
        if fmt == "json":
            sinks.append(_JsonLog(doc, out))
        elif fmt == "csv":
            sinks.append(_CsvLog(doc, out))
        else:
            out.write(render(doc, fmt))
    if not sinks:
        return
    for entry in log:
        for sink in sinks:
            sink.add(entry)
    for sink in sinks:
        sink.end()


# One encoder for every entry, its keys sorted as the document's (msgspec: a year's log
# has hundreds of thousands of entries, and json.dumps builds an encoder for each).
_ENTRY = msgspec.json.Encoder(order="sorted")


class _JsonLog:
    """The whole document, its ``changes.log`` every change, written as they come."""

    def __init__(self, doc: Mapping[str, Any], out: TextIO) -> None:
        shell = {**doc, "changes": {**doc["changes"], "log": _LOG}}
        text = json.dumps(shell, indent=2, sort_keys=True, ensure_ascii=False)
        before, self.after = text.split(json.dumps(_LOG))
        self.out, self.first = out, True
        out.write(before + "[")

    def add(self, entry: Mapping[str, Any]) -> None:
        self.out.write("\n      " if self.first else ",\n      ")
        self.out.write(_ENTRY.encode(entry).decode())
        self.first = False

    def end(self) -> None:
        self.out.write(("]" if self.first else "\n    ]") + self.after + "\n")


class _CsvLog:
    """Every change of the period, retention's and then those made outside it."""

    def __init__(self, doc: Mapping[str, Any], out: TextIO) -> None:
        self.doc, self.writer = doc, csv.writer(out, lineterminator="\n")
        self.writer.writerow(CSV_COLUMNS)
        # Each distinct text made safe once: a year's log says the same names and reasons
        # hundreds of thousands of times.
        self.safe: dict[str, str] = {}

    def _safe(self, value: str | None) -> str | None:
        if value is None:
            return None
        found = self.safe.get(value)
        if found is None:
            found = self.safe[value] = "'" + value if value.startswith(_FORMULA) else value
        return found

    def add(self, ch: Mapping[str, Any]) -> None:
        before, after, safe = ch["before"], ch["after"], self._safe
        self.writer.writerow(
            (
                ch["at"],
                "retention",
                "undo" if ch["mode"] == "undo" else "change",
                ch["outcome"],
                ch["runId"],
                ch["mode"],
                safe(ch["actor"]),
                safe(ch["approval"]),
                ch["projectId"],
                ch["clusterId"],
                safe(ch["cluster"]),
                ch["snapshotId"],
                ch["action"],
                before.expires,
                _BOOL[before.doNotDelete],
                after.expires,
                _BOOL[after.doNotDelete],
                safe(ch["policy"]),
                safe(ch["why"]),
                None,
            )
        )

    def end(self) -> None:
        for o in self.doc["changes"]["outside"]:
            before, after = o["before"] or {}, o["after"] or {}
            self.writer.writerow(
                (
                    o["at"],
                    "outside",
                    o["kind"],
                    None,
                    None,
                    None,
                    None,
                    None,
                    o["projectId"],
                    o["clusterId"],
                    _cell(o["cluster"]),
                    o["snapshotId"],
                    None,
                    before.get("expires"),
                    _BOOL[before.get("doNotDelete")],
                    after.get("expires"),
                    _BOOL[after.get("doNotDelete")],
                    None,
                    None,
                    o["alertId"],
                )
            )


_BOOL = {None: None, True: "true", False: "false"}


def _cell(value: object) -> object:
    """A text a spreadsheet would take for a formula (a cluster named "=cmd|..." by
    someone) starts with an apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value
