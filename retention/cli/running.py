"""Commands that change things, or show how: run, apply and demo."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from retention import __version__
from retention.cli import cli
from retention.cli.common import examples, load, lock_name, shard_from, shard_options
from retention.errors import RetentionError, UsageError, exit_code_for, exit_meaning


def _finish(result: Any, mode: str, started: datetime, formats: list[str]) -> int:
    """Write the reports, print the summary, and return the exit code."""
    from retention.plan.summary import summary_lines
    from retention.report import RunInfo, render_reports

    code = exit_code_for(failed=result.failed, held=result.held)
    info = RunInfo(result.run_id, mode, started, datetime.now(UTC), code, __version__)
    result.reports = render_reports(result.run_dir, info, formats)
    for line in summary_lines(result.document):
        click.echo(line)
    if result.applied is not None:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result.applied.counts.items()))
        click.echo(f"Applied: {counts or 'nothing to apply'}.")
        for failure in result.applied.failures[:10]:
            what = f"{failure.outcome} {failure.change['snapshotId']}"
            click.echo(f"  {what}: {failure.error}", err=True)
    else:
        click.echo("Dry run: nothing was sent to the API.")
    approval = result.approval
    if approval is not None and approval.names:
        sent = result.applied.approved if result.applied else 0
        click.echo(f"Approved: {sent} held changes of {', '.join(approval.names)} were sent.")
    if approval is not None:
        for skipped in approval.skipped:
            click.echo(f"  not approved {skipped}", err=True)
    if result.acknowledged:
        click.echo(f"Acknowledged {len(result.acknowledged)} audit alerts this run caused.")
    click.echo(f"\nRun folder: {result.run_dir}")
    for path in result.reports:
        click.echo(f"  {path.name}: {path}")
    click.echo(f"Exit {code}: {exit_meaning(code)}")
    return code


class Progress:
    """Progress on a terminal: a count while walking, a bar while applying; else nothing."""

    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty()
        self.walked = 0
        self._bar: Any = None

    def walk(self, _walk: Any) -> None:
        """One more cluster walked."""
        if self.on:
            self.walked += 1
            click.echo(f"\rwalked {self.walked} clusters", nl=False, err=True)

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` PATCHes to send."""
        if self.on:
            click.echo("", err=True)
            if total:
                self._bar = click.progressbar(length=total, label="applying", file=sys.stderr)
                self._bar.__enter__()

    def outcome(self, _outcome: Any) -> None:
        """One change done (applied, stale, failed or held)."""
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        """End the bar (the summary follows)."""
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        elif self.on and self.walked:
            click.echo("", err=True)


def metrics_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--metrics-file and --pushgateway, the same on run and apply."""
    command = click.option(
        "--pushgateway", metavar="URL", help="Push the run's metrics to this Pushgateway."
    )(command)
    return click.option(
        "--metrics-file",
        type=click.Path(dir_okay=False),
        help="Write the run's metrics here (node exporter textfile format).",
    )(command)


@cli.command("run")
@click.option("--dry-run", is_flag=True, help="Plan and report, but send no PATCH at all.")
@click.option("--quiet", is_flag=True, help="No progress output; the summary only.")
@shard_options
@metrics_options
@click.pass_context
def run_command(
    ctx: click.Context,
    *,
    dry_run: bool,
    quiet: bool,
    shard: str | None,
    shard_count: int | None,
    metrics_file: str | None,
    pushgateway: str | None,
) -> int:
    """Plan, check the safety gates, apply, and write the reports: what cron runs.

    Each run writes reports/<UTC time>-<run id>/ with plan.json, decisions.jsonl,
    results.jsonl, report.html and report.md. Exit 0 done; 1 failures (a cluster could not
    be walked, a PATCH failed); 2 bad configuration or policies; 3 a safety gate held
    destructive changes; 4 another run holds the lock; 5 API unreachable or keys refused.

    \b
    Examples:
      retention run --dry-run        # the whole job, nothing sent
      retention run                  # what cron runs
      retention run --shard-count 4  # in a Kubernetes Indexed Job of 4 pods
      retention run --metrics-file /var/lib/node_exporter/textfile_collector/retention.prom
    """
    from retention.config import require_writable
    from retention.jobs import run_job
    from retention.lock import run_lock
    from retention.policy.loader import load_policies

    selected = shard_from(shard, shard_count)
    started = datetime.now(UTC)
    with _Metrics(started, selected, metrics_file, pushgateway) as metrics:
        loaded = load(ctx)
        config = loaded.config
        policies = load_policies(config.policies)
        projects = config.project_targets()
        require_writable(config.reports.dir, "reports.dir")
        progress = Progress(quiet)
        with run_lock(config.reports.dir, lock_name(selected)):
            with loaded.build_client() as client:
                metrics.client = client
                try:
                    result = run_job(
                        client,
                        policies,
                        projects,
                        reports=config.reports.dir,
                        schedule=config.schedule,
                        concurrency=config.api.concurrency,
                        dry_run=dry_run,
                        acknowledge_audit_alerts=config.alerts.acknowledge_own_audit_alerts,
                        on_outcome=progress.outcome,
                        on_walk=progress.walk,
                        on_apply=progress.apply,
                        shard=selected,
                    )
                finally:
                    progress.close()
            mode = "dry-run" if dry_run else "run"
            code = _finish(result, mode, started, config.reports.formats)
        metrics.write(code, result)
    return code


class _Metrics:
    """Writes the run's metrics, however the run ends (when asked to): the block calls
    write() when it finishes, and leaving it with a RetentionError writes its exit code."""

    def __init__(
        self, started: datetime, shard: Any, metrics_file: str | None, pushgateway: str | None
    ) -> None:
        self.started, self.shard = started, shard
        self.metrics_file, self.pushgateway = metrics_file, pushgateway
        self.client: Any = None

    def __enter__(self) -> _Metrics:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        if isinstance(error, RetentionError):
            self.write(error.exit_code, None)

    def write(self, code: int, result: Any) -> None:
        if not (self.metrics_file or self.pushgateway):
            return
        from retention.metrics import RunMetrics, push, write_textfile

        label = self.shard.label if self.shard else None
        m = RunMetrics(self.started, datetime.now(UTC), code, shard=label)
        if result is not None:
            summary = result.document["summary"]
            m.snapshots = summary["snapshots"]
            m.changes = dict(summary["byAction"])
            m.clusters_held = summary["clustersHeld"]
            m.bytes_given_back = summary["bytesGivenBack"]
            m.bytes_held = summary["bytesHeld"]
            m.clusters_unmanaged = summary["clustersUnmanaged"]
            m.unused_policies = len(result.document["unusedPolicies"])
            m.errors = len(result.document.get("errors", [])) + summary["clustersWithErrors"]
            if result.applied is not None:
                m.outcomes = dict(result.applied.counts)
                m.approved = result.applied.approved
                m.errors += len(result.applied.failures)
        if self.client is not None:
            m.api_requests, m.api_retries = self.client.stats.requests, self.client.stats.retries
        try:
            if self.metrics_file:
                write_textfile(Path(self.metrics_file), m)
            if self.pushgateway:
                push(self.pushgateway, m)
        except OSError as exc:  # metrics must not turn a finished run into a crash
            click.echo(f"warning: could not write metrics: {exc}", err=True)


@cli.command("apply")
@click.argument("plan_path", metavar="PLAN", type=click.Path())
@click.option(
    "--max-age",
    default="24h",
    show_default=True,
    help="Refuse a plan older than this (h or d), e.g. 6h or 2d.",
)
@click.option("--quiet", is_flag=True, help="No progress output; the summary only.")
@click.option(
    "--approve",
    "approve",
    multiple=True,
    metavar="CLUSTER",
    help="Send the held changes of this cluster (name or id; repeatable). Only a "
    "max_expire_fraction hold can be approved.",
)
@click.option(
    "--approve-all",
    is_flag=True,
    help="Send the held changes of every cluster held only by max_expire_fraction.",
)
@metrics_options
@click.pass_context
def apply_command(
    ctx: click.Context,
    *,
    plan_path: str,
    max_age: str,
    quiet: bool,
    approve: tuple[str, ...],
    approve_all: bool,
    metrics_file: str | None,
    pushgateway: str | None,
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
    with its full grace. Holds by an OPEN alert or a failed walk cannot be approved.

    \b
    Examples:
      retention plan --out plan.json && retention apply plan.json
      retention apply reports/20261121T030000Z-1a2b3c4d --max-age 2h   # its plan.json
      retention apply plan.json --approve prod-orders   # its fraction hold, reviewed
      retention apply plan.json --metrics-file /var/lib/node_exporter/retention-apply.prom
    """
    from retention.config import require_writable
    from retention.jobs import apply_saved
    from retention.lock import run_lock
    from retention.policy.duration import RetentionDuration

    try:
        age = RetentionDuration.parse(max_age)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-age") from None
    now = datetime.now(UTC)
    path = Path(plan_path)
    with _Metrics(now, None, metrics_file, pushgateway) as metrics:
        if path.is_dir():
            if not (path / "plan.json").is_file():
                raise UsageError(f"{path} is a folder without a plan.json: give the plan file")
            path = path / "plan.json"  # a run folder: its plan
        if not path.is_file():
            raise UsageError(f"{path}: no such plan file")
        loaded = load(ctx)
        config = loaded.config
        require_writable(config.reports.dir, "reports.dir")
        progress = Progress(quiet)
        with run_lock(config.reports.dir):
            with loaded.build_client() as client:
                metrics.client = client
                try:
                    result = apply_saved(
                        client,
                        path,
                        reports=config.reports.dir,
                        max_age=age.after(now) - now if not age.zero else timedelta(0),
                        concurrency=config.api.concurrency,
                        on_outcome=progress.outcome,
                        on_apply=progress.apply,
                        approve=approve,
                        approve_all=approve_all,
                    )
                finally:
                    progress.close()
            code = _finish(result, "apply", now, config.reports.formats)
        metrics.write(code, result)
    return code


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
def demo(policies_path: str | None, report_dir: str) -> int:
    """Run the whole job on the built-in simulator's demo fleet: no set-up, nothing real touched.

    Starts the simulator (3 projects, 10 clusters, a few thousand snapshots) in this
    process, runs plan, gates, apply and reports with the example policies against it, and
    prints where the reports are. The first run over a long history is held by the safety
    gates on purpose (exit code 3 in a real run); the demo itself exits 0.

    \b
    Example:
      retention demo
    """
    from pydantic import SecretStr

    from retention.api import Credentials, OpsManagerClient
    from retention.config import require_writable
    from retention.inventory import ProjectTargets
    from retention.jobs import run_job
    from retention.policy.loader import load_policies
    from retention.simulator.server import Simulator, SimulatorConfig

    chosen = Path(policies_path) if policies_path is not None else _example_policies()
    if not chosen.exists():
        raise UsageError(f"no policies at {chosen}; pass --policies DIR")
    policies = load_policies(chosen)
    require_writable(Path(report_dir), "--report-dir")
    click.echo("Starting the simulator with the demo fleet ...")
    started = datetime.now(UTC)
    with Simulator(SimulatorConfig(fleet="demo", seed=1)) as sim:
        projects = [ProjectTargets(p["id"]) for p in sim.admin("fleet")["projects"]]
        credentials = Credentials(sim.public_key, SecretStr(sim.private_key))
        with OpsManagerClient(sim.base_url, credentials) as client:
            result = run_job(
                client,
                policies,
                projects,
                reports=Path(report_dir),
                schedule="0 3 * * *",
                concurrency=8,
                dry_run=False,
            )
    _finish(result, "run", started, ["html", "markdown"])
    click.echo(
        "This was the simulator: nothing real was touched. Open report.html in a browser; "
        "report.md is the same summary for a chat message."
    )
    return 0  # a demo that ran is a success, whatever the gates held


def _example_policies() -> Path:
    """./policies when there is one, else the shipped examples."""
    local = Path("policies")
    return local if local.is_dir() else examples() / "policies"
