"""What `retention init` writes: a commented retention.yaml and a policies/ folder, copied
from the examples shipped with the package, into a folder of the user's choice.

Nothing is overwritten: every file is checked before the first is written, so a folder that
already holds a configuration or a policy is left exactly as it was.

A Markdown file is written with its links made to work where it lands: a link to a file init
also writes is kept, and one to a page of the repository (policies/README.md links to
../docs/policies.md), which the user's folder does not have, becomes plain text naming that
page in the retention repository.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

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
    names = {path.relative_to(folder).as_posix() for path in files}
    try:
        for target, source in files.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.suffix == ".md":
                where = target.relative_to(folder).as_posix()
                text = source.read_text(encoding="utf-8")
                target.write_text(local_links(text, where, names), encoding="utf-8")
            else:
                shutil.copyfile(source, target)
    except OSError as exc:
        raise UsageError(f"cannot write to {folder}: {exc.strerror or exc}") from None
    written = list(files)
    return Starter(folder, written[0], [p for p in written[1:] if p.suffix != ".md"])


# A Markdown link: [label](target); a target with a scheme (https:, mailto:) or only an
# anchor (#part) is left alone.
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|#|/")


def local_links(text: str, where: str, written: set[str]) -> str:
    """``text`` of the Markdown file init writes at ``where`` (relative to its folder, as
    policies/README.md) with every relative link that leads to none of the ``written``
    files turned into plain text naming the page in the retention repository."""

    def rewrite(found: re.Match[str]) -> str:
        label, target = found.group(1), found.group(2)
        if _ABSOLUTE.match(target):
            return found.group(0)
        page = posixpath.normpath(str(PurePosixPath(where).parent / target.split("#")[0]))
        if page in written:
            return found.group(0)
        if label.strip("`") == page:
            return f"{label} (in the retention repository)"
        return f"{label} ({page} in the retention repository)"

    return _LINK.sub(rewrite, text)
