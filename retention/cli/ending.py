"""How a run, an apply or a demo shows on the terminal: progress while it runs, then the
summary (or, ``--format json``, one JSON document). The lifecycle (retention.library)
did the rest: reports, notices, logs and metrics."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from retention.cli.output import emit
from retention.core.wording import counted
from retention.errors import exit_meaning

if TYPE_CHECKING:
    from retention.apply.executor import Outcome
    from retention.library.job import Ended
    from retention.library.jobs import JobResult
    from retention.notices.send import Delivery
    from retention.report.summary import RunSummary
    from retention.walk.inventory import Walk


def show_run(ended: Ended[JobResult], output: str) -> int:
    """Print how a run or an apply ended (``output`` json: one JSON document); its exit
    code."""
    if output == "json":
        document = _run_document(ended.result, ended.mode, ended.code, ended.notices)
        if ended.pruned is not None:
            document["pruned"] = ended.pruned.removed
        emit(document)
    else:
        _print_summary(ended.result, ended.notices, ended.summary)
        if ended.pruned is not None and (removed := ended.pruned.removed):
            more = f" and {len(removed) - 3} more" if len(removed) > 3 else ""
            folders = counted(len(removed), "old run folder")
            click.echo(f"reports.keep removed {folders}: {', '.join(removed[:3])}{more}")
        click.echo(f"Exit {ended.code}: {exit_meaning(ended.code)}")
    return ended.code


def show_demo(ended: Ended[JobResult], output: str, code: int) -> int:
    """Print how the demo's run ended, as show_run does, but with ``code``, the exit code
    of the demo itself: the demo succeeded whatever its run held, so ``exitCode`` is what
    the process returns and the run's own code is ``runExitCode``."""
    if output == "json":
        document = _run_document(ended.result, ended.mode, ended.code, ended.notices)
        document.update(
            command="demo",
            exitCode=code,
            meaning=exit_meaning(code),
            runExitCode=ended.code,
            runMeaning=exit_meaning(ended.code),
        )
        emit(document)
    else:
        _print_summary(ended.result, ended.notices, ended.summary)
        click.echo(
            f"The run would exit {ended.code} ({exit_meaning(ended.code)}); the demo exits {code}."
        )
    return code


def _print_summary(result: JobResult, notices: list[Delivery], summary: RunSummary | None) -> None:
    """What a person reads at the end of a run, apply or demo, but its exit code: the run's
    summary, the one report.md and report.html begin with, in lines."""
    from retention.report.lines import summary_lines
    from retention.report.summary import OUTCOMES

    for line in summary_lines(result.document, summary=summary):
        click.echo(line)
    if result.applied is not None:
        counts = summary.outcomes.counts if summary and summary.outcomes else result.applied.counts
        said = ", ".join(f"{o} {counts[o]}" for o in OUTCOMES if counts.get(o))
        click.echo(f"Outcomes: {said or 'nothing to apply'}.")
        if unchanged := result.applied.counts.get("unchanged", 0):
            click.echo(
                f"Unchanged: the service already held what {unchanged} of these changes "
                "write (an earlier apply of this plan, or someone, made them): nothing sent."
            )
    else:
        click.echo("Dry run: nothing was sent to the API.")
    if result.interrupted:
        not_sent = result.applied.counts.get("not-sent", 0) if result.applied else 0
        click.echo(
            f"Stopped by {result.interrupted} before the end: {counted(not_sent, 'change')} "
            f"{'was' if not_sent == 1 else 'were'} not sent (journalled not-sent in "
            "results.jsonl). Run again to finish, or put back "
            f"what this run shortened: retention undo {result.run_dir}"
        )
    if result.acknowledged:
        alerts = counted(len(result.acknowledged), "audit alert")
        click.echo(f"Acknowledged {alerts} this run caused.")
    click.echo(f"\nRun folder: {result.run_dir}")
    for path in result.reports:
        click.echo(f"  {path.name}: {path}")
    if notices:
        sent = ", ".join(f"{n.url} {'sent' if n.sent else 'not sent'}" for n in notices)
        click.echo(f"Notices: {sent}.")


MAX_FAILURES_LISTED = 100


def _run_document(
    result: JobResult, mode: str, code: int, notices: list[Delivery]
) -> dict[str, Any]:
    """run, apply --format json: the same facts as the summary, for scripts."""
    from retention.report.summary import stale_clusters

    applied = result.applied
    approval = result.approval
    return {
        "command": "apply" if mode == "apply" else "run",
        "mode": mode,
        "exitCode": code,
        "meaning": exit_meaning(code),
        "runId": result.run_id,
        "runDir": str(result.run_dir),
        "reports": [str(path) for path in result.reports],
        "summary": result.document["summary"],
        "staleBackups": [c.document() for c in stale_clusters(result.document)],
        "outcomes": dict(sorted(applied.counts.items())) if applied is not None else None,
        "interrupted": result.interrupted,
        "failures": [
            {
                **{k: f.change[k] for k in ("snapshotId", "clusterId", "clusterName", "action")},
                "outcome": f.outcome,
                "status": f.status,
                "error": f.error,
            }
            for f in (applied.failures[:MAX_FAILURES_LISTED] if applied is not None else [])
        ],
        "approved": (
            {"clusters": list(approval.names), "sent": applied.approved if applied else 0}
            if approval is not None and approval.names
            else None
        ),
        "acknowledged": list(result.acknowledged),
        "notices": [notice.document() for notice in notices],
    }


class Progress:
    """Progress on a terminal: a count while walking, a bar while applying; else nothing
    (callers pass quiet under json logs, where every stderr line must be JSON)."""

    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty()
        self.walked = 0
        self._bar: Any = None  # click's ProgressBar, entered by hand

    def walk(self, _walk: Walk) -> None:
        """One more cluster walked."""
        if self.on:
            self.walked += 1
            click.echo(f"\rwalked {counted(self.walked, 'cluster')}", nl=False, err=True)

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` PATCHes to send."""
        if self.on:
            click.echo("", err=True)
            if total:
                self._bar = click.progressbar(length=total, label="applying", file=sys.stderr)
                self._bar.__enter__()

    def outcome(self, _outcome: Outcome) -> None:
        """One change done (applied, stale, failed or held)."""
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        """End the bar (the summary follows)."""
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        elif self.on and self.walked:
            click.echo("", err=True)


def metrics_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--metrics-file and --pushgateway, the same on run and apply."""
    command = click.option(
        "--pushgateway", metavar="URL", help="Push the run's metrics to this Pushgateway."
    )(command)
    return click.option(
        "--metrics-file",
        type=click.Path(dir_okay=False),
        help="Write the run's metrics here (node exporter textfile format).",
    )(command)
