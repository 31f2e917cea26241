"""The command line: a thin layer over the library, and the only place that prints for humans
and chooses exit codes (DESIGN.md section 7).

Exit codes: 0 done; 1 finished with failures; 2 bad usage, configuration or policy (nothing
sent); 3 a safety gate held destructive changes; 4 another run holds the lock; 5 cannot reach
or authenticate to the API (nothing sent).
"""

from __future__ import annotations

import json
import logging
import secrets
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from retention import __version__
from retention.errors import (
    EXIT_FAILURES,
    EXIT_HELD,
    EXIT_USAGE,
    ConfigError,
    RetentionError,
    UsageError,
)

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="retention")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Job configuration (default: $RETENTION_CONFIG, then ./retention.yaml).",
)
@click.option(
    "--debug",
    is_flag=True,
    envvar="RETENTION_DEBUG",
    help="Log API calls and show a traceback for internal errors.",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, debug: bool) -> None:
    """Enforce snapshot retention policies on an Ops Manager class backup service.

    \b
    Examples:
      retention demo                         # try it on the built-in simulator
      retention validate                     # check the policies
      retention plan                         # dry run: what would change, and why
      retention explain 5e4e593f70dfbf1e2f6e1d36
      retention --config /etc/retention/retention.yaml plan --at 2027-01-01T00:00:00Z
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    ctx.obj["config_path"] = config_path
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


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
                plan_path=_run_dir(Path(report_dir), now) / "plan.json",
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


@cli.group()
def simulator() -> None:
    """A local simulator of the API, for trying retention and for tests.

    \b
    Example:
      retention simulator serve --fleet demo --port 8080
    """


@simulator.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, help="Port; 0 picks a free one.")
@click.option(
    "--fleet",
    default="demo",
    show_default=True,
    help="demo (3 projects, 10 clusters), bench (2,000 clusters x 300 snapshots), "
    "bench:N (N clusters), or a YAML/JSON fleet file.",
)
@click.option("--seed", default=1, show_default=True, help="Seed of the generated fleet.")
@click.option("--latency-ms", default=0.0, show_default=True, help="Delay added to answers.")
@click.option(
    "--faults",
    default="",
    metavar="SPEC",
    help="Injected faults, e.g. 503=0.1,429=0.05,reset=0.02,slow=0.01,stale=0.05,drift=0.02.",
)
@click.option("--public-key", default="sim-public-key", show_default=True)
@click.option(
    "--private-key",
    envvar="RETENTION_SIMULATOR_PRIVATE_KEY",
    default=None,
    help="Private key to accept (default: a random one, printed at start).",
)
@click.option(
    "--literal-op",
    is_flag=True,
    help='Challenge with the spec\'s literal op="auth" instead of qop="auth".',
)
@click.option("--nonce-ttl", default=300.0, show_default=True, help="Seconds a nonce is valid.")
@click.option(
    "--reap-delay",
    default=21600.0,
    show_default=True,
    help="Seconds after its expiry that a snapshot is deleted.",
)
def simulator_serve(
    *,
    host: str,
    port: int,
    fleet: str,
    seed: int,
    latency_ms: float,
    faults: str,
    public_key: str,
    private_key: str | None,
    literal_op: bool,
    nonce_ttl: float,
    reap_delay: float,
) -> None:
    """Serve the API from a simulated fleet until interrupted (Ctrl-C).

    \b
    Examples:
      retention simulator serve --fleet demo --port 8080
      retention simulator serve --fleet bench --latency-ms 20 --faults 503=0.1,reset=0.02
      curl --digest -u KEY:SECRET \\
        "http://127.0.0.1:8080/api/public/v1.0/groups/<project>/clusters/<cluster>/snapshots?completed=all"
    """
    from retention.simulator.faults import FaultSpec, FaultSpecError
    from retention.simulator.server import Simulator, SimulatorConfig

    try:
        FaultSpec.parse(faults)
    except FaultSpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--faults") from None
    config = SimulatorConfig(
        fleet=fleet,
        seed=seed,
        host=host,
        port=port,
        latency_ms=latency_ms,
        faults=faults or None,
        public_key=public_key,
        private_key=private_key,
        literal_op=literal_op,
        nonce_ttl=nonce_ttl,
        reap_delay=timedelta(seconds=reap_delay),
    )
    sim = Simulator(config)
    try:
        sim.start()
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"--fleet {fleet}: {exc}") from None
    summary = sim.admin("fleet")
    snapshots = sim.admin("counters")["snapshots"]
    click.echo(f"retention simulator: serving the {fleet!r} fleet (seed {seed})")
    click.echo(f"  base URL:    {sim.base_url}")
    click.echo(f"  public key:  {sim.public_key}")
    click.echo(f"  private key: {sim.private_key}")
    click.echo(f"  admin:       {sim.admin_url}/counters")
    click.echo(f"  faults:      {FaultSpec.parse(faults)}; latency {latency_ms:g} ms")
    for project in summary["projects"]:
        owners = [c for c in project["clusters"] if c["snapshots"]]
        click.echo(f"  project {project['id']} ({project['name']}): {len(owners)} clusters")
    example = next(
        ((p["id"], c["id"]) for p in summary["projects"] for c in p["clusters"] if c["snapshots"]),
        None,
    )
    click.echo(f"  {snapshots} snapshots in all")
    if example:
        click.echo(
            f"try: curl --digest -u {sim.public_key}:{sim.private_key} "
            f"'{sim.base_url}/groups/{example[0]}/clusters/{example[1]}/snapshots?completed=all'"
        )
    click.echo("Ctrl-C stops it.")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    click.echo("simulator stopped")


def _report(error: RetentionError) -> None:
    click.echo(f"error: {error}", err=True)
    if isinstance(error, ConfigError):
        for problem in error.problems:
            click.echo(f"  - {problem}", err=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code; errors become messages, never tracebacks."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        result = cli.main(args=argv, prog_name="retention", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_FAILURES
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
    except RetentionError as exc:
        _report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if debug:
            traceback.print_exc()
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in retention; run again with --debug for the traceback.",
            err=True,
        )
        return EXIT_FAILURES
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


def _load(ctx: click.Context, *, require_credentials: bool = True) -> Any:
    from retention.config import load_config

    loaded = load_config(ctx.obj["config_path"], require_credentials=require_credentials)
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    return loaded


def _parse_at(value: str | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    from retention.timestamps import parse_timestamp

    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--at") from None


def _run_dir(base: Path, now: datetime) -> Path:
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    return base / f"{stamp}-{secrets.token_hex(4)}"


@cli.command()
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Where to write plan.json.")
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False),
    help="Folder for the run's outputs (default: reports.dir of the configuration).",
)
@click.option(
    "--at",
    "at",
    metavar="TIMESTAMP",
    help="Evaluate as of this time instead of now, e.g. 2027-01-01T00:00:00Z.",
)
@click.pass_context
def plan(ctx: click.Context, out: str | None, report_dir: str | None, at: str | None) -> int:
    """Walk every snapshot, apply the policies, and write a dry-run plan (nothing is changed).

    Writes plan.json and decisions.jsonl (one line per snapshot: what and why) and prints a
    summary. Exit 0: plan written; 1: some clusters could not be walked; 3: a safety gate
    held destructive changes; 2: bad configuration or policies; 5: API unreachable.

    \b
    Examples:
      retention plan
      retention plan --out /tmp/plan.json
      retention plan --at 2027-01-01T00:00:00Z   # what will the policies do by then?
    """
    from retention.inventory import ProjectTargets
    from retention.plan.summary import summary_lines
    from retention.planner import make_plan
    from retention.policy.loader import load_policies

    loaded = _load(ctx)
    config = loaded.config
    policies = load_policies(config.policies)
    now = _parse_at(at)
    created = datetime.now(UTC)
    if out is not None:
        plan_path = Path(out)
    else:
        base = Path(report_dir) if report_dir else config.reports.dir
        plan_path = _run_dir(base, created) / "plan.json"
    projects = [ProjectTargets(t.project, t.clusters, t.config_servers) for t in config.targets]
    with loaded.build_client() as client:
        result = make_plan(
            client,
            policies,
            projects,
            now=now,
            created_at=created,
            schedule=config.schedule,
            concurrency=config.api.concurrency,
            plan_path=plan_path,
        )
    for line in summary_lines(result.document):
        click.echo(line)
    click.echo(f"\nSaved {result.plan_path} and {result.decisions_path.name} beside it.")
    click.echo(f"Explain a snapshot: retention explain SNAPSHOT_ID --plan {result.plan_path}")
    if result.errors:
        return EXIT_FAILURES
    return EXIT_HELD if result.held else 0


@cli.command()
@click.option(
    "--policies",
    "policies_path",
    type=click.Path(exists=False),
    help="A policy folder or file (default: policies of the configuration).",
)
@click.pass_context
def validate(ctx: click.Context, policies_path: str | None) -> None:
    """Check the policies (and the configuration) without contacting the API.

    Every problem is listed at once with its file, line and field; exit 2 when there is any.

    \b
    Examples:
      retention validate
      retention validate --policies policies/
    """
    from retention.policy.loader import load_policies

    if policies_path is not None:
        source: Any = Path(policies_path)
    else:
        source = _load(ctx, require_credentials=False).config.policies
    policies = load_policies(source)
    click.echo(f"{len(policies)} policies are valid:")
    for loaded in policies:
        click.echo(f"  {loaded.path}: {loaded.policy.describe()}")


@cli.command()
@click.argument("snapshot_id")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False),
    help="The plan to explain from (default: the newest plan in the reports folder).",
)
@click.pass_context
def explain(ctx: click.Context, snapshot_id: str, plan_path: str | None) -> None:
    """Say what a plan decided for one snapshot, and every reason why.

    \b
    Examples:
      retention explain 5e4e593f70dfbf1e2f6e1d36
      retention explain 5e4e593f70dfbf1e2f6e1d36 --plan reports/20261121T030000Z-1a2b3c4d/plan.json
    """
    if plan_path is None:
        reports = _load(ctx, require_credentials=False).config.reports.dir
        plans = sorted(Path(reports).glob("*/plan.json"))
        if not plans:
            raise UsageError(f"no plan in {reports}; run 'retention plan' or give --plan")
        path = plans[-1]
    else:
        path = Path(plan_path)
    decisions = path.with_name("decisions.jsonl")
    if not decisions.is_file():
        raise UsageError(f"{decisions} does not exist (it is written beside plan.json)")
    with decisions.open(encoding="utf-8") as lines:
        for line in lines:
            if f'"snapshotId": {json.dumps(snapshot_id)}' not in line:
                continue
            record = json.loads(line)
            for text in _explanation(record):
                click.echo(text)
            return
    raise UsageError(f"snapshot {snapshot_id} is not in {decisions}")


def _explanation(record: dict[str, Any]) -> list[str]:
    observed = record["observed"]
    state = (
        "protected (doNotDelete)"
        if observed["doNotDelete"]
        else (f"expires {observed['expires']}" if observed["expires"] else "no expiry")
    )
    lines = [
        f"snapshot {record['snapshotId']} of {record['kind']} {record['clusterName']} "
        f"({record['clusterId']}, project {record['projectId']})",
        f"  created:   {record['created']}   complete: {record['complete']}   "
        f"consistent: {record['consistent']}",
        f"  now:       {state}",
        f"  decision:  {record['state']}; action: {record['action']}",
    ]
    if record["body"] is not None:
        lines.append(f"  PATCH:     {json.dumps(record['body'])}")
    if record["expiresAfter"]:
        lines.append(f"  expires after: {record['expiresAfter']}")
    if record["held"]:
        lines.append(f"  HELD:      {record['held']}")
    if record["advisory"]:
        lines.append("  advisory:  config-server snapshots cannot be changed through the API")
    lines.append(f"  policies:  {', '.join(record['policies']) or '-'}")
    lines.append("  reasons:")
    lines.extend(f"    - {reason}" for reason in record["reasons"] or ["(none)"])
    return lines


@cli.command()
@click.argument("kind", type=click.Choice(["policy", "config", "plan"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of a policy file, retention.yaml or a plan file.

    \b
    Examples:
      retention schema policy > policy.schema.json   # for editor completion
      retention schema plan
    """
    if kind == "policy":
        from retention.policy.model import policy_json_schema

        document = policy_json_schema()
    elif kind == "config":
        from retention.config import config_json_schema

        document = config_json_schema()
    else:
        from retention.plan.planfile import plan_json_schema

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
@click.pass_context
def config_show(ctx: click.Context) -> None:
    """Print the effective configuration, each setting's source noted, secrets redacted.

    \b
    Examples:
      retention config show
      RETENTION_BASE_URL=https://om.example.net:8443/api/public/v1.0 retention config show
    """
    from retention.config import render_config

    click.echo(render_config(_load(ctx.find_root(), require_credentials=False)), nl=False)
