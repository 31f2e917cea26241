"""report.html and report.md of an undo, from its undo.json: what was put back, and what
was left alone and why. The same two escaping environments as the run's reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from retention.report import render
from retention.report.model import RunInfo

# Outcomes in the order the report lists them: what needs a look first.
ORDER = ("failed", "stale", "gone", "expired", "lapsed", "restored", "would-restore", "unchanged")


def render_undo_reports(
    run_dir: Path, run: RunInfo, formats: Sequence[str] = ("html", "markdown")
) -> list[Path]:
    """Write report.html and/or report.md of the undo in ``run_dir``; return the paths."""
    document: dict[str, Any] = orjson.loads((run_dir / "undo.json").read_bytes())
    items = [
        {
            **item,
            "beforeText": state_text(item["before"]),
            "writtenText": state_text(item["written"]),
            "currentText": state_text(item["current"]),
        }
        for item in sorted(
            document["items"], key=lambda i: (ORDER.index(i["outcome"]), i["clusterName"])
        )
    ]
    written: list[Path] = []
    for fmt in dict.fromkeys(formats):
        env = render.html_environment() if fmt == "html" else render.markdown_environment()
        template = env.get_template(f"undo.{'html' if fmt == 'html' else 'md'}.j2")
        path = run_dir / render.FORMATS[fmt]
        partial = path.with_name(path.name + ".partial")
        try:
            partial.write_text(
                template.render(undo=document, items=items, run=run), encoding="utf-8"
            )
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
        written.append(path)
    return written


def state_text(state: dict[str, Any] | None) -> str:
    """A snapshot state of undo.json in words."""
    if state is None:
        return "gone"
    if state["doNotDelete"]:
        return "protected (doNotDelete)"
    return f"expires {state['expires']}" if state["expires"] else "no expiry"
