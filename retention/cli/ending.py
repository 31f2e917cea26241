"""How a run, an apply or a demo ends, and what it shows while it runs: progress on a
terminal, the reports, the notices (``notify:``), the summary (or one JSON document), the
failed changes and the run-finished event in the logs, and the metrics however the run
ends."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retention import __version__
from retention.cli.output import emit
from retention.errors import (
    EXIT_FAILURES,
    EXIT_INTERRUPTED,
    RetentionError,
    exit_code_for,
    exit_meaning,
)

if TYPE_CHECKING:
    from retention.notices.send import Delivery
    from retention.notices.settings import NotifySettings


def finish(
    result: Any,
    mode: str,
    started: datetime,
    formats: list[str],
    output: str = "text",
    *,
    notifier: Notifier | None = None,
) -> int:
    """Write the reports, send the notices (when ``notifier`` has ``notify:`` settings),
    print the summary (or, ``output`` json, one JSON document), log the failed changes and
    the run-finished event, and return the exit code."""
    from retention.ops.logs import RUN_LOGGER
    from retention.report import RunInfo, render_reports

    log = logging.getLogger(RUN_LOGGER)
    code = exit_code_for(failed=result.failed, held=result.held, stopped_by=result.interrupted)
    info = RunInfo(result.run_id, mode, started, datetime.now(UTC), code, __version__)
    if notifier is not None and notifier.settings is not None and "markdown" not in formats:
        formats = [*formats, "markdown"]  # a notice is report.md's summary
    result.reports = render_reports(result.run_dir, info, formats)
    notices = notifier.after_run(result, code) if notifier is not None else []
    if output == "json":
        emit(_run_document(result, mode, code, notices))
    else:
        _print_summary(result, code, notices)
    for failure in result.applied.failures[:10] if result.applied is not None else []:
        change = failure.change
        what = f"{failure.outcome} {change['snapshotId']}"
        failed = {
            "event": "change-failed",
            "outcome": failure.outcome,
            **{k: change[k] for k in ("projectId", "clusterId", "clusterName", "snapshotId")},
            "action": change["action"],
            "status": failure.status,
        }
        text = f"  {what}: {failure.error}"
        log.error("%s: %s", what, failure.error, extra={"text": text, "fields": failed})
    for skipped in result.approval.skipped if result.approval is not None else ():
        text = f"  not approved {skipped}"
        log.warning(
            "not approved %s", skipped, extra={"text": text, "fields": {"event": "not-approved"}}
        )
    summary = result.document["summary"]
    log_run_finished(
        mode,
        result.run_id,
        code,
        started,
        counts={
            "clusters": summary["clusters"],
            "snapshots": summary["snapshots"],
            "clustersHeld": summary["clustersHeld"],
            "clustersWithErrors": summary["clustersWithErrors"],
            "changes": dict(summary["byAction"]),
            "outcomes": dict(sorted(result.applied.counts.items())) if result.applied else {},
        },
        runDir=str(result.run_dir),
        reports=[str(path) for path in result.reports],
    )
    return code


def log_run_finished(mode: str, run_id: str, code: int, started: datetime, **facts: Any) -> None:
    """The run-finished event of a run, apply or undo, for log collectors (json logs): on a
    terminal the summary says it all, so in text mode this INFO line shows only with --debug
    (retention.ops.logs.configure)."""
    from retention.ops.logs import RUN_LOGGER

    fields: dict[str, Any] = {
        "event": "run-finished",
        "mode": mode,
        "runId": run_id,
        "exitCode": code,
        "meaning": exit_meaning(code),
        **facts,
        "durationSeconds": round((datetime.now(UTC) - started).total_seconds(), 3),
    }
    logging.getLogger(RUN_LOGGER).info(
        "%s %s finished: exit %d, %s",
        mode,
        run_id,
        code,
        exit_meaning(code),
        extra={"fields": fields},
    )


def _print_summary(result: Any, code: int, notices: list[Delivery]) -> None:
    """What a person reads at the end of a run, apply or demo."""
    from retention.cli.summary import summary_lines

    for line in summary_lines(result.document):
        click.echo(line)
    if result.applied is not None:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result.applied.counts.items()))
        click.echo(f"Applied: {counts or 'nothing to apply'}.")
    else:
        click.echo("Dry run: nothing was sent to the API.")
    if result.interrupted:
        not_sent = result.applied.counts.get("not-sent", 0) if result.applied else 0
        click.echo(
            f"Stopped by {result.interrupted} before the end: {not_sent} changes were not "
            f"sent (journalled not-sent in results.jsonl). Run again to finish, or put back "
            f"what this run shortened: retention undo {result.run_dir}"
        )
    approval = result.approval
    if approval is not None and approval.names:
        sent = result.applied.approved if result.applied else 0
        click.echo(f"Approved: {sent} held changes of {', '.join(approval.names)} were sent.")
    if result.acknowledged:
        click.echo(f"Acknowledged {len(result.acknowledged)} audit alerts this run caused.")
    click.echo(f"\nRun folder: {result.run_dir}")
    for path in result.reports:
        click.echo(f"  {path.name}: {path}")
    if notices:
        said = [f"{n.url} {'sent' if n.sent else 'not sent'}" for n in notices]
        click.echo(f"Notices: {', '.join(said)}.")
    click.echo(f"Exit {code}: {exit_meaning(code)}")


MAX_FAILURES_LISTED = 100


def _run_document(result: Any, mode: str, code: int, notices: list[Delivery]) -> dict[str, Any]:
    """run, apply --format json: the same facts as the summary, for scripts."""
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


class Notifier:
    """The notices of one run or apply (``notify:`` in retention.yaml): sent once, by
    finish() when the run finishes, or by Metrics when it stops on an error after the
    configuration was loaded. What was sent is kept for the summary and the metrics."""

    def __init__(self) -> None:
        self.settings: NotifySettings | None = None
        self.mode = "run"
        self.deliveries: list[Delivery] = []
        self.done = False

    def configure(self, settings: NotifySettings | None, mode: str) -> None:
        """The configuration is loaded: from here on, the run's ending is notified."""
        self.settings, self.mode = settings, mode

    def after_run(self, result: Any, code: int) -> list[Delivery]:
        """Send the notice of a finished run when ``notify.on`` names a kind of its
        ending; the deliveries (none when nothing was sent)."""
        if self.done or self.settings is None:
            return []
        self.done = True
        from retention.lifecycle.jobs import change_count
        from retention.notices.send import reasons, run_notice, send
        from retention.runfolder.folder import RunFolder

        if result.applied is not None:
            changed = result.applied.counts.get("applied", 0) > 0
        else:  # a dry run: the changes a real run would send
            changed = change_count(result.document) > 0
        why = reasons(code=code, changed=changed, held=result.held)
        if not why.intersection(self.settings.on):
            return []
        report_md = RunFolder(result.run_dir).report("markdown")
        notice = run_notice(
            mode=self.mode,
            run_id=result.run_id,
            code=code,
            why=why,
            report_md=report_md,
            run_dir=result.run_dir,
        )
        self.deliveries = send(self.settings.destinations(), notice)
        return self.deliveries

    def after_error(self, code: int, error: BaseException) -> None:
        """Send the failure notice of a run that stopped on an error with exit 1 or 5
        (``failure`` in ``notify.on``)."""
        if self.done or self.settings is None:
            return
        from retention.notices.send import FAILURE_EXITS, error_notice, send

        if code not in FAILURE_EXITS:
            return
        self.done = True
        if "failure" not in self.settings.on:
            return
        # Our errors are worded to be shown (no credential in any); a bug's text is not.
        message = (
            str(error)
            if isinstance(error, RetentionError)
            else f"internal error: {type(error).__name__} (a bug in retention)"
        )
        notice = error_notice(mode=self.mode, code=code, error=message)
        self.deliveries = send(self.settings.destinations(), notice)


class Progress:
    """Progress on a terminal: a count while walking, a bar while applying; else nothing
    (callers pass quiet under json logs, where every stderr line must be JSON)."""

    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty()
        self.walked = 0
        self._bar: Any = None

    def walk(self, _walk: Any) -> None:
        """One more cluster walked."""
        if self.on:
            self.walked += 1
            click.echo(f"\rwalked {self.walked} clusters", nl=False, err=True)

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` PATCHes to send."""
        if self.on:
            click.echo("", err=True)
            if total:
                self._bar = click.progressbar(length=total, label="applying", file=sys.stderr)
                self._bar.__enter__()

    def outcome(self, _outcome: Any) -> None:
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


class Metrics:
    """Writes the run's metrics, however the run ends (when asked to): the block calls
    write() when it finishes, and leaving it with a RetentionError writes its exit code.
    Its ``notifier`` sends the failure notice of a run that stops on an error (exit 1 or
    5), before the metrics, which count the notices."""

    def __init__(
        self, started: datetime, shard: Any, metrics_file: str | None, pushgateway: str | None
    ) -> None:
        self.started, self.shard = started, shard
        self.metrics_file, self.pushgateway = metrics_file, pushgateway
        self.client: Any = None
        self.notifier = Notifier()

    def __enter__(self) -> Metrics:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        # However the run ends, the exit-code gauge must not keep the previous run's value.
        if isinstance(error, RetentionError):
            self.notifier.after_error(error.exit_code, error)
            self.write(error.exit_code, None)
        elif isinstance(error, KeyboardInterrupt):
            self.write(EXIT_INTERRUPTED, None)
        elif isinstance(error, Exception):
            self.notifier.after_error(EXIT_FAILURES, error)
            self.write(EXIT_FAILURES, None)  # an internal error: main() says what it was

    def write(self, code: int, result: Any, *, outcomes: dict[str, int] | None = None) -> None:
        """Write the metrics of a run or apply (``result``), or of an undo (its
        ``outcomes``), when a metrics file or a Pushgateway was asked for."""
        if not (self.metrics_file or self.pushgateway):
            return
        from retention.ops.metrics import RunMetrics, push, write_textfile

        label = self.shard.label if self.shard else None
        m = RunMetrics(self.started, datetime.now(UTC), code, shard=label)
        if result is not None:
            summary = result.document["summary"]
            m.snapshots = summary["snapshots"]
            m.changes = dict(summary["byAction"])
            m.clusters_held = summary["clustersHeld"]
            m.bytes_given_back = summary["bytesGivenBack"]
            m.bytes_held = summary["bytesHeld"]
            m.clusters_unmanaged = summary["clustersUnmanaged"]
            m.unused_policies = len(result.document["unusedPolicies"])
            m.errors = len(result.document.get("errors", [])) + summary["clustersWithErrors"]
            if result.applied is not None:
                m.outcomes = dict(result.applied.counts)
                m.approved = result.applied.approved
                m.errors += len(result.applied.failures)
        if outcomes is not None:
            m.outcomes = dict(outcomes)
        if self.client is not None:
            m.api_requests, m.api_retries = self.client.stats.requests, self.client.stats.retries
        m.notices_sent = sum(1 for n in self.notifier.deliveries if n.sent)
        m.notices_failed = sum(1 for n in self.notifier.deliveries if not n.sent)
        try:
            if self.metrics_file:
                write_textfile(Path(self.metrics_file), m)
            if self.pushgateway:
                push(self.pushgateway, m)
        except OSError as exc:  # metrics must not turn a finished run into a crash
            # Through logging, so it is a JSON object in json mode; the same line in text.
            text = f"warning: could not write metrics: {exc}"
            logging.getLogger("retention.metrics").warning(
                "could not write metrics: %s",
                exc,
                extra={"text": text, "fields": {"event": "metrics-not-written"}},
            )
