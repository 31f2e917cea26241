"""The small words of the evidence document: times and days as it writes them, a
cluster's identity, and which runs and changes count for what."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from retention.core.timestamps import format_timestamp
from retention.evidence.gather import ClusterFacts

# The modes whose runs walk the fleet (a cluster's day is checked by one of them).
WALKING = ("plan", "run", "dry-run")
# What a change of ours that can take a restore point away does.
DESTRUCTIVE = ("shorten", "delete", "release")


def ts(value: datetime | None) -> str | None:
    """A time as the document writes it."""
    return None if value is None else format_timestamp(value)


def day(value: datetime) -> date:
    """The UTC day of a time."""
    return value.astimezone(UTC).date()


def who(c: ClusterFacts) -> dict[str, Any]:
    """A cluster as each section names it."""
    return {"projectId": c.project_id, "clusterId": c.cluster_id, "name": c.name, "kind": c.kind}
