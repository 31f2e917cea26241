"""Commands that change things, or show how: run, apply and demo."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retention.cli.common import (
    clock_of,
    examples,
    library,
    shard_from,
    shard_options,
    strict_option,
)
from retention.cli.ending import metrics_options, metrics_target, show_demo, show_run
from retention.cli.group import cli
from retention.cli.output import format_option
from retention.cli.progress import TerminalProgress, quiet_option
from retention.core.timestamps import format_timestamp
from retention.errors import UsageError

if TYPE_CHECKING:
    from retention.api.client import OpsManagerClient
    from retention.apply.applying import RunResult
    from retention.core.policy.loader import PolicySet
    from retention.ops.clock import Clock
    from retention.simulator.server import Simulator


@cli.command("run")
@click.option("--dry-run", is_flag=True, help="Plan and report, but send no PATCH at all.")
@quiet_option
@shard_options
@strict_option
@metrics_options
@format_option
@click.pass_context
def run_command(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    dry_run: bool,
    quiet: bool,
    shard: str | None,
    shard_count: int | None,
    strict: bool,
    metrics_file: str | None,
    pushgateway: str | None,
    output: str,
) -> int:
    """Plan, check the safety gates, apply, and write the reports: what cron runs.

    Each run writes reports/<UTC time>-<run id>/ with plan.json, decisions.jsonl.zst,
    results.jsonl, report.html and report.md. The policies' warnings (those validate
    gives, and each glob that matches no cluster) are in the summary, the reports, the
    notice and the JSON; with --strict they stop the run once its plan is written, before
    anything is sent (exit 2). Exit 0 done; 1 failures (a cluster could not be walked, a
    PATCH failed); 2 bad configuration or policies (or policy warnings with --strict); 3 a
    safety gate held destructive changes; 4 another run holds the lock; 5 API unreachable
    or keys refused.

    \b
    Examples:
      retention run --dry-run        # the whole job, nothing sent
      retention run                  # what cron runs
      retention run --strict         # and refuse to send while the policies warn
      retention run --shard-count 4  # in a Kubernetes Indexed Job of 4 pods
      retention run --metrics-file /var/lib/node_exporter/textfile_collector/retention.prom
      retention run --dry-run --format json | jq .summary.byAction
    """
    from retention.library.requests import RunRequest

    request = RunRequest(
        dry_run=dry_run,
        shard=shard_from(shard, shard_count),
        metrics=metrics_target(metrics_file, pushgateway),
        strict=strict,
    )
    progress = TerminalProgress.of(ctx, quiet=quiet)
    return show_run(library(ctx, progress).run(request), output)


@cli.command("apply")
@click.argument("plan_path", metavar="PLAN", type=click.Path())
@click.option(
    "--max-age",
    default="24h",
    show_default=True,
    help="Refuse a plan older than this (h or d), e.g. 6h or 2d.",
)
@quiet_option
@click.option(
    "--approve",
    "approve",
    multiple=True,
    metavar="CLUSTER",
    help="Send the held changes of this cluster (name or id; repeatable). Only a "
    "max_expire_fraction hold can be approved.",
)
@click.option(
    "--approve-from",
    "approve_from",
    default=None,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Send the held changes of each cluster FILE lists, a name or id per line (# starts "
    "a comment): the approve.txt a plan writes beside itself, edited after review.",
)
@click.option(
    "--approve-all",
    is_flag=True,
    help="Send the held changes of every cluster held only by max_expire_fraction.",
)
@metrics_options
@format_option
@click.pass_context
def apply_command(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    plan_path: str,
    max_age: str,
    quiet: bool,
    approve: tuple[str, ...],
    approve_from: str | None,
    approve_all: bool,
    metrics_file: str | None,
    pushgateway: str | None,
    output: str,
) -> int:
    """Apply exactly a saved plan (from `retention plan`), compare-and-swap, with a journal.

    The whole plan is checked before the first request, and nothing is sent (exit 2) from a
    what-if plan (made with --at), a plan of another format or API base URL, one older
    than --max-age, or one with an entry that is not a change apply may send (the message
    names the entry). Right before each PATCH the change is checked once more against the
    snapshot's state and the clock: changes whose snapshot moved on are skipped as stale, a
    change that would break a safety rule is refused (exit 1), and a destructive expiry is
    never sooner than now plus the policy's grace. Each apply writes its own run folder
    under reports.dir: a copy of the plan, results.jsonl, report.html and report.md.

    A first run over a long history is held by max_expire_fraction; after review,
    --approve CLUSTER (or --approve-all) sends that cluster's held changes, each still
    with its full grace. Holds by an OPEN alert or a failed walk cannot be approved. A plan
    holding more than three clusters lists them in approve.txt beside it: delete the lines
    of those you do not approve and give it to --approve-from.

    \b
    Examples:
      retention plan --out plan.json && retention apply plan.json
      retention apply reports/20261121T030000Z-1a2b3c4d --max-age 2h   # its plan.json
      retention apply plan.json --approve prod-orders   # its fraction hold, reviewed
      retention apply plan.json --approve-from approve.txt   # the clusters it lists
      retention apply plan.json --metrics-file "$TEXTFILE_DIR/retention.prom"  # run's file
    """
    from retention.core.policy.duration import RetentionDuration
    from retention.library.requests import ApplyRequest

    # Hours and days only: "30m" would read as 30 months, and 0 would refuse every plan.
    if not re.fullmatch(r"\s*\d+\s*[hd]\s*", max_age):
        raise click.BadParameter(
            f"{max_age!r}: give hours or days, e.g. 6h or 2d", param_hint="--max-age"
        )
    age = RetentionDuration.parse(max_age)
    if age.zero:
        raise click.BadParameter("must be more than 0, e.g. 6h", param_hint="--max-age")
    now = clock_of(ctx)()
    request = ApplyRequest(
        Path(plan_path),
        age.after(now) - now,
        approve,
        approve_all,
        metrics_target(metrics_file, pushgateway),
        Path(approve_from) if approve_from else None,
    )
    progress = TerminalProgress.of(ctx, quiet=quiet)
    return show_run(library(ctx, progress).apply(request), output)


@cli.command()
@click.option(
    "--policies",
    "policies_path",
    default=None,
    type=click.Path(),
    help="Policies to plan with (default: ./policies if it exists, else the examples "
    "shipped with retention).",
)
@click.option(
    "--report-dir",
    default="reports",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the run's outputs go.",
)
@format_option
@click.pass_context
def demo(ctx: click.Context, policies_path: str | None, report_dir: str, output: str) -> int:
    """Run the whole job on the built-in simulator's demo fleet: no set-up, nothing real touched.

    Starts the simulator (3 projects, 10 clusters, a few thousand snapshots) in this
    process and runs the job twice with the example policies against it, recording both in
    a ledger of its own (demo-ledger.db in the report folder, made afresh). The first run
    is the ledger's baseline; between the two, the demo changes snapshots as someone else
    would in the Ops Manager UI (an expiry shortened, a snapshot deleted); the second run
    catches both and says so in its summary and report. The first run over a long history
    is held by the safety gates on purpose (exit code 3 in a real run); the demo itself
    exits 0.

    \b
    Example:
      retention demo
    """
    from retention.config.policyfiles import load_policies
    from retention.config.writable import require_writable
    from retention.library.changing import RunJob
    from retention.library.lifecycle import conclude
    from retention.library.requests import RunRequest

    chosen = Path(policies_path) if policies_path is not None else _example_policies()
    if not chosen.exists():
        raise UsageError(f"no policies at {chosen}; pass --policies DIR")
    policies = load_policies(chosen)
    require_writable(Path(report_dir), "--report-dir")
    if output == "text":
        click.echo("Starting the simulator with the demo fleet ...")
    clock = clock_of(ctx)
    runs = _demo_runs(policies, Path(report_dir), clock)
    job = RunJob(RunRequest())
    first, second = (
        conclude(job, run.result, run.started, ["html", "markdown"], clock, head=run.head)
        for run in runs.runs
    )
    if output == "text":
        click.echo(
            f"Run 1, the ledger's baseline: exit {first.code}, run folder {first.result.run_dir}"
        )
        click.echo("Then, as someone else in the Ops Manager UI:")
        for said in runs.made:
            click.echo(f"  {said}")
        click.echo("Run 2:")
    # A demo that ran is a success, whatever the gates held: it exits 0 and says so.
    code = show_demo(second, output, 0, first=first, made=runs.made)
    if output == "text":
        click.echo(
            "This was the simulator: nothing real was touched. Open report.html in a "
            "browser; report.md is the same summary for a chat message."
        )
    return code


@dataclass(frozen=True)
class _DemoRun:
    """One run of the demo: its result, when it started, and the ledger's head after it."""

    result: RunResult
    started: datetime
    head: str | None


@dataclass(frozen=True)
class _DemoRuns:
    """The demo's two runs, and what it changed outside retention between them."""

    runs: tuple[_DemoRun, _DemoRun]
    made: list[str]


# The demo's own ledger, beside its run folders and made afresh by each demo: a ledger that
# remembered another demo's fleet (another time, the same ids) would report it all changed.
DEMO_LEDGER = "demo-ledger.db"


def _demo_runs(policies: PolicySet, reports: Path, clock: Clock) -> _DemoRuns:
    """The whole job twice on the demo fleet of a simulator started for it, at ``clock``'s
    time, both recorded in the demo's ledger; between them, an expiry shortened and a
    snapshot deleted as someone else."""
    from pydantic import SecretStr

    from retention.api.client import OpsManagerClient
    from retention.api.values import Credentials
    from retention.config.ledgerplace import LedgerPlace
    from retention.config.scope import ProjectTargets, Scope
    from retention.ledger.database import open_ledger
    from retention.ledger.recorder import RunStart
    from retention.ledger.session import Recording
    from retention.library.changing import RunJob, run_job
    from retention.library.requests import RunRequest
    from retention.ops.actor import actor
    from retention.simulator.server import Simulator, SimulatorConfig

    for leftover in reports.glob(f"{DEMO_LEDGER}*"):  # the file, and SQLite's -wal and -shm
        leftover.unlink()
    place = LedgerPlace(f"sqlite:///{reports.resolve() / DEMO_LEDGER}")
    job = RunJob(RunRequest())
    runs: list[_DemoRun] = []
    made: list[str] = []
    with (
        Simulator(SimulatorConfig(fleet="demo", seed=1, now=clock())) as sim,
        open_ledger(place) as ledger,
    ):
        projects = [ProjectTargets(p["id"]) for p in sim.admin("fleet")["projects"]]
        scope = Scope(policies, projects, schedule="0 3 * * *", concurrency=8)
        credentials = Credentials(sim.public_key, SecretStr(sim.private_key))
        with OpsManagerClient(sim.base_url, credentials, clock=clock) as client:
            for n in range(2):
                if n == 1:
                    made = _change_outside(sim, client)
                started = clock()
                start = RunStart("", "run", "", started, actor(None), base_url=sim.base_url)
                recording = Recording(ledger, start)
                result = run_job(
                    client,
                    scope,
                    reports=reports,
                    dry_run=False,
                    clock=clock,
                    ledger=recording,
                )
                head = recording.finish(job.ledger_end(result, job.code(result), clock()))
                runs.append(_DemoRun(result, started, head))
    return _DemoRuns((runs[0], runs[1]), made)


def _change_outside(sim: Simulator, client: OpsManagerClient) -> list[str]:
    """Shorten the expiry of prod-orders' newest complete snapshot and delete one of
    prod-catalog's, as alice@example.com would in the Ops Manager UI; what was done, in
    words."""
    clusters = {  # a sharded cluster's shards share its name and have no snapshots
        c["name"]: (p["id"], c["id"])
        for p in sim.admin("fleet")["projects"]
        for c in p["clusters"]
        if c["snapshots"]
    }
    made = []
    for name, action in (("prod-orders", "expires"), ("prod-catalog", "delete")):
        project, cluster = clusters[name]
        kept = [
            s
            for s in client.list_snapshots(project, cluster)
            if s.complete and not s.do_not_delete and s.expires is not None
        ]
        snapshot = kept[0] if action == "expires" else kept[len(kept) // 2]
        body: dict[str, object] = {
            "action": action,
            "clusterId": cluster,
            "snapshotId": snapshot.id,
            "user": "alice@example.com",
        }
        if action == "expires" and snapshot.expires is not None:
            shortened = snapshot.expires - (snapshot.expires - snapshot.created_at) / 2
            body["expires"] = format_timestamp(shortened)
        sim.admin("outside", body)
        what = (
            f"shortened the expiry of {name} snapshot {snapshot.id} to {body['expires']}"
            if action == "expires"
            else f"deleted {name} snapshot {snapshot.id} (it was kept until "
            f"{format_timestamp(snapshot.expires) if snapshot.expires else 'no end'})"
        )
        made.append(what)
    return made


def _example_policies() -> Path:
    """./policies when there is one, else the shipped examples."""
    local = Path("policies")
    return local if local.is_dir() else examples() / "policies"
