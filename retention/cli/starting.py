"""Getting started: `retention init` writes a configuration and policies to start from."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from retention.cli.common import examples
from retention.cli.group import cli
from retention.cli.output import emit, format_option


@cli.command()
@click.argument("folder", metavar="[DIR]", default=".", type=click.Path(file_okay=False))
@format_option
def init(folder: str, output: str) -> None:
    """Write a commented retention.yaml and a policies/ folder to start from.

    The files are the examples shipped with retention: every setting of the configuration
    explained, and three policies (production GFS with a protected yearly snapshot,
    development, compliance). Nothing is overwritten: when DIR already holds one of the
    files, nothing is written and the exit code is 2. The next commands are printed.

    \b
    Examples:
      retention init                  # in the current folder
      retention init /etc/retention   # then: retention --config /etc/retention/retention.yaml ...
    """
    from retention.config.scaffold import write_starter

    starter = write_starter(examples(), Path(folder))
    if output == "json":
        emit(
            {
                "command": "init",
                "exitCode": 0,
                "config": str(starter.config),
                "policies": [str(p) for p in starter.policies],
            }
        )
        return
    names = ", ".join(p.name for p in starter.policies)
    click.echo(f"Wrote {starter.config} and {starter.folder / 'policies'}/ ({names}).")
    config = "" if Path(folder) == Path(".") else f" --config {shlex.quote(str(starter.config))}"
    click.echo(
        f"\nNext: edit {starter.config} (api.base_url, and targets: your project ids), and put "
        "the API key in the environment:\n"
        "  export RETENTION_PUBLIC_KEY=...  RETENTION_PRIVATE_KEY_FILE=/path/to/private-key\n"
        "Then:\n"
        f"  retention{config} validate   # the policies, no API needed\n"
        f"  retention{config} doctor     # the API, the keys, the clock, the projects\n"
        f"  retention{config} plan       # a dry run: what would change, and why"
    )
