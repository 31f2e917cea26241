"""The compiled core: which modules mypyc compiles to C extensions, and the build that does it.

The decision core runs over every snapshot of a fleet, and a forecast runs it hundreds of
times over each cluster; compiled, it takes about two thirds of the time (benchmarks/
forecast.py). The same modules run as plain Python wherever they are not compiled, and
``make test`` runs the tests that exercise them both ways.

Used by the wheel's build hook (tools/hatch_compile.py: ``pip install .``, the Docker image)
and by ``make compiled`` (a copy of the package compiled in place under build/compiled/,
for the tests and the benchmarks). Run as a script: ``python -m tools.compiled DIR``
compiles DIR/retention in place.

A module can be compiled when mypy --strict passes on it (make typecheck) and it defines
no class that is pickled or hashed by value or is a msgspec struct: mypyc makes a compiled
module's classes native ones, which lose a struct's options and cannot unpickle a frozen
dataclass (retention/core/policy/spec.py holds the engine's values for that reason).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

MODULES = (
    "retention/core/policy/engine.py",
    "retention/core/policy/rules.py",
    "retention/core/decide.py",
    "retention/core/forecast.py",
    "retention/core/horizon.py",
    "retention/core/merged.py",
    "retention/core/gates.py",
    "retention/core/restorable.py",
    "retention/core/ids.py",
    "retention/core/timestamps.py",
)

# RETENTION_COMPILE: "auto" (the default) compiles where a C compiler and mypyc are there and
# builds plain Python elsewhere; "yes" fails the build when it cannot compile (the Docker
# image); "no" never compiles.
SETTING = "RETENTION_COMPILE"

_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify

scratch, modules = sys.argv[1], sys.argv[2:]
# --follow-imports=silent: the modules imported by the compiled ones are read for their
# types, not checked again (make typecheck does that).
setup(
    name="retention-compiled",
    packages=[],
    ext_modules=mypycify(
        ["--follow-imports=silent", *modules], opt_level="3", target_dir=scratch + "/c"
    ),
    script_args=[
        "build_ext", "--inplace", "--build-temp", scratch + "/t", "--build-lib", scratch + "/l"
    ],
)
"""


class CannotCompileError(Exception):
    """The compiled core cannot be built here (no C compiler, no mypyc, or mypyc failed)."""


def setting() -> str:
    """The RETENTION_COMPILE setting: auto, yes or no."""
    value = os.environ.get(SETTING, "auto").strip().lower() or "auto"
    if value not in ("auto", "yes", "no"):
        raise CannotCompileError(f"{SETTING}={value!r}: use auto, yes or no")
    return value


def missing() -> str | None:
    """What this machine lacks to compile, or None when it has a C compiler and mypyc."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"no Python headers ({headers}; Debian: python3-dev)"
    try:
        import mypyc.build  # noqa: F401, PLC0415
    except ImportError:
        return "mypyc (the mypy package) is not installed"
    return None


def compile_in(root: Path) -> list[Path]:
    """Compile MODULES of the tree at ``root`` in place; the extension files written (each
    module's beside its source, and mypyc's shared library at ``root``)."""
    if (why := missing()) is not None:
        raise CannotCompileError(why)
    before = set(_extensions(root))
    with tempfile.TemporaryDirectory(prefix="retention-mypyc-") as scratch:
        setup = Path(scratch) / "setup.py"
        setup.write_text(_SETUP)
        done = subprocess.run(  # noqa: S603
            [sys.executable, str(setup), scratch, *MODULES],
            cwd=root,
            env={**os.environ, "MYPY_CACHE_DIR": str(Path(scratch) / "mypy-cache")},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
    if done.returncode:
        raise CannotCompileError(f"mypyc failed:\n{done.stdout[-4000:]}")
    written = sorted(set(_extensions(root)) - before)
    if len(written) < len(MODULES):
        raise CannotCompileError(
            f"mypyc wrote {len(written)} extensions for {len(MODULES)} modules"
        )
    return written


def _extensions(root: Path) -> list[Path]:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return [*root.glob(f"*{suffix}"), *(root / "retention").rglob(f"*{suffix}")]


def main() -> None:
    """Compile DIR/retention in place (``python -m tools.compiled DIR``)."""
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tools.compiled DIR")
    try:
        written = compile_in(Path(sys.argv[1]))
    except CannotCompileError as error:
        sys.exit(f"cannot compile the core: {error}")
    print(f"compiled {len(MODULES)} modules: {len(written)} extension files")  # noqa: T201


if __name__ == "__main__":
    main()
