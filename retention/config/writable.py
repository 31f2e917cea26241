"""Whether retention can write its run folders where the configuration says, checked before
any request so that a read-only mount fails the run at once (exit 2), not after the walk."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from retention.errors import ConfigError

WRITE_FIX = (
    "let the user that runs retention write there, or point {setting} at a folder it "
    "can write; on Kubernetes with a read-only root file system, mount a volume there (an "
    "emptyDir or a PersistentVolumeClaim)"
)


def unwritable(folder: Path) -> str | None:
    """Why retention could not write its files into ``folder``, or None when it can. An
    existing folder is tried with a temporary file (permissions, read-only mounts and
    full disks all show); a missing one needs its nearest existing parent to be a
    writable folder, since the run creates it. Nothing else is created."""
    if folder.exists():
        if not folder.is_dir():
            return f"{folder} is not a folder"
        try:
            with tempfile.TemporaryFile(dir=folder, prefix=".retention-write-check-"):
                return None
        except OSError as exc:
            return f"cannot write to {folder}: {exc.strerror or exc}"
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {folder}: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {folder}: {parent} is not writable"
    return None


def require_writable(folder: Path, setting: str) -> None:
    """ConfigError (exit 2, before any request) when ``folder`` cannot be written."""
    problem = unwritable(folder)
    if problem is not None:
        raise ConfigError(f"{setting}: {problem}", problems=[WRITE_FIX.format(setting=setting)])
