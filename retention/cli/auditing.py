"""``retention evidence``: what the ledger proves of a period, for an auditor."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from retention.cli.common import library
from retention.cli.group import cli
from retention.cli.progress import TerminalProgress, quiet_option
from retention.errors import UsageError

_DAY = click.DateTime(formats=["%Y-%m-%d"])


@cli.command()
@click.option("--from", "first", type=_DAY, required=True, help="The period's first day (UTC).")
@click.option("--to", "last", type=_DAY, required=True, help="The period's last day (UTC).")
@click.option(
    "--clusters",
    multiple=True,
    metavar="GLOB",
    help="Only these clusters: a name, a glob of names (quote it) or a cluster id; repeat "
    "for more. Default: every cluster the ledger knows in the period.",
)
@click.option(
    "--projects",
    multiple=True,
    metavar="ID",
    help="Only the clusters of these projects (project ids, globs allowed); repeat for more.",
)
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(["html", "md", "json", "csv"]),
    default=("html",),
    show_default=True,
    help="What to write; repeat for several: html (a document to print or file), md (the "
    "same summary), json (everything, evidence.schema.json), csv (every change).",
)
@click.option(
    "--out",
    default=".",
    show_default=True,
    metavar="DIR",
    help="The folder the files go to (evidence-FROM-TO.FORMAT); - writes the one format "
    "asked for to stdout.",
)
@click.option(
    "--restore-log",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The team's own record of restore tests: a CSV with date,cluster,result and, if "
    "kept, snapshot,by,note. retention runs no restore test itself.",
)
@quiet_option
@click.pass_context
def evidence(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    first: datetime,
    last: datetime,
    clusters: tuple[str, ...],
    projects: tuple[str, ...],
    formats: tuple[str, ...],
    out: str,
    restore_log: Path | None,
    quiet: bool,
) -> int:
    """Evidence for auditors of a period, from the ledger alone.

    Reads the ledger only: no request to the API (it works for a period whose run folders
    were pruned long ago, and as a database user that may only read), nothing written to
    the ledger. One self-contained report with six sections: the scope (clusters, runs,
    policies in force, actors); per cluster and day, whether a restorable snapshot was as
    fresh as expected (coverage, gaps, days backups had stopped); retention as promised at
    each month's end; every change with who and why (retention's, undos, holds, changes
    made outside retention); the chain of records with its heads; and the controls each
    section supports (ISO 27001 A.8.13, SOC 2 A1.2 and CC7, DORA art. 12, SEC 17a-4(f)).
    What was not met is listed first. Days are UTC days.

    Exit 0 everything in scope was met; 3 something was not met (listed); 1 the ledger's
    chain does not hold (records edited or removed); 2 bad input: a period in the future,
    an empty ledger, no run in the period, a --clusters or --projects that matches
    nothing.

    \b
    Examples:
      retention evidence --from 2026-01-01 --to 2026-12-31 --out audit/
      retention evidence --from 2026-10-01 --to 2026-12-31 --clusters 'prod-*' \\
        --format html --format csv
      retention evidence --from 2026-11-01 --to 2026-11-30 --format json --out - | jq '.notMet'
      retention evidence --from 2026-01-01 --to 2026-06-30 --restore-log restore-tests.csv
    """
    from retention.library.evidence import EvidenceRequest

    to_stdout = out == "-"
    if to_stdout and len(formats) != 1:
        raise UsageError("--out -: give exactly one --format to write to stdout")
    request = EvidenceRequest(
        first.date(),
        last.date(),
        clusters,
        projects,
        tuple(dict.fromkeys(formats)),
        None if to_stdout else Path(out),
        restore_log,
        sys.stdout if to_stdout else None,
    )
    result = library(ctx, TerminalProgress.of(ctx, quiet=quiet)).evidence(request).result
    for line in result.lines():
        click.echo(line, err=to_stdout)
    return result.code
