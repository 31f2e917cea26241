"""The ``retention`` command group and its global options (--config, --debug,
--log-format), accepted before the command and after it. Each module of commands adds its
commands to ``cli``; retention.cli imports them all, then ``accept_global_options``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from retention.ops import logs
from retention.ops.clock import system_clock
from retention.version import __version__, core_form

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class OutputClosedError(Exception):
    """The reader of stdout or stderr went away (`retention diff | head`): not a failure of
    the command, and not an OSError, so that click's own handling (which ends the process
    with exit 1, the code of a failed walk) lets it through to retention.cli.main."""


@contextmanager
def _closed_output() -> Iterator[None]:
    """A BrokenPipeError (EPIPE) raised as OutputClosedError. Only the command line writes
    to stdout and stderr; below it, a broken pipe to the API is an ApiError."""
    try:
        yield
    except BrokenPipeError as exc:
        raise OutputClosedError(str(exc)) from exc


class RetentionGroup(click.Group):
    """The ``retention`` group: a closed stdout or stderr while the command line parses
    (``--help``) or a command runs ends it as OutputClosedError."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The group's context, its help and usage written under _closed_output."""
        with _closed_output():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        """The command, its own parsing and help included, under _closed_output."""
        with _closed_output():
            return super().invoke(ctx)


@click.group(cls=RetentionGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(
    __version__,
    "-V",
    "--version",
    prog_name="retention",
    message=f"%(prog)s, version %(version)s ({core_form()})",
)
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
@click.option(
    "--actor",
    default=None,
    metavar="NAME",
    help="Who runs this command, for the ledger (default: $RETENTION_ACTOR, the CI's "
    "user variable, else the OS user).",
)
@click.pass_context
def cli(
    ctx: click.Context, config_path: str | None, debug: bool, log_format: str, actor: str | None
) -> None:
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
    ctx.obj["log_format"] = log_format
    ctx.obj["actor"] = actor
    clock = ctx.obj.setdefault("clock", system_clock)
    logs.configure(debug=debug, log_format=log_format, clock=clock)


# Global options after the command too (`retention plan --config FILE`): every command gets
# copies of them that write into the same context object the group fills, so a value given
# after the command wins over one given before it. Their defaults are None, so a copy left
# out never undoes the group's value (or its environment variable).
def _set_config(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_root().obj["config_path"] = value


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool | None) -> None:
    if value:
        root = ctx.find_root().obj
        root["debug"] = True
        logs.configure(
            debug=True,
            log_format=root.get("log_format", "text"),
            clock=root.get("clock", system_clock),
        )


def _set_log_format(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        root = ctx.find_root().obj
        root["log_format"] = value
        clock = root.get("clock", system_clock)
        logs.configure(debug=root.get("debug", False), log_format=value, clock=clock)


def _set_actor(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_root().obj["actor"] = value


def _global_options() -> list[click.Parameter]:
    return [
        click.Option(
            ["--config"],
            type=click.Path(dir_okay=False),
            expose_value=False,
            callback=_set_config,
            help="Job configuration (a global option; also accepted before the command).",
        ),
        click.Option(
            ["--debug"],
            is_flag=True,
            default=None,
            expose_value=False,
            callback=_set_debug,
            help="Log API calls, tracebacks for internal errors (global option).",
        ),
        click.Option(
            ["--log-format"],
            type=click.Choice(["text", "json"]),
            expose_value=False,
            callback=_set_log_format,
            help="text or json lines on stderr (global option).",
        ),
        click.Option(
            ["--actor"],
            metavar="NAME",
            expose_value=False,
            callback=_set_actor,
            help="Who runs this command, for the ledger (global option).",
        ),
    ]


def accept_global_options(group: click.Group) -> None:
    """Give every command of ``group`` (and of its subgroups) the global options."""
    for command in group.commands.values():
        command.params.extend(_global_options())
        if isinstance(command, click.Group):
            accept_global_options(command)
