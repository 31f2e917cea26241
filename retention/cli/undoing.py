"""The undo command: take back what a run shortened, as a run of its own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from retention import __version__
from retention.cli import cli
from retention.cli.common import load
from retention.cli.ending import Metrics, log_run_finished, metrics_options
from retention.cli.output import emit, format_option
from retention.core.restore import SETTLED
from retention.errors import exit_code_for, exit_meaning

# Items listed in the text summary; the report and undo.json have them all.
LISTED = 10


@cli.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(file_okay=False))
@click.option("--dry-run", is_flag=True, help="Say what would be put back; send no PATCH.")
@metrics_options
@format_option
@click.pass_context
def undo(
    ctx: click.Context,
    *,
    run_dir: str,
    dry_run: bool,
    metrics_file: str | None,
    pushgateway: str | None,
    output: str,
) -> int:
    """Put back what the run in RUN_DIR shortened: the panic button for a bad policy.

    Reads RUN_DIR/results.jsonl and, for every destructive change that run applied, puts
    back the state the snapshot had before it (its old expiry, no expiry, or its
    doNotDelete), but only if the snapshot still has exactly the state that run wrote
    (compare-and-swap). A snapshot already deleted, changed since by someone else, or whose
    new expiry has passed is reported and left alone. Inside the grace window (24h by
    default) a bad run is fully reversible.

    The undo is a run of its own: it takes the lock and writes
    reports/<UTC time>-<run id>/ with undo.json, results.jsonl, report.html and report.md.
    An undo cannot be undone. Exit 0 everything put back (or nothing to do); 1 something was
    left alone or failed; 2 not a run folder, an undo, or a run against another service;
    4 another run holds the lock; 5 API unreachable or keys refused.

    \b
    Examples:
      retention undo reports/20261121T030000Z-1a2b3c4d --dry-run   # what it would do
      retention undo reports/20261121T030000Z-1a2b3c4d             # I applied the wrong policy
      retention undo "$(ls -d reports/*/ | tail -1)" --format json | jq .counts
    """
    from retention.config.settings import require_writable
    from retention.ops.lock import run_lock
    from retention.ops.stopping import Stop, on_signals
    from retention.report.model import RunInfo
    from retention.report.undo import render_undo_reports
    from retention.undo.job import undo_run

    started = datetime.now(UTC)
    stop = Stop()
    with on_signals(stop), Metrics(started, None, metrics_file, pushgateway) as metrics:
        loaded = load(ctx)
        config = loaded.config
        require_writable(config.reports.dir, "reports.dir")
        with run_lock(config.reports.dir), loaded.build_client(stop=stop) as client:
            metrics.client = client
            result = undo_run(
                client,
                Path(run_dir),
                reports=config.reports.dir,
                dry_run=dry_run,
                concurrency=config.api.concurrency,
                now=lambda: datetime.now(UTC),
                stop=stop,
            )
        code = exit_code_for(failed=result.failed, held=False, stopped_by=result.interrupted)
        info = RunInfo(result.run_id, "undo", started, datetime.now(UTC), code, __version__)
        result.reports = render_undo_reports(
            result.run_dir, result.document, info, config.reports.formats
        )
        document = _document(result, code)
        if output == "json":
            emit(document)
        else:
            _print_summary(result, code)
        log_run_finished(
            "undo",
            result.run_id,
            code,
            started,
            runDir=document["runDir"],
            undoOf=document["undoOf"],
            counts=document["counts"],
        )
        metrics.write(code, None, outcomes=result.counts)
    return code


def _document(result: Any, code: int) -> dict[str, Any]:
    """undo --format json: undo.json's facts, with the exit code, run folder and reports."""
    facts = (
        "runId",
        "undoOf",
        "dryRun",
        "counts",
        "unreadableLines",
        "inDoubt",
        "interrupted",
        "items",
    )
    return {
        "command": "undo",
        "exitCode": code,
        "meaning": exit_meaning(code),
        "runDir": str(result.run_dir),
        **{key: result.document[key] for key in facts},
        "reports": [str(path) for path in result.reports],
    }


def _print_summary(result: Any, code: int) -> None:
    counts = result.counts
    what = "would put back" if result.dry_run else "put back"
    back = counts.get("would-restore" if result.dry_run else "restored", 0)
    click.echo(
        f"retention undo {result.run_id} of {result.undo_of}: exit {code}, {exit_meaning(code)}"
    )
    if not result.items:
        click.echo("  nothing to undo: that run applied no destructive change")
    else:
        click.echo(f"  {what} {back} of {len(result.items)} snapshots that run shortened")
    if counts.get("unchanged"):
        click.echo(f"  already as before the run: {counts['unchanged']}")
    if counts.get("protected"):
        click.echo(
            f"  left protected (doNotDelete), safe: {counts['protected']} (an undo stopped "
            "between its two PATCHes, or someone protected them)"
        )
    left = [i for i in result.items if i.outcome not in SETTLED]
    if left:
        click.echo(f"  left alone {len(left)}:")
        for item in left[:LISTED]:
            r = item.restoration
            click.echo(f"    {item.outcome} {r.snapshot_id} ({r.cluster_name}): {item.reason}")
        if len(left) > LISTED:
            click.echo(f"    and {len(left) - LISTED} more: see the report")
    if result.in_doubt:
        click.echo(
            f"  {result.in_doubt} of them were in doubt (sent, with no answer saying the "
            "service applied them): each was put back only if the service showed what it "
            "would have written"
        )
    if result.interrupted:
        click.echo(
            f"  stopped by {result.interrupted}: {counts.get('not-sent', 0)} not put back; "
            "run the same undo again to finish"
        )
    if result.unreadable:
        click.echo(f"  {result.unreadable} journal lines could not be read and were not undone")
    for path in result.reports:
        click.echo(f"  report: {path}")
