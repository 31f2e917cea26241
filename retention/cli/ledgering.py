"""The ledger commands: ``retention ledger verify``."""

from __future__ import annotations

import click

from retention.cli.common import library
from retention.cli.group import cli
from retention.cli.output import format_option, show


@cli.group()
def ledger() -> None:
    """The ledger: every run remembered in a database (ledger.url of retention.yaml).

    \b
    Examples:
      retention ledger verify
      retention ledger verify --format json | jq .brokenAt
    """


@ledger.command()
@format_option
@click.pass_context
def verify(ctx: click.Context, *, output: str) -> int:
    """Recompute the ledger's chain of runs and say whether it holds.

    Each finished run's record carries the sha256 of its content and of the record before
    it (one chain per shard). verify recomputes every one from the database and names the
    first record that does not match: an edited row, a deleted run, two runs swapped. Runs
    that never finished (killed, or running now) are listed apart. Asks no API and takes no
    lock. Exit 0 the chain holds; 1 it does not; 2 bad configuration or a ledger newer than
    this retention.

    \b
    Examples:
      retention ledger verify
      retention ledger verify --format json | jq -r '.shards[] | "\\(.shard) \\(.head)"'
    """
    from retention.library.ledgers import LedgerVerifyRequest

    result = library(ctx).verify_ledger(LedgerVerifyRequest()).result
    show(output, result.document, result.lines)
    return result.code
