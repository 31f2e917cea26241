"""Reviewing commands: diff (what a policy change does to the restore points)."""

from __future__ import annotations

import click

from retention.cli.common import library, parse_at
from retention.cli.group import cli
from retention.cli.output import default_format, show
from retention.cli.progress import TerminalProgress, quiet_option


@cli.command("diff")
@click.option(
    "--base",
    "base",
    required=True,
    metavar="git:REF|PATH",
    help="The policies to compare with: git:REF reads the policies folder as it is on REF "
    "of the git repository it lives in (e.g. git:origin/main); a PATH is a policy folder or "
    "file.",
)
@click.option(
    "--at",
    "at",
    metavar="TIMESTAMP",
    help="Evaluate both sides as of this time instead of now, e.g. 2027-01-01T00:00:00Z.",
)
@click.option(
    "--format",
    "output",
    type=click.Choice(["text", "markdown", "json"]),
    default=None,
    callback=default_format,  # three formats: not format_option's two
    help="text for a terminal; markdown for a pull-request comment (under 60,000 "
    "characters); json: one JSON document on stdout (docs/commands.md). Default: text, or "
    "json with --log-format json.",
)
@quiet_option
@click.pass_context
def diff(ctx: click.Context, *, base: str, at: str | None, quiet: bool, output: str) -> int:
    """Say what a policy change does to the restore points, before it merges: the snapshots
    the current policies stop keeping (and from when the service may delete them), those
    they newly keep, the storage, the safety holds they add or lift, and each cluster's
    restore points before and after.

    One read-only walk of the fleet, decided with both sets of policies at the same time:
    nothing is sent or written and no lock is taken; a read-only API key is enough. Exit 0:
    the current policies keep at least what the base keeps; 3: they stop keeping snapshots
    the base keeps (even when a cluster could not be walked too); 1: a cluster could not be
    walked; 2: invalid policies on either side or a bad --base; 5: API unreachable.

    \b
    Examples:
      retention diff --base git:origin/main
      retention diff --base ../policies-old
      retention diff --base git:main --format markdown > comment.md
      retention diff --base git:main --format json | jq .summary
    """
    from retention.library.requests import DiffRequest

    progress = TerminalProgress.of(ctx, quiet=quiet)
    reviewed = library(ctx, progress).diff(DiffRequest(base, parse_at(at))).result
    if output == "markdown":
        click.echo(reviewed.markdown(), nl=False)
    else:
        show(output, reviewed.document, reviewed.lines)
    return reviewed.code
