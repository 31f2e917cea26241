"""The prune command: remove old run folders by hand, as reports.keep does after each run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retention.cli.common import clock_of, load
from retention.cli.group import cli
from retention.cli.output import emit, format_option
from retention.core.wording import counted
from retention.errors import UsageError

if TYPE_CHECKING:
    from retention.core.policy.duration import RetentionDuration
    from retention.prune.folders import Pruned


@cli.command()
@click.option("--dry-run", is_flag=True, help="Say which folders would go; remove nothing.")
@click.option(
    "--keep",
    "keep_text",
    metavar="DURATION",
    help="Keep folders younger than this (e.g. 30d or 1m). "
    "Default: reports.keep of retention.yaml.",
)
@format_option
@click.pass_context
def prune(ctx: click.Context, *, dry_run: bool, keep_text: str | None, output: str) -> int:
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
    from retention.ops.lock import run_lock
    from retention.prune.pruning import prune_reports

    config = load(ctx, require_credentials=False).config
    keep = _keep(keep_text, config.reports.keep)
    reports, clock = config.reports.dir, clock_of(ctx)
    if dry_run:
        pruned = prune_reports(reports, keep, now=clock(), dry_run=True)
    else:
        with run_lock(reports, clock=clock):
            pruned = prune_reports(reports, keep, now=clock())
    code = 1 if pruned.failed else 0
    if output == "json":
        emit(_document(pruned, reports, keep, dry_run=dry_run, code=code))
    else:
        _print(pruned, reports, keep, dry_run=dry_run)
    return code


def _keep(text: str | None, configured: RetentionDuration | None) -> RetentionDuration:
    from retention.core.policy.duration import RetentionDuration

    if text is None:
        if configured is None:
            raise UsageError(
                "prune needs a keep duration: set reports.keep in retention.yaml "
                "(e.g. keep: 30d) or give --keep 30d"
            )
        return configured
    try:
        keep = RetentionDuration.parse(text)
    except ValueError as exc:
        raise UsageError(f"--keep: {exc}") from None
    if keep.zero:
        raise UsageError("--keep: 0h would remove every folder; give a duration such as 7d")
    return keep


def _document(
    pruned: Pruned, reports: Path, keep: RetentionDuration, *, dry_run: bool, code: int
) -> dict[str, Any]:
    return {
        "command": "prune",
        "exitCode": code,
        "dryRun": dry_run,
        "reportsDir": str(reports),
        "keep": str(keep),
        "folders": [
            {"name": v.name, "remove": v.remove, "why": v.why, "bytes": v.size}
            for v in pruned.verdicts
        ],
        "removed": pruned.removed,
        "failed": [{"name": name, "error": error} for name, error in pruned.failed],
    }


def _print(pruned: Pruned, reports: Path, keep: RetentionDuration, *, dry_run: bool) -> None:
    going = [v for v in pruned.verdicts if v.remove]
    for v in pruned.verdicts:
        click.echo(f"  {'remove' if v.remove else 'keep  '}  {v.name}  {v.why}")
    size = sum(v.size for v in going if dry_run or v.name in pruned.removed)
    folders = counted(len(going) if dry_run else len(pruned.removed), "run folder")
    verb = "Would remove" if dry_run else "Removed"
    click.echo(
        f"{verb} {folders} of {len(pruned.verdicts)} in {reports} "
        f"({size / 1e6:,.1f} MB); keep: {keep}."
    )
    for name, error in pruned.failed:
        click.echo(f"Could not remove {reports / name}: {error}", err=True)
