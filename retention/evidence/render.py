"""The evidence in its four formats, from one document (build.py): HTML and Markdown by
the run reports' Jinja environments (the same escaping), the whole document as JSON and
every change as CSV. The document holds the first changes only; the JSON and the CSV
stream every one from the ledger as they are written (a year of a fleet has hundreds of
thousands), so that no format needs them all in memory."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO, TextIO

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
# What makes csv.writer quote a cell (its delimiter, quote and line ends).
_QUOTED = (",", '"', "\r", "\n")
# Distinct cell texts kept at once (a day's times, names and reasons; not snapshot ids).
_CELLS = 100_000
# The JSON's entries are copied into place a megabyte at a time.
_COPIED = 1 << 20


def render(doc: Mapping[str, Any], fmt: str) -> str:
    """The document as HTML or Markdown."""
    env = html_environment() if fmt == "html" else markdown_environment()
    template = env.get_template(f"evidence.{fmt}.j2")
    return template.render(doc=doc, LOG_ROWS=PREVIEW, STRIP_NAMES=STRIP_NAMES)


def write(
    make: Callable[[], dict[str, Any]],
    outs: Mapping[str, TextIO],
    log: Iterable[dict[str, Any]],
    spill: Callable[[], BinaryIO] | None = None,
) -> dict[str, Any]:
    """Write each format of ``outs`` to its stream; the document, made by ``make``. ``log``
    gives every change of ours, read once for the JSON and the CSV together (the HTML and
    the Markdown list the document's first ones).

    With ``spill`` (it opens a temporary file) the log comes first: the CSV's rows, and
    the JSON's entries to the temporary file, copied into place once the document is
    made. ``make`` may then wait for the chain's verification, made in another process
    meanwhile: a year's log is as long to write as the chain to verify. Without, the
    document comes first (the JSON is written to its stream as it goes)."""
    json_out, csv_out = outs.get("json"), outs.get("csv")
    logged = json_out is not None or csv_out is not None
    doc = make() if spill is None or not logged else None
    sinks: list[_JsonLog | _CsvLog] = []
    if json_out is not None:
        sinks.append(_JsonLog(json_out, doc, spill))
    if csv_out is not None:
        sinks.append(_CsvLog(csv_out))
    if sinks:
        for entry in log:
            for sink in sinks:
                sink.add(entry)
    doc = make() if doc is None else doc
    for sink in sinks:
        sink.end(doc)
    for fmt, out in outs.items():
        if fmt not in ("json", "csv"):
            out.write(render(doc, fmt))
    return doc


# One encoder for every entry, its keys sorted as the document's (msgspec: a year's log
# has hundreds of thousands of entries, and json.dumps builds an encoder for each).
_ENTRY = msgspec.json.Encoder(order="sorted")


class _JsonLog:
    """The whole document, its ``changes.log`` every change: written as they come after
    the document's first part (``doc`` given), else to a temporary file (``spill``
    opens it) as msgspec's bytes, and copied into place after the first part."""

    def __init__(
        self,
        out: TextIO,
        doc: Mapping[str, Any] | None,
        spill: Callable[[], BinaryIO] | None,
    ) -> None:
        self.out, self.first = out, True
        self.spill = spill() if doc is None and spill is not None else None
        self.tail = "" if doc is None else self._head(doc)

    def _head(self, doc: Mapping[str, Any]) -> str:
        """Write the document up to its log; what follows the log."""
        shell = {**doc, "changes": {**doc["changes"], "log": _LOG}}
        text = json.dumps(shell, indent=2, sort_keys=True, ensure_ascii=False)
        before, after = text.split(json.dumps(_LOG))
        self.out.write(before + "[")
        return after

    def add(self, entry: Mapping[str, Any]) -> None:
        if self.spill is not None:
            self.spill.write(b"\n      " if self.first else b",\n      ")
            self.spill.write(_ENTRY.encode(entry))
        else:
            self.out.write("\n      " if self.first else ",\n      ")
            self.out.write(_ENTRY.encode(entry).decode())
        self.first = False

    def end(self, doc: Mapping[str, Any]) -> None:
        if self.spill is not None:
            self.tail = self._head(doc)
            # The entries are UTF-8 as the file is: copied as bytes, past the text layer.
            self.out.flush()
            self.spill.seek(0)
            shutil.copyfileobj(self.spill, self.out.buffer, _COPIED)
        self.out.write(("]" if self.first else "\n    ]") + self.tail + "\n")


class _CsvLog:
    """Every change of the period, retention's and then those made outside it, as
    csv.writer writes them (csv_cell), each cell made once per distinct text: a year's
    log is hundreds of thousands of rows that say the same names, times and reasons, and
    csv.writer looked at each field of each one (a third of the JSON and CSV's time)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        out.write(",".join(CSV_COLUMNS) + "\n")

    def _id(self, value: str | None) -> str:
        # Identifiers are letters and digits (each snapshot's its own: not worth keeping).
        return value if value is not None and value.isalnum() else _cell(value)

    def add(self, ch: Mapping[str, Any]) -> None:
        before, after, cell, ident = ch["before"], ch["after"], _cell, self._id
        cells = (
            cell(ch["at"]),
            "retention",
            "undo" if ch["mode"] == "undo" else "change",
            cell(ch["outcome"]),
            ident(ch["runId"]),
            cell(ch["mode"]),
            cell(ch["actor"]),
            cell(ch["approval"]),
            ident(ch["projectId"]),
            ident(ch["clusterId"]),
            cell(ch["cluster"]),
            ident(ch["snapshotId"]),
            cell(ch["action"]),
            cell(before.expires),
            _BOOL[before.doNotDelete],
            cell(after.expires),
            _BOOL[after.doNotDelete],
            cell(ch["policy"]),
            cell(ch["why"]),
            "",
        )
        self.out.write(",".join(cells) + "\n")

    def end(self, doc: Mapping[str, Any]) -> None:
        cell = _cell
        for o in doc["changes"]["outside"]:
            before, after = o["before"] or {}, o["after"] or {}
            cells = (
                cell(o["at"]),
                "outside",
                cell(o["kind"]),
                "",
                "",
                "",
                "",
                "",
                cell(o["projectId"]),
                cell(o["clusterId"]),
                cell(o["cluster"]),
                cell(o["snapshotId"]),
                "",
                cell(before.get("expires")),
                _BOOL[before.get("doNotDelete")],
                cell(after.get("expires")),
                _BOOL[after.get("doNotDelete")],
                "",
                "",
                cell(o["alertId"]),
            )
            self.out.write(",".join(cells) + "\n")


def csv_cell(value: object) -> str:
    """One CSV cell (None: empty) as csv.writer's minimal quoting writes it (and a carriage return
    quoted too, which csv.writer leaves bare before Python 3.13 when lines end in "\\n");
    a text a spreadsheet would take for a formula (a cluster named "=cmd|..." by someone)
    starts with an apostrophe."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = str(value)
    if value.startswith(_FORMULA):
        value = "'" + value
    if any(c in value for c in _QUOTED):
        return '"' + value.replace('"', '""') + '"'
    return value


# Each distinct text made once: a year's log says the same times, names and reasons
# hundreds of thousands of times.
_cell = functools.lru_cache(maxsize=_CELLS)(csv_cell)

_BOOL = {None: "", True: "true", False: "false"}
