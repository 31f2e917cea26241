"""retention: a snapshot retention policy engine for Ops Manager class REST APIs.

As a library (the command line is a thin layer over it)::

    from retention import PlanRequest, Retention

    ended = Retention.from_config("retention.yaml").plan(PlanRequest())
    print(ended.code, ended.result.plan.path)

The names below are loaded when first used, so that importing a part of the package (the
pure core on a planning worker, say) does not load the whole library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from retention.version import __version__, core_form

# The library's public names, and the module each comes from.
_EXPORTS = {
    "Retention": "retention.library.retention",
    "Ended": "retention.library.lifecycle",
    "Progress": "retention.library.lifecycle",
    **dict.fromkeys(
        (
            "ApplyRequest",
            "DiffRequest",
            "ExplainRequest",
            "ForecastRequest",
            "MetricsTarget",
            "PlanRequest",
            "PruneRequest",
            "RunRequest",
            "UndoRequest",
            "ValidateRequest",
        ),
        "retention.library.requests",
    ),
}

if TYPE_CHECKING:
    from retention.library.lifecycle import Ended, Progress
    from retention.library.requests import (
        ApplyRequest,
        DiffRequest,
        ExplainRequest,
        ForecastRequest,
        MetricsTarget,
        PlanRequest,
        PruneRequest,
        RunRequest,
        UndoRequest,
        ValidateRequest,
    )
    from retention.library.retention import Retention

__all__ = [
    "ApplyRequest",
    "DiffRequest",
    "Ended",
    "ExplainRequest",
    "ForecastRequest",
    "MetricsTarget",
    "PlanRequest",
    "Progress",
    "PruneRequest",
    "Retention",
    "RunRequest",
    "UndoRequest",
    "ValidateRequest",
    "__version__",
    "core_form",
]


def __getattr__(name: str) -> Any:
    """A public name of the library, loaded on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retention' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
