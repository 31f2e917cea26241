"""The command line: a thin layer over the library, and the only place that prints for humans
and chooses exit codes (DESIGN.md section 7).

Exit codes: 0 done; 1 finished with failures; 2 bad usage, configuration or policy (nothing
sent); 3 a safety gate held destructive changes; 4 another run holds the lock; 5 cannot reach
or authenticate to the API (nothing sent).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from datetime import timedelta

import click

from retention import __version__
from retention.errors import EXIT_FAILURES, EXIT_USAGE, ConfigError, RetentionError, UsageError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="retention")
@click.option(
    "--debug",
    is_flag=True,
    envvar="RETENTION_DEBUG",
    help="Log API calls and show a traceback for internal errors.",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Enforce snapshot retention policies on an Ops Manager class backup service.

    \b
    Examples:
      retention --version
      retention demo              # try it on the built-in simulator (no set-up)
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@cli.command()
def demo() -> None:
    """Run the whole job against the built-in simulator and write the reports.

    \b
    Example:
      retention demo
    """
    # Said plainly rather than faked: the simulator (issue 3) and the planner (issue 4) are
    # what this command drives, and neither exists in this version yet.
    click.echo(
        f"retention {__version__}: the demo needs the built-in simulator and the planner, "
        "which this version does not have yet.\n"
        "What exists now: the API client (retention.api) and its test suite (make test).\n"
        "Nothing was run and nothing was sent anywhere."
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
    "or a YAML/JSON fleet file.",
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
