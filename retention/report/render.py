"""Render report.html and report.md from a run folder, and the run's summary in Markdown
for its notice.

Two Jinja environments over the package's templates: the HTML one autoescapes everything, and
the Markdown one passes every expression through ``markdown_text`` (its ``finalize``), so in
both a value from the data is escaped unless a template writes it as literal text, and no
template has to remember a filter. The data keeps its timestamps as datetimes: the
``timestamp`` filter writes one as the files do, ``minutes`` to the minute, ``utc`` in words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import jinja2
import markupsafe

from retention.core.freshness import age_words
from retention.core.glossary import GLOSSARY
from retention.core.outage import tolerance_sentence, tolerance_text
from retention.core.outside import retained_text
from retention.core.planfile import Body
from retention.core.timestamps import format_timestamp
from retention.core.wording import plural, printable, size
from retention.errors import exit_meaning
from retention.report.cells import ident
from retention.report.groups import by_cluster
from retention.report.read import collect
from retention.report.summary import (
    ACTIONS,
    NOT_SENT,
    OUTCOMES,
    RunInfo,
    RunSummary,
    action_counts,
    holds_text,
    outcome_counts,
)
from retention.report.svg import CALENDAR_MARGINS, TIMELINE_MARGINS, percent
from retention.runfolder.folder import REPORTS, RunFolder, partial_path, plan_report_path

# Where a cluster's expected age of its newest restorable snapshot comes from, in words.
EXPECTED_FROM = {
    "policy": "expect.newest_within",
    "cadence": "twice its cadence",
    "default": "the default, too few snapshots for a cadence",
}

# Characters with a meaning in GitHub-flavoured Markdown; escaped with a backslash, which
# CommonMark allows before any ASCII punctuation. "|" would split a table cell.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#!])")


class MarkdownCode(str):
    """A code span the ``code`` filter made: inert already, so finalize leaves it as it is."""

    __slots__ = ()


def markdown_code(value: Any) -> MarkdownCode:
    """A value as a Markdown code span on one line, fenced with more backticks than it
    holds in a row, so nothing in it can end the span or mean anything."""
    text = printable(" ".join(str(value).splitlines()))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return MarkdownCode(f"{fence}{pad}{text}{pad}{fence}")


def markdown_text(value: Any) -> str:
    """A value as inert Markdown on one line: specials backslash-escaped, newlines as spaces
    (a code span the ``code`` filter made is inert already)."""
    if value is None:
        return ""
    if isinstance(value, MarkdownCode):
        return str(value)
    if isinstance(value, bool | int | float):
        return str(value)
    text = printable(" ".join(str(value).splitlines()))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _utc(value: datetime) -> str:
    return format_timestamp(value).replace("T", " ").replace("Z", " UTC")


def _number(value: int) -> str:
    """Thousands separated with a thin space, so 271947 reads as 271 947 in any locale."""
    return f"{value:,}".replace(",", "\u2009")


def _shorten(value: str, limit: int = 120) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "\u2026"


def _minutes(value: datetime | str) -> str:
    """An instant to the minute, for tables: 2026-11-24 03:00; a text in the files' shape
    (a hold's until, as its policy writes it) likewise; any other text ("doNotDelete", a
    day) as it is."""
    text = format_timestamp(value) if isinstance(value, datetime) else value
    if len(text) == 20 and text[10] == "T" and text.endswith("Z"):
        return f"{text[:10]} {text[11:16]}"
    return text


def _body_text(body: Body) -> str:
    """A PATCH body as the API spells it, e.g. "doNotDelete: true"."""
    return ", ".join(f"{k}: {_body_value(v)}" for k, v in sorted(body.items()))


def _body_value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return format_timestamp(value) if isinstance(value, datetime) else str(value)


def _filters(env: jinja2.Environment) -> jinja2.Environment:
    env.filters["utc"] = _utc
    env.filters["timestamp"] = format_timestamp
    env.filters["retained"] = retained_text
    env.filters["number"] = _number
    env.filters["shorten_text"] = _shorten
    env.filters["exit_meaning"] = exit_meaning
    env.filters["plural"] = plural
    env.filters["outage"] = tolerance_text
    env.filters["outage_sentence"] = tolerance_sentence
    env.filters["body_text"] = _body_text
    env.filters["size"] = lambda count: "-" if count is None else size(count)
    env.filters["minutes"] = _minutes
    # Counts written as the environment writes a number (report.md overrides it).
    env.filters["action_counts"] = lambda counts: action_counts(counts, env.filters["number"])
    env.filters["outcome_counts"] = lambda counts: outcome_counts(counts, env.filters["number"])
    env.filters["holds_text"] = holds_text
    env.filters["age"] = age_words
    env.filters["expected_from"] = EXPECTED_FROM.__getitem__
    env.globals.update(ACTIONS=ACTIONS, NOT_SENT=NOT_SENT, OUTCOMES=OUTCOMES, GLOSSARY=GLOSSARY)
    return env


def html_text(value: Any) -> Any:
    """A value for the HTML report (its ``finalize``, before autoescape): a string with its
    control characters escaped (white space aside); markup a filter or macro made is left
    as it is."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return printable(value, html=True)
    return value


@cache
def html_environment() -> jinja2.Environment:
    """The HTML templates' environment: everything autoescaped; ``ident`` writes an
    identifier that wraps at its separators only (retention.report.cells)."""
    env = _filters(
        jinja2.Environment(
            loader=jinja2.PackageLoader("retention.report", "templates"),
            autoescape=jinja2.select_autoescape(
                enabled_extensions=("html.j2",), default_for_string=True, default=True
            ),
            finalize=html_text,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
    )
    env.filters["ident"] = ident
    env.filters["percent"] = percent
    env.filters["by_cluster"] = by_cluster
    env.globals.update(TIMELINE_MARGINS=TIMELINE_MARGINS, CALENDAR_MARGINS=CALENDAR_MARGINS)
    return env


@cache
def markdown_environment() -> jinja2.Environment:
    """The Markdown templates' environment: every expression through ``markdown_text``."""
    env = _filters(
        jinja2.Environment(
            loader=jinja2.PackageLoader("retention.report", "templates"),
            autoescape=False,  # noqa: S701 - Markdown, not HTML: finalize escapes instead
            finalize=markdown_text,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
    )
    # Plain digits: report.md is grepped and pasted into chats, where a thin space in
    # 1 673 breaks a search for 1673.
    env.filters["number"] = str
    env.filters["code"] = markdown_code
    return env


class RenderedRun(NamedTuple):
    """The reports written, and the run's summary they were rendered from."""

    paths: list[Path]
    summary: RunSummary


def render_run(
    run_dir: Path, run: RunInfo, formats: Sequence[str] = ("html", "markdown")
) -> RenderedRun:
    """Write report.html and/or report.md into run_dir from its plan.json, decisions.jsonl.zst and
    results.jsonl; return their paths and the run's summary (for the notice: ``formats``
    may be empty, the summary is read all the same).

    Raises FileNotFoundError when run_dir has no plan.json, and ValueError for an unknown
    format (before reading anything).
    """
    _check_formats(formats)  # before reading anything
    data = collect(run_dir, run)
    summary = data.summary
    paths = write_reports(
        run_dir, formats, REPORT_TEMPLATES, data=data, run=run, summary=summary, plan=summary.plan
    )
    return RenderedRun(paths, summary)


def render_plan(plan: Path, run: RunInfo, formats: Sequence[str]) -> list[Path]:
    """Write the reports of the plan at ``plan`` (a run of mode "plan": nothing sent) beside
    it: report.html and report.md in its run folder, NAME.report.html and NAME.report.md
    beside any other NAME.json; return their paths."""
    _check_formats(formats)
    data = collect(plan.parent, run, plan_path=plan)
    summary = data.summary
    context = {"data": data, "run": run, "summary": summary, "plan": summary.plan}
    return [
        _render_format(fmt, REPORT_TEMPLATES, context, plan_report_path(plan, fmt))
        for fmt in dict.fromkeys(formats)
    ]


def render_reports(
    run_dir: Path, run: RunInfo, formats: Sequence[str] = ("html", "markdown")
) -> list[Path]:
    """Write report.html and/or report.md into run_dir (``render_run``); return the paths."""
    return render_run(run_dir, run, formats).paths


def summary_markdown(summary: RunSummary) -> str:
    """The run's summary in Markdown, as report.md begins (its text before the first
    ``###`` heading, without the blank lines around it): the body of the run's notice."""
    text = markdown_environment().get_template(SUMMARY_TEMPLATE).render(summary=summary)
    return "\n".join(text.splitlines()).strip()


REPORT_TEMPLATES = {"html": "report.html.j2", "markdown": "report.md.j2"}
# report.md's head, included by report.md.j2 and rendered alone for the notice.
SUMMARY_TEMPLATE = "summary.md.j2"


def write_reports(
    run_dir: Path, formats: Sequence[str], templates: Mapping[str, str], **context: Any
) -> list[Path]:
    """Render each format's template (``templates`` by format) with ``context`` into its
    file in ``run_dir``; return the paths. Each is written beside and renamed, so a reader
    never sees half a report."""
    _check_formats(formats)
    folder = RunFolder(run_dir)
    return [
        _render_format(fmt, templates, context, folder.report(fmt))
        for fmt in dict.fromkeys(formats)
    ]


def _render_format(
    fmt: str, templates: Mapping[str, str], context: Mapping[str, Any], path: Path
) -> Path:
    """Render the template of format ``fmt`` with ``context`` into ``path``; the path."""
    env = html_environment() if fmt == "html" else markdown_environment()
    render_whole(env.get_template(templates[fmt]), context, path)
    return path


def render_whole(template: jinja2.Template, context: Mapping[str, Any], path: Path) -> None:
    """Render ``template`` with ``context`` into ``path``: streamed into a partial file beside
    it and renamed, so a reader never sees half a page (OSError when it cannot be written)."""
    partial = partial_path(path)
    try:
        with partial.open("w", encoding="utf-8") as out:
            for chunk in template.generate(**context):
                out.write(chunk)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _check_formats(formats: Sequence[str]) -> None:
    unknown = [f for f in formats if f not in REPORTS]
    if unknown:
        raise ValueError(f"unknown report format {unknown[0]!r}: use html or markdown")
