"""What a benchmark ran on, in one line for its results: the machine, the Python, whether the
decision core ran compiled (tools/compiled.py; `make bench` times the compiled form, as the
wheel and the Docker image ship it) and how many cores it used."""

from __future__ import annotations

import platform
import sysconfig

import retention.core.decide


def core_form() -> str:
    """ "compiled core" when the decision core was imported from its extension, else
    "plain Python core"."""
    extension = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    compiled = str(retention.core.decide.__file__).endswith(extension)
    return "compiled core" if compiled else "plain Python core"


def describe(cores: str) -> str:
    """e.g. "x86_64, CPython 3.11.7, compiled core, one core"."""
    return (
        f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {core_form()}, {cores}"
    )
