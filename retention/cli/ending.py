"""How a run, an apply or a demo ends on the terminal: the summary (or, ``--format json``,
one JSON document); the progress while it runs is retention.cli.progress's. The library
(retention.library) did the rest: reports, notices, logs and metrics, and the words
(library/documents.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retention.cli.output import emit, show
from retention.errors import exit_meaning

if TYPE_CHECKING:
    from retention.apply.applying import RunResult
    from retention.library.ending import MetricsTarget
    from retention.library.lifecycle import Ended


def show_run(ended: Ended[RunResult], output: str) -> int:
    """Print how a run or an apply ended (``output`` json: one JSON document); its exit
    code."""
    from retention.library.documents import run_document, run_lines

    show(output, lambda: run_document(ended), lambda: run_lines(ended))
    if output != "json":
        click.echo(f"Exit {ended.code}: {exit_meaning(ended.code)}")
    return ended.code


def show_demo(
    ended: Ended[RunResult],
    output: str,
    code: int,
    *,
    first: Ended[RunResult] | None = None,
    made: Sequence[str] = (),
) -> int:
    """Print how the demo's (second) run ended, as show_run does, but with ``code``, the
    exit code of the demo itself: the demo succeeded whatever its run held, so ``exitCode``
    is what the process returns and the run's own code is ``runExitCode``; the JSON names
    the ``first`` run (the ledger's baseline) and the changes ``made`` between the two."""
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
        if first is not None:
            document["firstRun"] = {
                "runId": first.result.run_id,
                "runDir": str(first.result.run_dir),
                "exitCode": first.code,
            }
            document["changedOutside"] = list(made)
        emit(document)
    else:
        for line in run_lines(ended):
            click.echo(line)
        click.echo(
            f"The run would exit {ended.code} ({exit_meaning(ended.code)}); the demo exits {code}."
        )
    return code


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
