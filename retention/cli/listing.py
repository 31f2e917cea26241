"""Listing commands: clusters (what discovery finds, and the policies that match it)."""

from __future__ import annotations

import click

from retention.cli.common import library
from retention.cli.group import cli
from retention.cli.output import format_option, show
from retention.cli.progress import TerminalProgress, quiet_option


@cli.command("clusters")
@quiet_option
@format_option
@click.pass_context
def clusters(ctx: click.Context, quiet: bool, output: str) -> int:
    """List every project, cluster and legacy config server discovery finds, with its kind,
    typeName, snapshot count, newest complete snapshot and the policies that match it
    (unmanaged: none), to write `match: clusters` from the names the service has.

    Discovery as a plan does it, then one read-only walk of each cluster's snapshots
    (api.concurrency at once): nothing is sent or written and no lock is taken; a read-only
    API key is enough. A glob of a policy that matches no cluster is a warning naming the
    closest real names. Policies that do not load do not stop the listing. Exit 0: listed;
    1: a project could not be discovered or a cluster walked; 2: bad configuration; 5: API
    unreachable.

    \b
    Examples:
      retention clusters
      retention clusters --format json | jq -r '.clusters[] | select(.policies == []) | .name'
    """
    from retention.library.requests import ClustersRequest

    ended = library(ctx, TerminalProgress.of(ctx, quiet=quiet)).clusters(ClustersRequest())
    show(output, ended.result.document, ended.result.lines)
    return ended.code
