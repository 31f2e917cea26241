"""What `retention init` writes: a commented retention.yaml and a policies/ folder, copied
from the examples shipped with the package, into a folder of the user's choice.

Nothing is overwritten: every file is checked before the first is written, so a folder that
already holds a configuration or a policy is left exactly as it was.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from retention.errors import UsageError

CONFIG_NAME = "retention.yaml"
EXAMPLE_CONFIG = "retention.example.yaml"


@dataclass(frozen=True)
class Starter:
    """The files init wrote."""

    folder: Path
    config: Path
    policies: list[Path]


def plan_files(examples: Path, folder: Path) -> dict[Path, Path]:
    """Each file to write (in ``folder``) and the example it is copied from."""
    source = examples / EXAMPLE_CONFIG
    policies = examples / "policies"
    if not source.is_file() or not policies.is_dir():
        raise UsageError(f"the shipped examples are missing from {examples}: reinstall retention")
    files = {folder / CONFIG_NAME: source}
    for example in sorted(policies.iterdir()):
        if example.suffix in (".yaml", ".yml", ".md") and example.is_file():
            files[folder / "policies" / example.name] = example
    return files


def write_starter(examples: Path, folder: Path) -> Starter:
    """Copy the examples into ``folder``; UsageError (nothing written) when any file is
    already there or the folder cannot be written."""
    files = plan_files(examples, folder)
    present = [str(path) for path in files if path.exists()]
    if present:
        raise UsageError(
            f"{', '.join(present)} already {'exists' if len(present) == 1 else 'exist'}: "
            "init never overwrites; choose another folder (retention init DIR) or move "
            f"{'it' if len(present) == 1 else 'them'} away"
        )
    try:
        for target, source in files.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    except OSError as exc:
        raise UsageError(f"cannot write to {folder}: {exc.strerror or exc}") from None
    written = list(files)
    return Starter(folder, written[0], [p for p in written[1:] if p.suffix != ".md"])
