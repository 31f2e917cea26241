"""The layering holds: the pure core loads no HTTP library even at run time, the
import-linter contracts of pyproject.toml keep on the tree as it is, and the core's
allow-list breaks on a copy where a core module imports anything it does not list."""

from __future__ import annotations

import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import retention.core

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CORE = sorted(
    module.name for module in pkgutil.walk_packages(retention.core.__path__, "retention.core.")
)
ALLOW_LIST = "The core imports only the pure stdlib, pydantic, msgspec, croniter and yaml"
# An import slipped into a core module, each into another one: the process, HTTP and
# metrics libraries, and the shell's lock, metrics, logs and thread-window modules.
SLIPPED = [
    ("subprocess", "retention/core/decide.py"),
    ("requests", "retention/core/policy/engine.py"),
    ("prometheus_client", "retention/core/guard.py"),
    ("retention.ops.lock", "retention/core/model.py"),
    ("retention.ops.metrics", "retention/core/policy/loader.py"),
    ("retention.ops.logs", "retention/core/restore.py"),
    ("retention.ops.window", "retention/core/timestamps.py"),
]


def _lint_imports(cwd: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    # COLUMNS: a contract's name on one line, whatever the terminal the suite runs in.
    only = [argument for contract in contracts for argument in ("--contract", contract)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *only],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        check=False,
    )


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


@pytest.fixture(scope="module")
def slipped(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What the allow-list says, alone, of a copy of the repository where each import of
    SLIPPED is added to its core module (one run for all of them: each case then looks
    for its own import in the answer)."""
    copy = tmp_path_factory.mktemp("layering")
    shutil.copytree(ROOT / "retention", copy / "retention")
    shutil.copytree(ROOT / "tools", copy / "tools")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for imported, path in SLIPPED:
        module = copy / path
        module.write_text(module.read_text() + f"\nimport {imported}  # a shortcut taken\n")
    result = _lint_imports(copy, "core-allow-list")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{ALLOW_LIST} BROKEN" in result.stdout
    return result.stdout.split("Broken contracts", 1)[1]


def test_importing_the_core_loads_no_http_library() -> None:
    """A fresh interpreter that imports every core module has neither requests nor urllib3
    nor any of our API package loaded."""
    code = (
        f"import sys\nimport {', '.join(CORE)}\n"
        "loaded = [m for m in ('requests', 'urllib3', 'retention.api.client',"
        " 'retention.api.transport', 'retention.api') if m in sys.modules]\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout

    assert out.strip() == "[]"


def test_the_layering_contracts_hold_on_the_tree() -> None:
    """lint-imports keeps every contract of the repository: the layers, the CLI's own
    place, and the core's allow-list."""
    kept = _lint_imports(ROOT)

    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert f"{ALLOW_LIST} KEPT" in kept.stdout


@pytest.mark.parametrize(("imported", "path"), SLIPPED)
def test_the_allow_list_breaks_on_an_import_it_does_not_name(
    slipped: str, imported: str, path: str
) -> None:
    """An import of a process, HTTP or metrics library, or of the shell's lock, metrics,
    logs or window module, into a core module breaks the core's allow-list, which names
    the core module and the import."""
    importer = _module_name(path)

    assert f"{importer} is not allowed to import {imported}:" in slipped
    assert f"{importer} -> {imported} (l." in slipped


LAYERS = "The entry point, the CLI, the library, the features, the steps, the infra and the core"
# Imports that run against the shell's layers, each into another module of the copy: a step
# importing the library, a feature importing another (features are independent), the
# configuration importing a step, the lowest infra importing the API, the library importing
# the CLI; inside a function, and under TYPE_CHECKING, as at the top. Then the simulator
# importing the configuration, the library starting a simulator, and click outside the CLI.
CLIMBED = [
    ("layers", "retention/plan/planner.py", "import retention.library\n"),
    ("layers", "retention/forecast/render.py", "import retention.diff.render\n"),
    ("layers", "retention/config/loading.py", "import retention.walk.inventory\n"),
    ("layers", "retention/ops/clock.py", "import retention.api.client\n"),
    ("layers", "retention/library/lifecycle.py", "import retention.cli\n"),
    ("layers", "retention/report/render.py", "def _late() -> None:\n    import retention.apply\n"),
    (
        "layers",
        "retention/walk/inventory.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import retention.plan.workers\n",
    ),
    ("simulator-apart", "retention/simulator/faults.py", "import retention.config.settings\n"),
    (
        "simulator-started-by-the-cli",
        "retention/library/reading.py",
        "import retention.simulator\n",
    ),
    ("click-in-the-cli", "retention/report/cells.py", "import click\n"),
]
CONTRACTS = ("layers", "simulator-apart", "simulator-started-by-the-cli", "click-in-the-cli")
NAMES = {
    "layers": LAYERS,
    "simulator-apart": "The simulator imports nothing of the product but the core",
    "simulator-started-by-the-cli": "Only the CLI starts the simulator",
    "click-in-the-cli": "Only the CLI imports click",
}


@pytest.fixture(scope="module")
def climbed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What the shell's contracts say of a copy of the repository with every import of
    CLIMBED added, and a new package (retention/unlisted) that no layer names."""
    copy = tmp_path_factory.mktemp("climbed")
    shutil.copytree(ROOT / "retention", copy / "retention")
    shutil.copytree(ROOT / "tools", copy / "tools")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for _contract, path, code in CLIMBED:
        module = copy / path
        module.write_text(module.read_text() + "\n" + code)
    (copy / "retention" / "unlisted").mkdir()
    (copy / "retention" / "unlisted" / "__init__.py").write_text(
        '"""A package no layer names."""\n'
    )
    result = _lint_imports(copy, *CONTRACTS)
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stdout.split("Broken contracts", 1)[1]


@pytest.mark.parametrize(("contract", "path", "code"), CLIMBED)
def test_each_shell_contract_breaks_on_an_import_against_it(
    climbed: str, contract: str, path: str, code: str
) -> None:
    """An import that runs up the shell's layers (or across two packages of one layer),
    into the simulator, out of it, or of click outside the CLI, breaks its contract, which
    names the importing module and what it imports: at the top of a module, inside a
    function, or under TYPE_CHECKING alike."""
    imported = code.rsplit("import ", 1)[1].split(maxsplit=1)[0]
    importer = _module_name(path)

    broken = climbed.split(NAMES[contract], 1)[1]
    for other in NAMES.values():  # this contract's section only
        broken = broken.split(f"\n{other}", 1)[0]
    found = rf"-\s+{re.escape(importer)} -> {re.escape(imported)} \(l\.\d+\)"
    assert re.search(found, broken), broken


def test_a_package_no_layer_names_breaks_the_layers(climbed: str) -> None:
    """The layers are exhaustive: a new package of retention breaks them until it is given
    its layer, so a new package cannot land outside the order."""
    assert "not listed as layers:\n\n- retention.unlisted\n" in climbed
