"""The wheel's build hook: the compiled core (tools/compiled.py) goes into a wheel built
where a C compiler is there (``pip install .``, the Docker image); an editable install
(``make test``'s) and a machine without one get the plain Python modules, which do the same.

RETENTION_COMPILE=yes fails the build instead of falling back; =no never compiles.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _compiled(root: Path) -> ModuleType:
    # Loaded by its path: the build runs with the project root off sys.path.
    spec = importlib.util.spec_from_file_location("retention_compiled", root / "tools/compiled.py")
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {root / 'tools/compiled.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CompiledCore(BuildHookInterface):  # type: ignore[type-arg]
    """Compile the core into the wheel (see the module docstring)."""

    PLUGIN_NAME = "custom"
    _scratch: tempfile.TemporaryDirectory[str] | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile a copy of the package and add its extension files to the wheel."""
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        compiled = _compiled(root)
        mode = compiled.setting()
        if mode == "no":
            return
        self._scratch = tempfile.TemporaryDirectory(prefix="retention-wheel-")
        copy = Path(self._scratch.name)
        shutil.copytree(
            root / "retention", copy / "retention", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copy2(root / "pyproject.toml", copy / "pyproject.toml")  # mypy's settings
        try:
            written = compiled.compile_in(copy)
        except compiled.CannotCompileError as error:
            if mode == "yes":
                raise
            self.app.display_warning(f"retention: building the plain Python core ({error})")
            return
        for path in written:
            build_data["force_include"][str(path)] = str(path.relative_to(copy))
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the compiled copy once the wheel holds its files."""
        if self._scratch is not None:
            self._scratch.cleanup()
