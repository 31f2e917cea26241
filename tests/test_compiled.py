"""The compiled core (tools/compiled.py) is what `make test`'s second run exercises, and the
first run exercises the plain Python modules: each run checks which it got."""

from __future__ import annotations

import importlib
import os
import sysconfig
from pathlib import Path

import pytest

from retention import core_form
from tools import compiled

EXTENSION = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize("path", compiled.MODULES)
def test_each_core_module_runs_in_the_form_this_run_expects(path: str) -> None:
    """Under RETENTION_EXPECT_COMPILED=1 (make unit-compiled) every module of the compiled
    core is imported from its extension; otherwise from its Python source (a stale
    extension left beside a source would shadow every edit of it)."""
    module = importlib.import_module(_module(path))
    origin = str(module.__file__)

    if os.environ.get("RETENTION_EXPECT_COMPILED") == "1":
        assert origin.endswith(EXTENSION), origin
    else:
        assert origin.endswith(".py"), origin


def test_the_compiled_modules_exist_and_define_no_struct() -> None:
    """Each listed module is in the package, and none defines a msgspec struct (compiled,
    a struct loses its frozen and gc options: the engine's values live in policy/spec.py)."""
    root = Path(__file__).parents[1]
    for path in compiled.MODULES:
        source = (root / path).read_text(encoding="utf-8")
        assert "msgspec.Struct" not in source, path


def test_a_bad_setting_is_named() -> None:
    """RETENTION_COMPILE takes auto, yes or no; anything else stops the build by name."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RETENTION_COMPILE", "maybe")
        with pytest.raises(compiled.CannotCompileError, match="RETENTION_COMPILE='maybe'"):
            compiled.setting()


def test_without_a_c_compiler_the_build_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine without a C compiler compile_in stops before running mypyc and names
    what is missing (the build hook then builds plain Python, or fails under
    RETENTION_COMPILE=yes)."""
    monkeypatch.setattr("tools.compiled.shutil.which", lambda _: None)

    with pytest.raises(compiled.CannotCompileError, match="no C compiler"):
        compiled.compile_in(tmp_path)


def test_the_installation_says_which_core_it_runs() -> None:
    """retention.core_form (``retention --version``) names the form this run imported."""
    expected = (
        "compiled core"
        if os.environ.get("RETENTION_EXPECT_COMPILED") == "1"
        else "plain Python core"
    )

    assert core_form() == expected
