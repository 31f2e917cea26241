"""The API client: the only package of retention that speaks HTTP."""

from retention.api.client import Endpoint, ListWalk, OpsManagerClient
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
