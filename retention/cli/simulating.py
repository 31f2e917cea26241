"""The simulator commands: retention simulator serve, and retention simulator outside (a
change made "as someone else" in a served simulator, for the demo and a person trying the
ledger)."""

from __future__ import annotations

import signal
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from retention.cli.common import clock_of
from retention.cli.group import cli
from retention.cli.output import emit, format_option
from retention.core.wording import counted
from retention.errors import ConnectError, UsageError

if TYPE_CHECKING:
    from retention.simulator.adminclient import AdminClient
    from retention.simulator.server import Simulator


@cli.group()
def simulator() -> None:
    """A local simulator of the API, for trying retention and for tests.

    \b
    Examples:
      retention simulator serve --fleet demo --port 8080
      retention simulator outside delete --url http://127.0.0.1:8080 --cluster prod-orders \\
        --snapshot 6a9615801ed334d08ac21475
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
@format_option
@click.pass_context
def simulator_serve(  # noqa: PLR0913 - click passes each option of the command as a keyword
    ctx: click.Context,
    *,
    output: str,
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
        now=clock_of(ctx)(),  # the simulated time starts at the command line's
    )
    # Handled before the banner: a SIGTERM sent once it is read must stop the serving.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sim = _start(Simulator(config))
    _announce(sim, output, faults)
    _serve_until(stop, sim)
    if output == "text":
        click.echo("simulator stopped")


def _start(sim: Simulator) -> Simulator:
    """Start ``sim``, or say why it cannot serve (UsageError, exit 2)."""
    config = sim.config
    try:
        return sim.start()
    except OSError as exc:
        where = f"{config.host}:{config.port}"
        raise UsageError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"--fleet {config.fleet}: {exc}") from None


def _announce(sim: Simulator, output: str, faults: str) -> None:
    """Say where the simulator serves and what (``output`` json: one JSON document)."""
    config = sim.config
    summary = sim.admin("fleet")
    snapshots = sim.admin("counters")["snapshots"]
    if output == "json":
        emit(
            _started_document(
                sim, fleet=config.fleet, seed=config.seed, summary=summary, snapshots=snapshots
            )
        )
        return
    _print_started(sim, faults=faults, summary=summary, snapshots=snapshots)


# Names said per project in the start banner; --format json has them all.
NAMES_LISTED = 8


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - NAMES_LISTED} more" if len(names) > NAMES_LISTED else ""
    return ", ".join(names[:NAMES_LISTED]) + more


def _serve_until(stop: threading.Event, sim: Simulator) -> None:
    """Serve until ``stop`` (SIGTERM) or Ctrl-C, then stop the simulator."""
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


def _started_document(
    sim: Simulator, *, fleet: str, seed: int, summary: dict[str, Any], snapshots: int
) -> dict[str, Any]:
    """simulator serve --format json: where it serves, its keys and its fleet. Printed once
    it serves, when nothing but a signal ends it: Ctrl-C and SIGTERM stop it with exit 0."""
    return {
        "command": "simulator serve",
        "exitCode": 0,
        "fleet": fleet,
        "seed": seed,
        "baseUrl": sim.base_url,
        "publicKey": sim.public_key,
        "privateKey": sim.private_key,  # the simulator's own, made up for this run
        "admin": sim.admin_url,
        "snapshots": snapshots,
        "projects": [
            {
                "id": p["id"],
                "name": p["name"],
                "clusters": sum(1 for c in p["clusters"] if c["snapshots"]),
                "clusterNames": _cluster_names(p),
                "configServers": _config_servers(p),
            }
            for p in summary["projects"]
        ],
    }


def _cluster_names(project: dict[str, Any]) -> list[str]:
    """The names of a project's clusters that own snapshots (not their shards), sorted."""
    return sorted(c["name"] for c in project["clusters"] if c["snapshots"])


def _config_servers(project: dict[str, Any]) -> list[str]:
    """The host names of a project's legacy config servers (hosts that own snapshots)."""
    return sorted(h["hostname"] or h["id"] for h in project["hosts"] if h["snapshots"])


def _print_started(sim: Simulator, *, faults: str, summary: dict[str, Any], snapshots: int) -> None:
    """What a person needs to point retention or curl at the simulator."""
    fleet, seed, latency_ms = sim.config.fleet, sim.config.seed, sim.config.latency_ms
    from retention.simulator.faults import FaultSpec

    click.echo(f"retention simulator: serving the {fleet!r} fleet (seed {seed})")
    click.echo(f"  base URL:    {sim.base_url}")
    click.echo(f"  public key:  {sim.public_key}")
    click.echo(f"  private key: {sim.private_key}")
    click.echo(f"  admin:       {sim.admin_url}/counters")
    click.echo(f"  faults:      {FaultSpec.parse(faults)}; latency {latency_ms:g} ms")
    for project in summary["projects"]:
        names, servers = _cluster_names(project), _config_servers(project)
        said = f"  project {project['id']} ({project['name']}): {counted(len(names), 'cluster')}"
        said += f" ({_listed(names)})" if names else ""
        if servers:
            said += f", {counted(len(servers), 'legacy config server')} ({_listed(servers)})"
        click.echo(said)
    example = next(
        ((p["id"], c["id"]) for p in summary["projects"] for c in p["clusters"] if c["snapshots"]),
        None,
    )
    click.echo(f"  {counted(snapshots, 'snapshot')} in all")
    if example:
        click.echo(
            f"try: curl --digest -u {sim.public_key}:{sim.private_key} "
            f"'{sim.base_url}/groups/{example[0]}/clusters/{example[1]}/snapshots?completed=all'"
        )
    click.echo("Ctrl-C stops it.")


# What `simulator outside` asks the admin surface, by its ACTION: the admin's action and
# the options the action takes besides --url, --cluster and --user.
OUTSIDE_ACTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "expires": ("expires", ("--snapshot", "--expires")),
    "do-not-delete": ("doNotDelete", ("--snapshot", "--do-not-delete/--no-do-not-delete")),
    "delete": ("delete", ("--snapshot",)),
    "terminate": ("terminate", ()),
    "remove": ("remove", ()),
}

# The admin's body fields, as the options that give them (its messages name the field).
ADMIN_FIELDS = {
    "clusterId": "--cluster",
    "snapshotId": "--snapshot",
    "expires": "--expires",
    "doNotDelete": "--do-not-delete",
    "user": "--user",
}


@simulator.command("outside")
@click.argument("action", type=click.Choice(list(OUTSIDE_ACTIONS)))
@click.option(
    "--url",
    required=True,
    metavar="URL",
    help="The served simulator: the base URL `simulator serve` printed, or http://HOST:PORT.",
)
@click.option(
    "--cluster",
    required=True,
    metavar="NAME_OR_ID",
    help="The cluster, or legacy config server (its host name or id), to change.",
)
@click.option("--snapshot", metavar="ID", help="The snapshot (expires, do-not-delete, delete).")
@click.option(
    "--expires", metavar="TIMESTAMP", help="Its new expiry (expires), e.g. 2026-11-22T00:00:00Z."
)
@click.option(
    "--do-not-delete/--no-do-not-delete",
    "do_not_delete",
    default=None,
    help="Protect it, or lift its protection (do-not-delete).",
)
@click.option(
    "--user",
    default="someone@example.com",
    show_default=True,
    help="Who made the change, as the simulator logs it.",
)
@format_option
def simulator_outside(  # noqa: PLR0913 - click passes each option of the command as a keyword
    *,
    output: str,
    action: str,
    url: str,
    cluster: str,
    snapshot: str | None,
    expires: str | None,
    do_not_delete: bool | None,
    user: str,
) -> None:
    """Change a served simulator's snapshots as someone else would, outside retention.

    As a person in the Ops Manager UI or a script does: never through retention, with the
    audit alert the service opens for it. ACTION is expires (a new expiry), do-not-delete
    (protect it, or --no-do-not-delete to lift it), delete (the snapshot goes), terminate
    (the backup ends: every snapshot of the cluster goes at once) or remove (the cluster
    leaves its project). The next plan of a ledger that knew the snapshot reports it.

    \b
    Examples:
      retention simulator outside expires --url http://127.0.0.1:8080 --cluster prod-orders \\
        --snapshot 6a9615801ed334d08ac21475 --expires 2026-11-22T00:00:00Z
      retention simulator outside do-not-delete --url http://127.0.0.1:8080 \\
        --cluster prod-orders --snapshot 6a9615801ed334d08ac21475 --no-do-not-delete
      retention simulator outside terminate --url http://127.0.0.1:8080 --cluster prod-orders
    """
    given = {"--snapshot": snapshot, "--expires": expires,
             "--do-not-delete/--no-do-not-delete": do_not_delete}  # fmt: skip
    admin_action, takes = OUTSIDE_ACTIONS[action]
    for option, value in given.items():
        if option in takes and value is None:
            raise UsageError(f"{action} needs {option}")
        if option not in takes and value is not None:
            raise UsageError(f"{option.split('/')[0]} is not an option of {action}")
    body: dict[str, Any] = {"action": admin_action, "user": user}
    if snapshot is not None:
        body["snapshotId"] = snapshot
    if expires is not None:
        body["expires"] = _expiry(expires)
    if do_not_delete is not None:
        body["doNotDelete"] = do_not_delete
    from retention.simulator.adminclient import AdminClient, AdminClientError

    try:
        admin = AdminClient(url)
    except AdminClientError as exc:
        raise click.BadParameter(str(exc), param_hint="--url") from None
    try:
        entry = _outside(admin, cluster, body)
    finally:
        admin.close()
    if output == "json":
        emit({"command": "simulator outside", "exitCode": 0, **entry})
        return
    for line in _outside_lines(entry):
        click.echo(line)


def _expiry(text: str) -> str:
    """--expires as the API's timestamp, or the option's exit 2."""
    from retention.core.timestamps import format_timestamp, parse_timestamp

    try:
        return format_timestamp(parse_timestamp(text))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--expires") from None


def _outside(admin: AdminClient, cluster: str, body: dict[str, Any]) -> dict[str, Any]:
    """``cluster`` found in the fleet, then the change made: what the simulator logged. A
    simulator nothing answers for is exit 5, anything it refuses exit 2."""
    from retention.simulator.adminclient import AdminClientError, find_deployment

    try:
        try:
            found = find_deployment(admin.fleet(), cluster)
        except LookupError as exc:
            raise UsageError(f"--cluster {cluster}: {exc}") from None
        return admin.outside({**body, "clusterId": found.id})
    except AdminClientError as exc:
        if exc.unreachable:
            raise ConnectError(str(exc), endpoint="simulator admin") from None
        field, said, rest = str(exc).partition(": ")
        option = ADMIN_FIELDS.get(field)
        raise UsageError(f"{option}: {rest}" if said and option else str(exc)) from None


def _outside_lines(entry: dict[str, Any]) -> list[str]:
    """What a person reads of a change made outside retention."""
    what = entry["clusterName"]
    if entry["snapshotId"] is not None:
        what += f" snapshot {entry['snapshotId']}"
    said = "opened" if entry["alertOpened"] else "already open"
    lines = [
        f"{entry['action']} by {entry['user']} on {what}, outside retention",
        f"  before: {_state(entry['before'])}",
        f"  after:  {_state(entry['after'])}",
        f"  alert:  {entry['alertType']} {entry['alertId']} ({said})",
    ]
    if entry["before"] == entry["after"]:  # e.g. an expiry on a protected snapshot is dropped
        lines.insert(3, "  (unchanged: the API's rules left it as it was)")
    return lines


def _state(state: dict[str, Any] | None) -> str:
    if state is None:
        return "deleted"
    if "snapshots" in state:
        return counted(state["snapshots"], "snapshot")
    if state.get("doNotDelete"):
        return "doNotDelete"
    return f"expires {state['expires']}" if state.get("expires") else "no expiry"
