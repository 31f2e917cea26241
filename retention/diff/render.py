"""A review in words: lines for a terminal, and Markdown sized for a pull-request comment.

Both give the summary first (clusters changed, snapshots no longer kept and newly kept,
storage, holds, a verdict), then the changed clusters, the largest change first
(ClusterDiff.weight), each with its restore points before and after, the holds the change
adds or lifts, and a table of its snapshots. Unchanged clusters are counted, never listed.

The Markdown stays under MARKDOWN_BUDGET characters (GitHub refuses a comment over 65,536):
a cluster shows at most TABLE_ROWS snapshots and says how many more, and clusters stop
before the budget, with a last line saying how many more the JSON has. Names from the
service are escaped: a cluster named ``a|b`` or ``<img>`` cannot break a table or the page.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from retention.config.baseline import Baseline
from retention.core.compare import ClusterDiff, SnapshotShift, twin
from retention.core.restorepoints import Ladder
from retention.core.wording import counted, printable, size
from retention.diff.review import Review, Totals

MARKDOWN_BUDGET = 60_000
# Room kept for the last line (how many more clusters) and the errors after the clusters.
_TAIL = 2_000
TABLE_ROWS = 10  # snapshots shown per cluster in Markdown
TEXT_ROWS = 20  # ... and on a terminal
JSON_HINT = "`retention diff --format json`"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def compared_with(base: Baseline) -> str:
    """ "git:origin/main (commit 1a2b3c4d)" or the folder given."""
    if base.commit is not None:
        return f"{base.spec} (commit {base.commit[:12]})"
    return base.spec


def verdict(review: Review, totals: Totals) -> str:
    """What a reviewer must know, in one sentence (the exit code follows it)."""
    if review.keeps_less:
        return (
            f"the new policies stop keeping {counted(totals.stops_keeping, 'snapshot')} "
            f"in {counted(totals.keeping_less, 'cluster')}: read them before merging (exit 3)."
        )
    failed = " (some clusters could not be walked: exit 1)" if review.errors else ""
    if review.diffs:
        return f"the new policies keep at least what the base keeps{failed}."
    return f"no snapshot changes fate and no hold changes{failed}."


def summary_facts(review: Review) -> list[tuple[str, str]]:
    """The summary as (label, value) pairs, the same for every format."""
    t = review.totals()
    return [
        (
            "clusters changed",
            f"{t.changed} of {review.compared} ({review.unchanged} unchanged, not listed)",
        ),
        (
            "snapshots no longer kept",
            f"{t.stops_keeping} ({size(t.bytes_given_back)} given back)",
        ),
        ("snapshots newly kept", f"{t.newly_keeps} ({size(t.bytes_newly_kept)} kept longer)"),
        ("protection", f"{t.newly_protects} newly protected, {t.stops_protecting} no longer"),
        ("safety holds", f"{t.holds_added} added, {t.holds_gone} lifted"),
        ("errors", f"{len(review.errors)}"),
    ]


# --- the terminal --------------------------------------------------------------------------


def text_lines(review: Review, base: Baseline, *, what_if: bool) -> list[str]:
    """The review for a terminal: the summary, then a table per changed cluster."""
    when = _minute(review.evaluated_at) + (" (what-if: --at)" if what_if else "")
    lines = [f"Policy diff against {compared_with(base)}, as of {when}:"]
    lines += [f"  {label}: {value}" for label, value in summary_facts(review)]
    lines.append(f"Verdict: {verdict(review, review.totals())}")
    for diff in review.diffs:
        lines += ["", *_text_cluster(diff)]
    if review.errors:
        lines += ["", "Errors (these clusters are missing from the comparison):"]
        lines += [f"  - {printable(e)}" for e in review.errors]
    return lines


def _text_cluster(diff: ClusterDiff) -> list[str]:
    t = diff.target
    lines = [
        f"{printable(t.name)} ({t.kind} {printable(t.cluster_id)}, project {t.project_id})",
        f"  policies: {_names(diff.policies_before)} -> {_names(diff.policies_after)}",
        f"  restore points before: {_ladder(diff.ladder_before)}",
        f"  restore points after:  {_ladder(diff.ladder_after)}",
    ]
    lines += [f"  {label}: {printable(reason)}" for label, reason in hold_lines(diff)]
    lines += [f"  error: {printable(e)}" for e in diff.errors]
    if diff.shifts:
        rows = [_row(s) for s in diff.shifts[:TEXT_ROWS]]
        header = ("snapshot", "created", "size", "change", "may be deleted from", "why: was -> now")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
        for row in [header, *rows]:
            cells = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
            lines.append("  " + "  ".join([*cells, row[-1]]))
        more = len(diff.shifts) - TEXT_ROWS
        if more > 0:
            lines.append(f"  ... {counted(more, 'more snapshot')} (--format json lists every one)")
    return lines


def _row(shift: SnapshotShift) -> tuple[str, str, str, str, str, str]:
    deletable = _minute(shift.deletable_from) if shift.deletable_from else "-"
    if shift.held:
        deletable += " (held)"  # the gates are said once, above the table (hold_lines)
    return (
        printable(shift.snapshot_id),
        _minute(shift.created),
        size(shift.storage_bytes) if shift.storage_bytes is not None else "?",
        shift.shift,
        printable(deletable),
        f"{printable(shift.why_before)} -> {printable(shift.why_after)}",
    )


# --- Markdown --------------------------------------------------------------------------------


def markdown(review: Review, base: Baseline, *, what_if: bool) -> str:
    """The review as a pull-request comment, under MARKDOWN_BUDGET characters."""
    t = review.totals()
    when = _minute(review.evaluated_at) + (" (what-if)" if what_if else "")
    parts = [
        "## Retention policy diff\n\n",
        f"Against `{_code(compared_with(base))}`, as of {when}.\n\n",
        f"**Verdict:** {verdict(review, t)}\n\n",
        "| | |\n|---|---|\n",
        *(f"| {label} | {value} |\n" for label, value in summary_facts(review)),
    ]
    used = sum(map(len, parts))
    shown = 0
    for diff in review.diffs:
        section = _markdown_cluster(diff)
        if used + len(section) > MARKDOWN_BUDGET - _TAIL:
            break
        parts.append(section)
        used += len(section)
        shown += 1
    more = len(review.diffs) - shown
    if more:
        parts.append(f"\n{counted(more, 'more cluster')} in the JSON ({JSON_HINT}).\n")
    text = "".join(parts)
    return text + _markdown_errors(review.errors, MARKDOWN_BUDGET - len(text))


def _markdown_cluster(diff: ClusterDiff) -> str:
    t = diff.target
    lines = [
        f"\n### {_md(t.name)}\n",
        f"{t.kind} `{_code(t.cluster_id)}` of project `{_code(t.project_id)}`; "
        f"policies {_md(_names(diff.policies_before))} → {_md(_names(diff.policies_after))}\n",
        f"- restore points before: {_md(_ladder(diff.ladder_before))}",
        f"- restore points after: {_md(_ladder(diff.ladder_after))}",
        *(f"- {label}: {_md(_short(reason, 300))}" for label, reason in hold_lines(diff)),
        *(f"- error: {_md(_short(e, 300))}" for e in diff.errors),
        "",
    ]
    if diff.shifts:
        lines += [
            "| snapshot | created | size | change | may be deleted from | was | now |",
            "|---|---|---|---|---|---|---|",
        ]
        for shift in diff.shifts[:TABLE_ROWS]:
            lines.append(_markdown_row(shift))
        more = len(diff.shifts) - TABLE_ROWS
        if more > 0:
            lines.append(f"\n{counted(more, 'more snapshot')} in the JSON ({JSON_HINT}).")
    return "\n".join(lines) + "\n"


def _markdown_row(shift: SnapshotShift) -> str:
    snapshot, created, stored, change, deletable, _ = _row(shift)
    cells = [
        f"`{_code(snapshot)}`",
        created,
        stored,
        f"**{change}**" if shift.shift == "stops keeping" else change,
        _md(_short(deletable, 120)),
        _md(_short(shift.why_before, 120)),
        _md(_short(shift.why_after, 120)),
    ]
    return "| " + " | ".join(cells) + " |"


def _markdown_errors(errors: list[str], room: int) -> str:
    """The errors, as many as fit in ``room`` characters."""
    if not errors:
        return ""
    text = "\n**Errors** (these clusters are missing from the comparison):\n\n"
    for shown, error in enumerate(errors):
        line = f"- {_md(_short(error, 300))}\n"
        if len(text) + len(line) > room - 100:
            return text + f"- and {len(errors) - shown} more in the JSON ({JSON_HINT})\n"
        text += line
    return text


# --- words shared by both ------------------------------------------------------------------


def hold_lines(diff: ClusterDiff) -> list[tuple[str, str]]:
    """The cluster's holds, each with the side whose plan it holds, as (label, reason): a
    hold of one side only is "hold after (added)" or "hold before (lifted)"; one of both
    is "hold before and after" when its words are the same, else its "hold before" and
    "hold after" lines (a fraction hold counts each side's snapshots). A change the table
    marks "(held)" is held by the holds after: it is only deleted once they lift (an alert
    resolved, an approval)."""
    lines: list[tuple[str, str]] = []
    for hold in diff.holds_after:
        was = twin(diff.holds_before, hold)
        if was is None:
            lines.append(("hold after (added)", hold.reason))
        elif was.reason == hold.reason:
            lines.append(("hold before and after", hold.reason))
        else:
            lines += [("hold before", was.reason), ("hold after", hold.reason)]
    gone = [h for h in diff.holds_before if twin(diff.holds_after, h) is None]
    return lines + [("hold before (lifted)", h.reason) for h in gone]


def _names(policies: list[str]) -> str:
    return ", ".join(policies) if policies else "(none)"


def _ladder(ladder: Ladder | None) -> str:
    return ladder.words() if ladder is not None else "not known"


def _minute(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _md(text: str) -> str:
    """``text`` safe in a Markdown table cell: control characters and line breaks written
    out, Markdown and HTML characters escaped."""
    html = printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html)


def _code(text: str) -> str:
    """``text`` safe inside a code span: no backtick can end it early, no pipe a table cell."""
    return printable(text).replace("`", "'").replace("|", "/")
