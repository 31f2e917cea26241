"""What this installation of retention is: its version, and which form of the decision
core it runs. A module of its own, below everything that names them (the client's
User-Agent, the reports, ``retention --version``)."""

from __future__ import annotations

import importlib.util
import sysconfig

__version__ = "0.1.0"


def core_form() -> str:
    """Which form of the decision core this installation runs: "compiled core" when it is
    the C extension a wheel's build hook made (tools/compiled.py), else "plain Python core"
    (an editable install, or a wheel built without a C compiler: the build says so only
    with pip's -v, so ``retention --version`` does)."""
    found = importlib.util.find_spec("retention.core.decide")
    origin = found.origin if found is not None else None
    extension = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return "compiled core" if origin and origin.endswith(extension) else "plain Python core"
