"""`config show`: the effective configuration for a person (YAML) or a script (JSON)."""

from __future__ import annotations

from typing import Any

from retention.config.loading import LoadedConfig

# The private key is never shown, not even in part: the mask notification URLs use too.
from retention.config.notify import REDACTED
from retention.config.settings import yaml_lines


def render_config(loaded: LoadedConfig) -> str:
    """The effective configuration as YAML, each line's source noted, the private key redacted."""
    lines = [(text, loaded.sources.get(key, "")) for text, key, _ in yaml_lines(loaded.config)]
    creds = loaded.credentials
    public = creds.public_key if creds else "not set"
    private = REDACTED if creds else "not set"
    lines += [
        ("# credentials come from the environment only, never from this file:", ""),
        (f"#   public_key: {public}", loaded.sources.get("credentials.public_key", "")),
        (f"#   private_key: {private}", loaded.sources.get("credentials.private_key", "")),
    ]
    width = max(len(text) for text, _ in lines) + 2
    header = [f"# effective configuration from {loaded.path} ({loaded.sources.get('config')})"]
    header += [f"# warning: {warning}" for warning in loaded.warnings]
    body = [f"{text.ljust(width)}# {source}" if source else text for text, source in lines]
    return "\n".join(header + body) + "\n"


def config_document(loaded: LoadedConfig) -> dict[str, Any]:
    """`config show --format json`: the effective settings, where each came from, and the
    credentials as set or not (the private key never, not even in part)."""
    creds = loaded.credentials
    return {
        "command": "config show",
        "exitCode": 0,
        "path": str(loaded.path),
        "config": loaded.config.model_dump(mode="json"),
        "sources": dict(sorted(loaded.sources.items())),
        "credentials": {
            "publicKey": creds.public_key if creds else None,
            "privateKey": REDACTED if creds else None,
        },
        "warnings": list(loaded.warnings),
    }
