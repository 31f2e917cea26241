"""The command line: a thin layer over the library, and the only place that prints for humans
and chooses exit codes (DESIGN.md section 7).

Exit codes: 0 done; 1 finished with failures; 2 bad usage, configuration or policy (nothing
sent); 3 a safety gate held destructive changes; 4 another run holds the lock; 5 cannot reach
or authenticate to the API (nothing sent).

Commands live by subject in planning.py, running.py and simulating.py; each module adds its
commands to the ``cli`` group defined here when it is imported below.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

import click

from retention import __version__, logs
from retention.errors import EXIT_FAILURES, EXIT_USAGE, ConfigError, RetentionError

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
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    envvar="RETENTION_LOG_FORMAT",
    show_default=True,
    help="json: one JSON object per line on stderr, for log collectors.",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, debug: bool, log_format: str) -> None:
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
    logs.configure(debug=debug, log_format=log_format)


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


WALKING_COMMANDS = frozenset({"plan", "run", "apply", "demo"})


def reexec_with_arena_limit(argv: Sequence[str]) -> None:
    """Start again with MALLOC_ARENA_MAX=2 for the commands that walk a fleet (glibc only).

    glibc gives each busy thread a malloc arena of its own and never hands fragmented
    ones back: with eight walk threads parsing half-megabyte pages, a 2,000-cluster plan
    peaked at 296 MiB of RSS while its live data stayed under 10 MiB; with two arenas it
    peaks at 59 MiB (benchmarks/plan_memory.py). glibc reads the limit at start-up (a
    mallopt call from Python came too late to hold), hence the one exec. A value already
    set, by a container image say, is respected.
    """
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return
    if not WALKING_COMMANDS.intersection(argv):
        return
    os.environ["MALLOC_ARENA_MAX"] = "2"
    os.execv(sys.executable, [sys.executable, "-m", "retention", *argv])  # noqa: S606


def run() -> None:
    """Console-script entry point."""
    reexec_with_arena_limit(sys.argv[1:])
    sys.exit(main())


# Imported for their side effect: each registers its commands on the group above.
from retention.cli import planning, running, simulating, starting  # noqa: E402

__all__ = ["cli", "main", "planning", "run", "running", "simulating", "starting"]
