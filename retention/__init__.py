"""retention: a snapshot retention policy engine for Ops Manager class REST APIs.

As a library (the command line is a thin layer over it)::

    from retention import PlanRequest, Retention

    ended = Retention.from_config("retention.yaml").plan(PlanRequest())
    ended.code, ended.result.plan.path  # 3: a gate holds changes; where the plan is

The names below are loaded when first used, so that importing a part of the package (the
pure core on a planning worker, say) does not load the whole library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from retention.version import __version__, core_form

if TYPE_CHECKING:
    from retention.library.ending import MetricsTarget
    from retention.library.lifecycle import Ended
    from retention.library.requests import (
        ApplyRequest,
        ClustersRequest,
        DiffRequest,
        DoctorRequest,
        ExplainRequest,
        ForecastRequest,
        PlanRequest,
        PruneRequest,
        RunRequest,
        UndoRequest,
        ValidateRequest,
    )
    from retention.library.retention import Retention
    from retention.library.stages import Progress

__all__ = [
    "ApplyRequest",
    "ClustersRequest",
    "DiffRequest",
    "DoctorRequest",
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
    """A public name of the library, loaded on first use (PEP 562) from the module of its
    entry, which imports them all."""
    if name not in __all__:
        raise AttributeError(f"module 'retention' has no attribute {name!r}")
    return getattr(importlib.import_module("retention.library.retention"), name)
