"""The undo command: take back what a run shortened, as a run of its own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retention.cli.common import lifecycle_setup
from retention.cli.ending import metrics_options
from retention.cli.group import cli
from retention.cli.output import emit, format_option
from retention.core.restore import SETTLED
from retention.core.wording import counted
from retention.errors import exit_meaning

if TYPE_CHECKING:
    from retention.undo.restoring import UndoResult

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
    An undo cannot be undone. A plan's or a dry run's folder sent nothing: undo names the
    run folders whose apply used that plan, to undo instead. Exit 0 everything put back (or
    nothing to do); 1 something was left alone or failed; 2 not a run folder, a plan or a
    dry run, an undo, or a run against another service; 4 another run holds the lock; 5 API
    unreachable or keys refused.

    \b
    Examples:
      retention undo reports/20261121T030000Z-1a2b3c4d --dry-run   # what it would do
      retention undo reports/20261121T030000Z-1a2b3c4d             # I applied the wrong policy
      retention undo "$(ls -d reports/*/ | tail -1)" --format json | jq .counts
    """
    from retention.library.kinds import UndoJob
    from retention.library.lifecycle import run_lifecycle

    job = UndoJob(Path(run_dir), dry_run=dry_run)
    ended = run_lifecycle(job, lifecycle_setup(ctx, metrics_file, pushgateway))
    if output == "json":
        emit(_document(ended.result, ended.code))
    else:
        _print_summary(ended.result, ended.code)
    return ended.code


def _document(result: UndoResult, code: int) -> dict[str, Any]:
    """undo --format json: undo.json's facts, with the exit code, run folder and reports."""
    document = result.document
    return {
        "command": "undo",
        "exitCode": code,
        "meaning": exit_meaning(code),
        "runDir": str(result.run_dir),
        "runId": document["runId"],
        "undoOf": document["undoOf"],
        "dryRun": document["dryRun"],
        "counts": document["counts"],
        "unreadableLines": document["unreadableLines"],
        "inDoubt": document["inDoubt"],
        "interrupted": document["interrupted"],
        "items": document["items"],
        "reports": [str(path) for path in result.reports],
    }


def _print_summary(result: UndoResult, code: int) -> None:
    """What a person reads at the end of an undo."""
    counts = result.counts
    what = "would put back" if result.dry_run else "put back"
    back = counts.get("would-restore" if result.dry_run else "restored", 0)
    click.echo(
        f"retention undo {result.run_id} of {result.undo_of}: exit {code}, {exit_meaning(code)}"
    )
    if not result.items:
        click.echo("  nothing to undo: that run applied no destructive change")
    else:
        shortened = counted(len(result.items), "snapshot")
        click.echo(f"  {what} {back} of {shortened} that run shortened")
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
            f"  {result.in_doubt} of them {'was' if result.in_doubt == 1 else 'were'} in doubt "
            "(sent, with no answer saying the "
            "service applied them): each was put back only if the service showed what it "
            "would have written"
        )
    if result.interrupted:
        click.echo(
            f"  stopped by {result.interrupted}: {counts.get('not-sent', 0)} not put back; "
            "run the same undo again to finish"
        )
    if result.unreadable:
        unread = counted(result.unreadable, "journal line")
        verb = "was" if result.unreadable == 1 else "were"
        click.echo(f"  {unread} could not be read and {verb} not undone")
    for path in result.reports:
        click.echo(f"  report: {path}")
