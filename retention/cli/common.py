"""Helpers the commands share: loading the configuration, times, shards."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from retention.errors import UsageError
from retention.walk.sharding import Shard, choose_shard

__all__ = ["UsageError"]


def load(ctx: click.Context, *, require_credentials: bool = True) -> Any:
    from retention.config.settings import load_config

    loaded = load_config(ctx.obj["config_path"], require_credentials=require_credentials)
    log = logging.getLogger("retention.config")
    for warning in loaded.warnings:
        # "warning: ..." as ever on a terminal; a JSON object in json mode (retention.ops.logs).
        text, fields = f"warning: {warning}", {"event": "config-warning"}
        log.warning("%s", warning, extra={"text": text, "fields": fields})
    return loaded


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


def parse_at(value: str | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
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


def shard_from(shard: str | None, shard_count: int | None) -> Shard | None:
    """The shard the options ask for, or None for the whole fleet."""
    return choose_shard(shard, shard_count, os.environ.get("JOB_COMPLETION_INDEX"))
