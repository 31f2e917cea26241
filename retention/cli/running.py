"""Commands that change things, or show it: demo (and, soon, run and apply)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from retention.cli import cli
from retention.cli.common import run_dir
from retention.errors import UsageError


@cli.command()
@click.option(
    "--policies",
    "policies_path",
    default="policies",
    show_default=True,
    type=click.Path(),
    help="Policies to plan with (the examples of the repository by default).",
)
@click.option(
    "--report-dir",
    default="reports",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the run's outputs go.",
)
def demo(policies_path: str, report_dir: str) -> None:
    """Run the job on the built-in simulator's demo fleet: no set-up, nothing real touched.

    Starts the simulator (3 projects, 10 clusters, a few thousand snapshots) in this
    process, plans it with the example policies and prints the summary. This version stops
    at the dry-run plan: applying it and the HTML/Markdown reports come next.

    \b
    Example:
      retention demo
    """
    from pydantic import SecretStr

    from retention.api import Credentials, OpsManagerClient
    from retention.inventory import ProjectTargets
    from retention.plan.summary import summary_lines
    from retention.planner import make_plan
    from retention.policy.loader import load_policies
    from retention.simulator.server import Simulator, SimulatorConfig

    if not Path(policies_path).exists():
        raise UsageError(
            f"no policies at {policies_path}; run from the repository or pass --policies"
        )
    policies = load_policies(Path(policies_path))
    now = datetime.now(UTC)
    click.echo("Starting the simulator with the demo fleet ...")
    with Simulator(SimulatorConfig(fleet="demo", seed=1)) as sim:
        projects = [ProjectTargets(p["id"]) for p in sim.admin("fleet")["projects"]]
        credentials = Credentials(sim.public_key, SecretStr(sim.private_key))
        with OpsManagerClient(sim.base_url, credentials) as client:
            result = make_plan(
                client,
                policies,
                projects,
                now=now,
                created_at=now,
                schedule="0 3 * * *",
                concurrency=8,
                plan_path=run_dir(Path(report_dir), now) / "plan.json",
            )
    for line in summary_lines(result.document):
        click.echo(line)
    click.echo(
        f"\nSaved {result.plan_path} and {result.decisions_path.name} beside it; try\n"
        f"  retention explain SNAPSHOT_ID --plan {result.plan_path}\n"
        "The first run over a long history is held by the safety gates on purpose. This\n"
        "version stops at the dry-run plan: applying it (retention apply / run) and the\n"
        "HTML and Markdown reports come with the next version. Nothing real was touched."
    )
