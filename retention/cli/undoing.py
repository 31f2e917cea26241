"""The undo command: take back what a run shortened, as a run of its own."""

from __future__ import annotations

from pathlib import Path

import click

from retention.cli.common import library
from retention.cli.ending import metrics_options, metrics_target
from retention.cli.group import cli
from retention.cli.output import format_option, show
from retention.cli.progress import TerminalProgress, quiet_option


@cli.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(file_okay=False))
@click.option("--dry-run", is_flag=True, help="Say what would be put back; send no PATCH.")
@metrics_options
@quiet_option
@format_option
@click.pass_context
def undo(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    run_dir: str,
    dry_run: bool,
    metrics_file: str | None,
    pushgateway: str | None,
    quiet: bool,
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
    from retention.library.documents import undo_document, undo_lines
    from retention.library.requests import UndoRequest

    request = UndoRequest(Path(run_dir), dry_run, metrics_target(metrics_file, pushgateway))
    ended = library(ctx, TerminalProgress.of(ctx, quiet=quiet)).undo(request)
    show(output, lambda: undo_document(ended), lambda: undo_lines(ended))
    return ended.code
