"""The API key pair, from the environment only: never from the configuration file.

``RETENTION_PUBLIC_KEY`` and either ``RETENTION_PRIVATE_KEY`` or ``RETENTION_PRIVATE_KEY_FILE``
(a file, e.g. a Kubernetes Secret mounted as a volume, which does not show in the process
environment). The private key lives in a ``SecretStr`` and is never echoed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

from retention.api.values import Credentials

ENV_PUBLIC_KEY = "RETENTION_PUBLIC_KEY"
ENV_PRIVATE_KEY = "RETENTION_PRIVATE_KEY"
ENV_PRIVATE_KEY_FILE = "RETENTION_PRIVATE_KEY_FILE"
MISSING_KEYS = [
    f"environment: {ENV_PUBLIC_KEY}: not set (the public key of the programmatic API key)",
    f"environment: {ENV_PRIVATE_KEY} or {ENV_PRIVATE_KEY_FILE}: not set (the private key,"
    " or a file holding it)",
]


def read_credentials(
    env: Mapping[str, str],
    required: bool,
    problems: list[str],
    warnings: list[str],
    sources: dict[str, str],
) -> Credentials | None:
    public = env.get(ENV_PUBLIC_KEY, "").strip()
    private_env = env.get(ENV_PRIVATE_KEY, "").strip()
    key_file = env.get(ENV_PRIVATE_KEY_FILE, "").strip()
    private: str | None = None
    sources["credentials.public_key"] = f"env {ENV_PUBLIC_KEY}" if public else "not set"
    sources["credentials.private_key"] = "not set"
    if private_env and key_file:
        problems.append(
            f"environment: both {ENV_PRIVATE_KEY} and {ENV_PRIVATE_KEY_FILE} are set: remove"
            f" {ENV_PRIVATE_KEY} and keep the file (a file does not show in the process"
            " environment)"
        )
    elif private_env:
        private = private_env
        sources["credentials.private_key"] = f"env {ENV_PRIVATE_KEY}"
    elif key_file:
        private = _read_key_file(Path(key_file), problems, warnings)
        sources["credentials.private_key"] = f"env {ENV_PRIVATE_KEY_FILE} ({key_file})"
    if required and not public:
        problems.append(MISSING_KEYS[0])
    if required and not (private_env or key_file):
        problems.append(MISSING_KEYS[1])
    if public and private:
        return Credentials(public, SecretStr(private))
    return None


def _read_key_file(path: Path, problems: list[str], warnings: list[str]) -> str | None:
    where = f"environment: {ENV_PRIVATE_KEY_FILE}"
    text = None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(f"{where}: cannot read {path}: {exc.strerror or type(exc).__name__}")
    except UnicodeDecodeError:
        problems.append(f"{where}: {path} is not UTF-8 text")
    # Key files end in a newline (echo, kubectl create secret --from-file); keys never do.
    key = text.strip() if text is not None else None
    if key == "":
        problems.append(f"{where}: {path} is empty")
    elif key and (warning := open_to_others(path, ENV_PRIVATE_KEY_FILE)) is not None:
        warnings.append(warning)
    return key or None


def open_to_others(path: Path, setting: str) -> str | None:
    """The warning for a secret's file (named by ``setting``) that users other than its
    owner may read, else None (also when it cannot be looked at)."""
    try:
        info = path.stat()
    except OSError:
        return None
    if info.st_mode & 0o077 and not _own_group_read_only(info):
        return (
            f"{setting}: {path} is open to group or others ({stat.filemode(info.st_mode)}): "
            f"chmod 600 {path} (Kubernetes: defaultMode: 0400 on the Secret volume)"
        )
    return None


def _own_group_read_only(info: os.stat_result) -> bool:
    """Group-readable only, by a group this process is in: what Kubernetes makes of a Secret
    file with defaultMode 0400 once the pod sets fsGroup (it adds group read). Not a leak."""
    return info.st_mode & 0o077 == 0o040 and (
        info.st_gid == os.getgid() or info.st_gid in os.getgroups()
    )
