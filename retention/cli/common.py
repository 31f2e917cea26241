"""Helpers the commands share: the clock, the library (``Retention``) a command calls,
times, shards."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from retention.errors import UsageError
from retention.ops.clock import Clock, system_clock
from retention.ops.sharding import Shard, choose_shard

if TYPE_CHECKING:
    from retention.library.retention import Retention
    from retention.library.stages import Progress

__all__ = ["UsageError"]


def clock_of(ctx: click.Context) -> Clock:
    """The clock the command line was given (retention.cli.main), else the system's."""
    obj = ctx.find_root().obj
    clock: Clock = obj.get("clock", system_clock) if isinstance(obj, dict) else system_clock
    return clock


def library(ctx: click.Context, progress: Progress | None = None) -> Retention:
    """The library for this command: its --config, the clock, who hears its progress on a
    terminal, and whether a person waits there."""
    from retention.library.retention import Retention

    return Retention(
        ctx.find_root().obj["config_path"],
        clock=clock_of(ctx),
        progress=progress,
        interactive=interactive(ctx),
        actor=ctx.find_root().obj.get("actor"),
    )


def interactive(ctx: click.Context) -> bool:
    """Whether a person waits at a terminal for this command (retention.cli.main decides)."""
    obj = ctx.find_root().obj
    return bool(obj.get("interactive", False)) if isinstance(obj, dict) else False


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (a closed or detached one is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return callable(isatty) and bool(isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


def json_logs(ctx: click.Context) -> bool:
    """Whether --log-format json (before or after the command, or from the environment)
    is in force: then every stderr line must be JSON and stdout defaults to JSON too."""
    return bool((ctx.find_root().obj or {}).get("log_format") == "json")


def examples() -> Path:
    """The folder of the shipped examples: retention.example.yaml and policies/. A wheel
    carries them in retention/examples; an editable install finds them in the checkout."""
    package = Path(__file__).resolve().parents[1]  # retention/
    installed = package / "examples"
    return installed if (installed / "policies").is_dir() else package.parent


def parse_at(value: str | None) -> datetime | None:
    """--at as a time, or None when not given (the clock's now)."""
    if value is None:
        return None
    from retention.core.timestamps import parse_timestamp

    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--at") from None


F = TypeVar("F", bound=Callable[..., Any])


def shard_options(command: F) -> F:
    """--shard INDEX/COUNT and --shard-count N (index from JOB_COMPLETION_INDEX)."""
    command = click.option(
        "--shard-count",
        type=click.IntRange(min=1),
        default=None,
        help="Split the fleet in N shards; this process takes shard $JOB_COMPLETION_INDEX "
        "(set by a Kubernetes Indexed Job).",
    )(command)
    return click.option(
        "--shard",
        metavar="INDEX/COUNT",
        default=None,
        help="Take only shard INDEX of COUNT (0-based), by a stable hash of the cluster id.",
    )(command)


def strict_option(command: F) -> F:
    """--strict (or RETENTION_STRICT=1, the setting of a CI job or a CronJob): the policies'
    warnings are an error (exit 2), for teams that want them fixed rather than read."""
    return click.option(
        "--strict",
        is_flag=True,
        envvar="RETENTION_STRICT",
        help="Exit 2 when the policies have warnings (a grace in months, an ended hold, a "
        "protect rule that leaves holds behind, a glob that matches nothing), as validate "
        "and the plan list them. RETENTION_STRICT=1 sets it for every command that takes it.",
    )(command)


def shard_from(shard: str | None, shard_count: int | None) -> Shard | None:
    """The shard the options ask for, or None for the whole fleet."""
    return choose_shard(shard, shard_count, os.environ.get("JOB_COMPLETION_INDEX"))
