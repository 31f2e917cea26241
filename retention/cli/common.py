"""Helpers the commands share: loading the configuration, times, run folders."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from retention.errors import UsageError

__all__ = ["UsageError"]


def load(ctx: click.Context, *, require_credentials: bool = True) -> Any:
    from retention.config import load_config

    loaded = load_config(ctx.obj["config_path"], require_credentials=require_credentials)
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    return loaded


def parse_at(value: str | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    from retention.timestamps import parse_timestamp

    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--at") from None


def run_dir(base: Path, now: datetime) -> Path:
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    return base / f"{stamp}-{secrets.token_hex(4)}"
