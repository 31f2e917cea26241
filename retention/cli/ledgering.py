"""The ledger commands: ``retention ledger verify`` and ``retention ledger ack``."""

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
      retention ledger ack prod-orders --note "INC-4411: expiry shortened by the DBA on call"
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


@ledger.command()
@click.argument("clusters", nargs=-1, metavar="CLUSTER...")
@click.option("--note", help="Why: what the person found (recorded with the acknowledgement).")
@format_option
@click.pass_context
def ack(ctx: click.Context, clusters: tuple[str, ...], note: str | None, *, output: str) -> int:
    """Acknowledge the changes made outside retention of CLUSTER...: a person looked.

    With safety.hold_on_outside_change, a cluster with a change made outside retention is
    held from the plan that finds it until someone acknowledges it here; a change found
    after that holds it again. Each CLUSTER is a name, a glob of names (quote it) or a
    cluster id, of a cluster the ledger knows. The acknowledgement is a run of its own in
    the ledger, with its actor (--actor, RETENTION_ACTOR) and note, in the chain. Asks no
    API. Exit 0 done (also when there was nothing to acknowledge); 2 a CLUSTER the ledger
    does not know, or no ledger.

    \b
    Examples:
      retention ledger ack prod-orders --note "INC-4411: the DBA shortened it on purpose"
      retention --actor alice ledger ack 'prod-*'
      retention ledger ack prod-orders --format json | jq '.acknowledged[].since'
    """
    from retention.library.ledgers import LedgerAckRequest

    result = library(ctx).ack_ledger(LedgerAckRequest(clusters, note)).result
    show(output, result.document, result.lines)
    return 0
