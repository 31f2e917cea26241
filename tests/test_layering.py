"""The layering holds: the pure core (policy, plan) loads no HTTP library even at run time,
and the import-linter contracts of
pyproject.toml catch an HTTP import slipped into the core."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CORE = [
    "retention.core.policy.loader",
    "retention.core.policy.engine",
    "retention.core.policy.rules",
    "retention.core.policy.trace",
    "retention.core.decide",
    "retention.core.planfile",
    "retention.runfolder.planwrite",
    "retention.core.wording",
    "retention.core.guard",
    "retention.core.explain",
    "retention.config.yamldoc",
]


def test_importing_the_core_loads_no_http_library() -> None:
    """A fresh interpreter that imports every core module has neither requests nor urllib3
    nor our client loaded."""
    code = (
        f"import sys\nimport {', '.join(CORE)}\n"
        "loaded = [m for m in ('requests', 'urllib3', 'retention.api.client',"
        " 'retention.api.transport') if m in sys.modules]\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout

    assert out.strip() == "[]"


def test_the_layering_contracts_hold_and_catch_an_http_import_in_the_core(
    tmp_path: Path,
) -> None:
    """lint-imports keeps every contract of the repository, and breaks the core's contract
    on a copy where plan/model.py imports requests."""
    kept = subprocess.run(
        [str(LINT_IMPORTS)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    shutil.copytree(ROOT / "retention", tmp_path / "retention")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "retention" / "core" / "model.py"
    model.write_text(model.read_text() + "\nimport requests  # a shortcut someone took\n")
    broken = subprocess.run(
        [str(LINT_IMPORTS)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )

    assert kept.returncode == 0, kept.stdout
    assert broken.returncode == 1
    assert "speaks no HTTP and calls no shell module BROKEN" in broken.stdout
    assert "retention.core.model -> requests" in broken.stdout
