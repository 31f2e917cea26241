"""--format json: one JSON document on stdout for scripts, the human text otherwise.

Every document names its command and, when the command ends with one, its exit code; the
shapes are described in docs/commands.md and checked by tests/test_cli_json.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import click

from retention.cli.common import json_logs

F = TypeVar("F", bound=Callable[..., Any])


def default_format(ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    """--format as given, else json under --log-format json and text otherwise (a callback
    of every command's --format)."""
    # With --log-format json every line on stderr is JSON; stdout follows unless told
    # otherwise, so `retention --log-format json CMD 2>&1 | jq` reads both streams.
    if value is not None:
        return value
    return "json" if json_logs(ctx) else "text"


def format_option(command: F) -> F:
    """--format text|json on a command that reports something (json by default under
    --log-format json)."""
    return click.option(
        "--format",
        "output",
        type=click.Choice(["text", "json"]),
        default=None,
        callback=default_format,
        help="json: one JSON document on stdout, for scripts (docs/commands.md). Default: "
        "text, or json with --log-format json.",
    )(command)


def emit(document: Mapping[str, Any]) -> None:
    """Print ``document`` as indented JSON (timestamps as the plan files write them), a
    plan's clusters streamed from its file (planwrite.pretty_json)."""
    from retention.runfolder.planwrite import pretty_json

    for piece in pretty_json(document):
        click.echo(piece.decode(), nl=False)
    click.echo()


def show(
    output: str, document: Callable[[], Mapping[str, Any]], lines: Callable[[], Iterable[str]]
) -> None:
    """The ``document`` for --format json, else the ``lines`` for a person (each made only
    when it is shown: a run's document reads its plan again)."""
    if output == "json":
        emit(document())
        return
    for line in lines():
        click.echo(line)
