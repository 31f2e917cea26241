"""What a benchmark ran on, in one line for its results: the machine, the Python, whether the
decision core ran compiled (tools/compiled.py; `make bench` times the compiled form, as the
wheel and the Docker image ship it) and how many cores it used."""

from __future__ import annotations

import platform

from retention import core_form


def describe(cores: str) -> str:
    """e.g. "x86_64, CPython 3.11.7, compiled core, one core"."""
    return (
        f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {core_form()}, {cores}"
    )
