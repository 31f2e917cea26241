"""The command line: a thin layer over the library (retention.library runs the jobs), and
the only place that prints for humans and chooses exit codes.

Exit codes: 0 done; 1 finished with failures; 2 bad usage, configuration or policy (nothing
sent); 3 a safety gate held destructive changes; 4 another run holds the lock; 5 cannot reach
or authenticate to the API (nothing sent); 130 and 143 stopped by SIGINT or SIGTERM; 141 the
reader of stdout went away (`retention diff | head`), said nowhere.

Commands live by subject in starting.py (init), planning.py (plan, validate, explain,
schema, config, doctor), listing.py (clusters), reviewing.py (diff), forecasting.py
(forecast), running.py (run, apply, demo), undoing.py (undo), pruning.py (prune),
ledgering.py (ledger verify), auditing.py (evidence) and simulating.py; each adds its
commands to the ``cli`` group (group.py) when it is imported below. progress.py is the
progress of the long commands on a terminal, ending.py how a run ends (summary, JSON),
output.py --format json.

``main(argv, clock=...)`` takes the clock every command reads the time from (the system
clock by default; retention.ops.clock): a test gives it the simulator's. ``interactive``
says whether a person waits at a terminal (default: stdin and stderr are both terminals);
then a refused first connection to the API fails after a short try, where an unattended
run (cron, a Kubernetes Job) retries it fully, as for a service restarting.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Sequence

import click

# Imported for their side effect: each registers its commands on the group.
from retention.cli import (
    auditing,
    forecasting,
    ledgering,
    listing,
    planning,
    pruning,
    reviewing,
    running,
    simulating,
    starting,
    undoing,
)
from retention.cli.common import is_terminal
from retention.cli.group import OutputClosedError, accept_global_options, cli
from retention.errors import (
    EXIT_CLOSED_OUTPUT,
    EXIT_FAILURES,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ApiError,
    ConfigError,
    RetentionError,
    StopRequestedError,
)
from retention.ops import logs
from retention.ops.clock import Clock, system_clock


def _report(error: RetentionError, clock: Clock, *, as_json: bool = False) -> None:
    """Say what ended the command: "error: ..." (and its problems) on stderr, or in json
    mode one fatal event with the exit code, the problems and the endpoint and status."""
    if as_json:
        problems = list(error.problems) if isinstance(error, ConfigError) else None
        api = error if isinstance(error, ApiError) else None
        logs.fatal(
            str(error),
            exit_code=error.exit_code,
            errorType=type(error).__name__,
            problems=problems,
            endpoint=api.endpoint if api is not None else None,
            status=api.status if api is not None else None,
            clock=clock,
        )
        return
    # A stop is what the person asked for, not an error: its own words, no "error:".
    click.echo(str(error) if isinstance(error, StopRequestedError) else f"error: {error}", err=True)
    if isinstance(error, ConfigError):
        for problem in error.problems:
            click.echo(f"  - {problem}", err=True)


def _report_usage(error: click.ClickException, clock: Clock, *, as_json: bool) -> int:
    """Say what was wrong with the command line (click's words, or in json mode one fatal
    event with the usage); its exit code."""
    code = EXIT_USAGE if isinstance(error, click.UsageError) else error.exit_code
    if not as_json:
        error.show()
        return code
    usage = error.ctx.get_usage() if isinstance(error, click.UsageError) and error.ctx else None
    logs.fatal(
        error.format_message(),
        exit_code=code,
        errorType=type(error).__name__,
        usage=usage,
        clock=clock,
    )
    return code


def _report_bug(error: Exception, clock: Clock, *, as_json: bool, debug: bool) -> None:
    """Say that a bug ended the command, without a traceback unless --debug."""
    if as_json:
        logs.fatal(
            f"internal error: {type(error).__name__}: {error}",
            exit_code=EXIT_FAILURES,
            errorType=type(error).__name__,
            hint=None if debug else "a bug in retention; run with --debug for the traceback",
            traceback=traceback.format_exc() if debug else None,
            clock=clock,
        )
        return
    if debug:
        traceback.print_exc()
    click.echo(
        f"internal error: {type(error).__name__}: {error}\n"
        "This is a bug in retention; run again with --debug for the traceback.",
        err=True,
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    clock: Clock = system_clock,
    interactive: bool | None = None,
) -> int:
    """Run the CLI and return its exit code; errors become messages, never tracebacks.
    ``clock`` is where every command reads the time (retention.ops.clock); ``interactive``
    whether a person waits at a terminal (None: stdin and stderr are terminals).

    With the json log format (``--log-format json`` or RETENTION_LOG_FORMAT=json) every
    error is one JSON object line on stderr (logs.fatal), usage errors included."""
    args = list(argv) if argv is not None else sys.argv[1:]
    # As click reads the flag: --debug anywhere, or RETENTION_DEBUG=1 (true, yes, on).
    env_debug = os.environ.get("RETENTION_DEBUG", "").strip().lower()
    debug = "--debug" in args or env_debug in {"1", "true", "t", "yes", "y", "on"}
    as_json = logs.requested_format(args, os.environ) == "json"

    def say(message: str, code: int, kind: str) -> int:
        if as_json:
            logs.fatal(message, exit_code=code, errorType=kind, clock=clock)
        else:
            click.echo(message, err=True)
        return code

    try:
        result = cli.main(
            args=argv,
            prog_name="retention",
            standalone_mode=False,
            obj={
                "clock": clock,
                "interactive": on_terminal() if interactive is None else interactive,
            },
        )
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns Ctrl-C inside a command into Abort; no command prompts, so that is it.
        return say("interrupted", EXIT_INTERRUPTED, "KeyboardInterrupt")
    except click.ClickException as exc:
        return _report_usage(exc, clock, as_json=as_json)
    except RetentionError as exc:
        _report(exc, clock, as_json=as_json)
        return exc.exit_code
    except OutputClosedError:
        # What a Unix tool does when its reader has gone (`retention diff | head`): stop
        # writing and exit quietly, with the code a shell gives a process SIGPIPE ended.
        _silence_closed_output()
        return EXIT_CLOSED_OUTPUT
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        _report_bug(exc, clock, as_json=as_json, debug=debug)
        return EXIT_FAILURES
    return result if isinstance(result, int) else 0


def _silence_closed_output() -> None:
    """Point this process's stdout and stderr at /dev/null: what is still in their buffers
    would otherwise fail again as Python exits, with an "Exception ignored" message on
    stderr. Only the real streams (not a test's capture of them)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream, real in ((sys.stdout, sys.__stdout__), (sys.stderr, sys.__stderr__)):
            if stream is real and stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def on_terminal() -> bool:
    """Whether a person runs this command at a terminal: stdin and stderr are both one
    (under cron, in a pod or with input from a pipe or /dev/null, one of them is not)."""
    return all(is_terminal(stream) for stream in (sys.stdin, sys.stderr))


__all__ = [
    "auditing",
    "cli",
    "forecasting",
    "ledgering",
    "listing",
    "main",
    "planning",
    "pruning",
    "reviewing",
    "running",
    "simulating",
    "starting",
    "undoing",
]

accept_global_options(cli)
