"""Planning commands: plan, validate, explain, schema, config show, doctor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retention.cli.common import (
    json_logs,
    library,
    parse_at,
    shard_from,
    shard_options,
    strict_option,
)
from retention.cli.group import cli
from retention.cli.output import emit, format_option, show
from retention.cli.progress import TerminalProgress, quiet_option
from retention.core.wording import counted
from retention.errors import UsageError

if TYPE_CHECKING:
    from retention.plan.planner import PlanResult


@cli.command()
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where to write plan.json; - writes it to stdout (and keeps a copy in a run folder).",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    help="Folder for the run's outputs (default: reports.dir of the configuration).",
)
@click.option(
    "--at",
    "at",
    metavar="TIMESTAMP",
    help="Evaluate as of this time instead of now, e.g. 2027-01-01T00:00:00Z: a what-if "
    "plan, to review; apply refuses it.",
)
@click.option(
    "--report",
    is_flag=True,
    help="With --out FILE, also write its report.html and report.md beside it, as "
    "NAME.report.html and NAME.report.md (a plan in its run folder always gets them).",
)
@shard_options
@strict_option
@quiet_option
@format_option
@click.pass_context
def plan(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    out: str | None,
    report_dir: str | None,
    at: str | None,
    shard: str | None,
    shard_count: int | None,
    strict: bool,
    report: bool,
    quiet: bool,
    output: str,
) -> int:
    """Walk every snapshot, apply the policies, and write a dry-run plan (nothing is changed).

    Writes plan.json and decisions.jsonl.zst (one line per snapshot: what and why), and
    report.html and report.md to review it in a browser (titled as a plan: nothing sent),
    and prints a summary, with the policies' warnings (those validate gives, and each glob
    that matches no cluster, with the closest real names). Exit 0: plan written; 1: some
    clusters could not be walked; 3: a safety gate held destructive changes; 2: bad
    configuration or policies, or policy warnings with --strict (the plan is written all
    the same); 5: API unreachable.

    \b
    Examples:
      retention plan
      retention plan --out /tmp/plan.json
      retention plan --out review.json --report  # and review.report.html beside it
      retention plan --at 2027-01-01T00:00:00Z   # what-if: review only, apply refuses it
      retention plan --shard 0/4                 # a quarter of the fleet
      retention plan --strict                    # in CI: policy warnings exit 2
      retention plan --out - | jq .summary       # the plan itself on stdout
      retention plan --format json | jq .plan.summary.byAction
    """
    from retention.library.documents import plan_document
    from retention.library.requests import PlanRequest

    to_stdout = out == "-"
    if to_stdout and output == "json":
        raise UsageError("--out - already writes the plan as JSON to stdout: leave out --format")
    request = PlanRequest(
        out=Path(out) if out is not None and not to_stdout else None,
        report_dir=Path(report_dir) if report_dir else None,
        at=parse_at(at),
        shard=shard_from(shard, shard_count),
        strict=strict,
        report=report,
    )
    ended = library(ctx, TerminalProgress.of(ctx, quiet=quiet)).plan(request)
    if output == "json":
        emit(plan_document(ended))  # its exitCode and policyWarnings say what --strict did
        return ended.code
    _print_plan(ended.result, to_stderr=to_stdout)
    warned = ended.result.policy_warnings
    if strict and warned and not json_logs(ctx):  # with JSON logs, stderr is JSON alone
        click.echo(
            f"--strict: {counted(len(warned), 'policy warning')} (listed above with the "
            f"plan's warnings): exit {ended.code}",
            err=True,
        )
    return ended.code


def _print_plan(result: PlanResult, *, to_stderr: bool) -> None:
    """The plan's summary, where it is and what next; with ``to_stderr`` the plan itself is
    the output (--out -), and the summary goes to stderr, out of a pipe's way."""
    from retention.report.lines import summary_lines

    plan = result.plan
    if to_stderr:
        click.echo(plan.path.read_text(encoding="utf-8"), nl=False)
    for line in summary_lines(plan.head, plan.read_clusters(), plan_path=plan.path):
        click.echo(line, err=to_stderr)
    click.echo(f"\nSaved {plan.path} and {plan.decisions.name} beside it.", err=to_stderr)
    for path in result.reports:
        click.echo(f"  {path.name}: {path}", err=to_stderr)
    if result.ledger_head:
        click.echo(f"Ledger head: {result.ledger_head}", err=to_stderr)
    if result.what_if:
        click.echo(
            "This is a what-if plan (--at): it shows what the policies would do then, and "
            "`retention apply` refuses it.",
            err=to_stderr,
        )
    click.echo(
        f"Explain a snapshot: retention explain SNAPSHOT_ID --plan {plan.path}", err=to_stderr
    )


@cli.command()
@click.option(
    "--policies",
    "policies_path",
    type=click.Path(exists=False),
    help="A policy folder or file (default: policies of the configuration).",
)
@format_option
@click.pass_context
def validate(ctx: click.Context, policies_path: str | None, output: str) -> None:
    """Check the policies (and the configuration) without contacting the API.

    Every problem is listed at once with its file, line and field; exit 2 when there is any.
    Hold records (protect: ids) whose end has passed, or comes within 7 days, a grace in
    months, and protect rules that leave a held snapshot behind each time they move on
    (release_protection false) are warnings with their file and line; they do not change
    the exit code.

    \b
    Examples:
      retention validate
      retention validate --policies policies/
      retention validate --format json | jq -r '.policies[].name'
    """
    from retention.library.requests import ValidateRequest

    request = ValidateRequest(Path(policies_path) if policies_path is not None else None)
    validated = library(ctx).validate(request)
    show(output, validated.document, validated.lines)


@cli.command()
@click.argument("snapshot_id")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(),
    help="The plan to explain from: a plan file, or a run folder (its plan.json). Default: "
    "the newest plan in the reports folder.",
)
@click.option(
    "--policies",
    "policies_path",
    type=click.Path(exists=False),
    help="A policy folder or file to trace the rules with (default: policies of the "
    "configuration). A policy whose file changed since the plan is not traced.",
)
@format_option
@click.pass_context
def explain(
    ctx: click.Context,
    snapshot_id: str,
    plan_path: str | None,
    policies_path: str | None,
    output: str,
) -> None:
    """Say what a plan decided for one snapshot, and what every rule of every policy of its
    cluster did with it: kept it ("daily #3 of 7, until ...") or passed it by, and why.

    The rules are traced again from the plan's own record of the cluster, as of the plan's
    evaluatedAt; a policy whose file changed since the plan shows only what the plan recorded.

    \b
    Examples:
      retention explain 5e4e593f70dfbf1e2f6e1d36
      retention explain 5e4e593f70dfbf1e2f6e1d36 --plan reports/20261121T030000Z-1a2b3c4d
      retention explain 5e4e593f70dfbf1e2f6e1d36 --policies policies/ --format json
    """
    from retention.library.requests import ExplainRequest

    request = ExplainRequest(
        snapshot_id,
        plan=Path(plan_path) if plan_path is not None else None,
        policies=Path(policies_path) if policies_path is not None else None,
    )
    explained = library(ctx).explain(request)
    show(output, explained.document, explained.lines)


@cli.command()
@click.argument("kind", type=click.Choice(["policy", "config", "plan", "evidence"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of a policy file, retention.yaml, a plan file or the evidence.

    \b
    Examples:
      retention schema policy > policy.schema.json   # for editor completion
      retention schema plan
      retention schema evidence   # what `retention evidence --format json` writes
    """
    if kind == "policy":
        from retention.core.policy.model import policy_json_schema

        document = policy_json_schema()
    elif kind == "config":
        from retention.config.settings import config_json_schema

        document = config_json_schema()
    elif kind == "evidence":
        from retention.evidence.model import evidence_json_schema

        document = evidence_json_schema()
    else:
        from retention.runfolder.schema import plan_json_schema

        document = plan_json_schema()
    click.echo(json.dumps(document, indent=2))


@cli.group("config")
def config_group() -> None:
    """Inspect the job configuration.

    \b
    Example:
      retention config show
    """


@config_group.command("show")
@format_option
@click.pass_context
def config_show(ctx: click.Context, output: str) -> None:
    """Print the effective configuration, each setting's source noted, secrets redacted.

    \b
    Examples:
      retention config show
      RETENTION_BASE_URL=https://om.example.net:8443/api/public/v1.0 retention config show
      retention config show --format json | jq .config.api
    """
    from retention.config.showing import config_document, render_config

    loaded = library(ctx).loaded()
    if output == "json":
        emit(config_document(loaded))
        return
    click.echo(render_config(loaded), nl=False)


@cli.command()
@strict_option
@format_option
@click.pass_context
def doctor(ctx: click.Context, strict: bool, output: str) -> int:
    """Check everything the job needs before you schedule it: configuration, policies, the
    API (reachable, TLS, credentials, version), the clock, and each target project.

    One line per check: passed, warning or failed with what to do. The policies' warnings
    (those validate gives, a policy or a glob that matches nothing discovery found, with the
    closest real names) are WARN lines. Exit 0 when nothing failed, 5 when the API cannot be
    reached or refuses the keys, 2 for configuration or policy problems (or policy warnings
    with --strict), 1 for any other failed check.

    \b
    Examples:
      retention doctor
      retention doctor --strict          # in CI: policy warnings exit 2
      retention doctor --format json
    """
    from retention.library.requests import DoctorRequest

    report = library(ctx).doctor(DoctorRequest(strict=strict))
    show(output, report.document, report.lines)
    return report.code
