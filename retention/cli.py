"""The command line: a thin layer over the library, and the only place that prints for humans
and chooses exit codes (DESIGN.md section 7).

Exit codes: 0 done; 1 finished with failures; 2 bad usage, configuration or policy (nothing
sent); 3 a safety gate held destructive changes; 4 another run holds the lock; 5 cannot reach
or authenticate to the API (nothing sent).
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence

import click

from retention import __version__
from retention.errors import EXIT_FAILURES, EXIT_USAGE, ConfigError, RetentionError

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
