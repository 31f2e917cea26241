"""The prune command: remove old run folders by hand, as reports.keep does after each run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retention.cli.common import library
from retention.cli.group import cli
from retention.cli.output import format_option, show
from retention.cli.progress import TerminalProgress, quiet_option
from retention.errors import UsageError

if TYPE_CHECKING:
    from retention.core.policy.duration import RetentionDuration


@cli.command()
@click.option("--dry-run", is_flag=True, help="Say which folders would go; remove nothing.")
@click.option(
    "--keep",
    "keep_text",
    metavar="DURATION",
    help="Keep folders younger than this (e.g. 30d or 1m). "
    "Default: reports.keep of retention.yaml.",
)
@quiet_option
@format_option
@click.pass_context
def prune(
    ctx: click.Context, *, dry_run: bool, keep_text: str | None, quiet: bool, output: str
) -> int:
    """Remove run folders older than reports.keep from the reports folder.

    A folder goes only when it is older than the keep duration (by the time in its name),
    is not the newest successful run, and nothing in it can still be undone: every expiry
    its apply wrote has passed (a folder inside its grace window stays, so `retention undo`
    keeps working). Anything in the reports folder that is not a run folder is left alone.
    `retention run` does the same at its end when reports.keep is set. Takes the run lock
    (not with --dry-run). Exit 0 done; 1 a folder could not be removed; 2 bad configuration
    or duration, or no keep duration given; 4 another run holds the lock.

    \b
    Examples:
      retention prune --dry-run                  # what reports.keep would remove now
      retention prune --keep 14d
      retention prune --dry-run --format json | jq -r '.folders[] | select(.remove) | .name'
    """
    from retention.library.requests import PruneRequest

    request = PruneRequest(_keep(keep_text), dry_run)
    result = library(ctx, TerminalProgress.of(ctx, quiet=quiet)).prune(request).result
    show(output, result.document, result.lines)
    if output != "json":
        for line in result.failures():
            click.echo(line, err=True)
    return result.code


def _keep(text: str | None) -> RetentionDuration | None:
    """--keep as a duration (None: reports.keep); UsageError for one that is not, or 0h."""
    from retention.core.policy.duration import RetentionDuration

    if text is None:
        return None
    try:
        keep = RetentionDuration.parse(text)
    except ValueError as exc:
        raise UsageError(f"--keep: {exc}") from None
    if keep.zero:
        raise UsageError("--keep: 0h would remove every folder; give a duration such as 7d")
    return keep
