"""How a run, an apply or a demo shows on the terminal: progress while it runs, then the
summary (or, ``--format json``, one JSON document). The library (retention.library) did
the rest: reports, notices, logs and metrics, and the words (library/documents.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retention.cli.output import emit, show
from retention.core.wording import counted
from retention.errors import exit_meaning

if TYPE_CHECKING:
    from retention.apply.applying import RunResult
    from retention.apply.executor import Outcome
    from retention.library.ending import MetricsTarget
    from retention.library.lifecycle import Ended
    from retention.walk.inventory import Walk


def show_run(ended: Ended[RunResult], output: str) -> int:
    """Print how a run or an apply ended (``output`` json: one JSON document); its exit
    code."""
    from retention.library.documents import run_document, run_lines

    show(output, lambda: run_document(ended), lambda: run_lines(ended))
    if output != "json":
        click.echo(f"Exit {ended.code}: {exit_meaning(ended.code)}")
    return ended.code


def show_demo(ended: Ended[RunResult], output: str, code: int) -> int:
    """Print how the demo's run ended, as show_run does, but with ``code``, the exit code
    of the demo itself: the demo succeeded whatever its run held, so ``exitCode`` is what
    the process returns and the run's own code is ``runExitCode``."""
    from retention.library.documents import run_document, run_lines

    if output == "json":
        document = run_document(ended)
        document.update(
            command="demo",
            exitCode=code,
            meaning=exit_meaning(code),
            runExitCode=ended.code,
            runMeaning=exit_meaning(ended.code),
        )
        emit(document)
    else:
        for line in run_lines(ended):
            click.echo(line)
        click.echo(
            f"The run would exit {ended.code} ({exit_meaning(ended.code)}); the demo exits {code}."
        )
    return code


class Progress:
    """Progress on a terminal: a count while walking, a bar while applying; else nothing
    (callers pass quiet under json logs, where every stderr line must be JSON)."""

    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty()
        self.walked = 0
        self._bar: Any = None  # click's ProgressBar, entered by hand

    def walk(self, _walk: Walk) -> None:
        """One more cluster walked."""
        if self.on:
            self.walked += 1
            click.echo(f"\rwalked {counted(self.walked, 'cluster')}", nl=False, err=True)

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` PATCHes to send."""
        if self.on:
            click.echo("", err=True)
            if total:
                self._bar = click.progressbar(length=total, label="applying", file=sys.stderr)
                self._bar.__enter__()

    def outcome(self, _outcome: Outcome) -> None:
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
    """--metrics-file and --pushgateway, the same on run, apply and undo."""
    command = click.option(
        "--pushgateway", metavar="URL", help="Push the run's metrics to this Pushgateway."
    )(command)
    return click.option(
        "--metrics-file",
        type=click.Path(dir_okay=False),
        help="Write the run's metrics here (node exporter textfile format).",
    )(command)


def metrics_target(metrics_file: str | None, pushgateway: str | None) -> MetricsTarget:
    """Where --metrics-file and --pushgateway send the metrics."""
    from retention.library.ending import MetricsTarget

    return MetricsTarget(Path(metrics_file) if metrics_file else None, pushgateway)
