"""The API client: the only package of retention that speaks HTTP.

The names below load on first use (PEP 562): the pure core imports the resource models
(``retention.api.models``), and importing a submodule runs this file first, so eager imports
here would load requests and urllib3 into every planning test and into `retention validate`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retention.api.client import OpsManagerClient
    from retention.api.endpoints import Endpoint
    from retention.api.listwalk import ListWalk
    from retention.api.models import (
        AgentLinks,
        Alert,
        AlertStatus,
        Cluster,
        ConfigServerSnapshot,
        Host,
        Link,
        Snapshot,
        SnapshotPatch,
        SnapshotState,
    )
    from retention.api.transport import Credentials, RetryPolicy, Timeouts, TLSConfig

_WHERE = {
    "Endpoint": "endpoints",
    "ListWalk": "listwalk",
    "OpsManagerClient": "client",
    "AgentLinks": "models",
    "Alert": "models",
    "AlertStatus": "models",
    "Cluster": "models",
    "ConfigServerSnapshot": "models",
    "Host": "models",
    "Link": "models",
    "Snapshot": "models",
    "SnapshotPatch": "models",
    "SnapshotState": "models",
    "Credentials": "transport",
    "RetryPolicy": "transport",
    "Timeouts": "transport",
    "TLSConfig": "transport",
}

__all__ = [
    "AgentLinks",
    "Alert",
    "AlertStatus",
    "Cluster",
    "ConfigServerSnapshot",
    "Credentials",
    "Endpoint",
    "Host",
    "Link",
    "ListWalk",
    "OpsManagerClient",
    "RetryPolicy",
    "Snapshot",
    "SnapshotPatch",
    "SnapshotState",
    "TLSConfig",
    "Timeouts",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'retention.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"retention.api.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
