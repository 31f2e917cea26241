"""A forecast as one JSON document (`retention forecast --format json`), in the conventions
of the other commands' documents (camelCase keys; timestamps are datetimes here, written in
UTC with ``Z`` by the command line's emit). docs/commands.md lists the keys.
"""

from __future__ import annotations

from array import array
from typing import Any

from retention.config.baseline import Baseline
from retention.core.forecast import steady_index, trend
from retention.core.planvalues import restore_points_entry
from retention.core.policy.loader import PolicySet
from retention.forecast.forecaster import ASSUMPTIONS, ClusterOutlook, Forecast, Outlook


def forecast_document(
    forecast: Forecast,
    current: PolicySet,
    base: Baseline | None,
    *,
    exit_code: int,
    what_if: bool,
) -> dict[str, Any]:
    """The whole forecast: when, how far, what it assumes, the fleet, every cluster."""
    document: dict[str, Any] = {
        "command": "forecast",
        "exitCode": exit_code,
        "evaluatedAt": forecast.evaluated_at,
        "whatIf": what_if,
        "days": forecast.days,
        "stepSeconds": int(forecast.step.total_seconds()),
        "assumptions": list(ASSUMPTIONS),
        "currentPolicies": sorted(p.name for p in current),
        "fleet": _fleet(forecast, forecast.counts, forecast.storage),
        "clusters": [cluster_entry(forecast, c) for c in forecast.clusters],
        "errors": forecast.errors,
    }
    if base is not None:
        document["base"] = {
            **base.entry(),
            "fleet": _fleet(forecast, forecast.base_counts, forecast.base_storage),
        }
    return document


def _fleet(forecast: Forecast, counts: array[int], storage: array[int]) -> dict[str, Any]:
    series = [
        {"at": forecast.at(k), "count": counts[k], "storageBytes": storage[k]}
        for k in range(len(counts))
    ]
    index = steady_index(counts)
    steady = None
    if index is not None:  # the count the last step ends with, and the day it is reached
        steady = {
            "at": forecast.at(index),
            "count": counts[-1],
            "storageBytes": storage[-1],
            "trend": trend(counts),
        }
    # Today's snapshots past their expiry: the series leaves them out, a plan counts them.
    return {"series": series, "steady": steady, "awaitingDeletion": forecast.awaiting_deletion}


def cluster_entry(forecast: Forecast, cluster: ClusterOutlook) -> dict[str, Any]:
    """One cluster: its cadence and its future under the current (and base) policies."""
    t, cadence = cluster.target, cluster.cadence
    entry: dict[str, Any] = {
        "projectId": t.project_id,
        "clusterId": t.cluster_id,
        "name": t.name,
        "kind": t.kind,
        "cadence": {
            "source": cadence.source,
            "intervalSeconds": (
                None if cadence.interval is None else int(cadence.interval.total_seconds())
            ),
            "sizeBytes": cadence.size_bytes,
            "growthPerDay": cadence.growth_per_day,
        },
        "awaitingDeletion": cluster.current.awaiting_deletion,
        **outlook_entry(forecast, cluster.current),
    }
    if cluster.base is not None:
        entry["base"] = outlook_entry(forecast, cluster.base)
    return entry


def outlook_entry(forecast: Forecast, outlook: Outlook) -> dict[str, Any]:
    """One side of a cluster: its policies, series, steady state and final restore points."""
    steady = outlook.steady
    return {
        "policies": outlook.policies,
        "series": [
            {
                "at": forecast.at(k),
                "count": outlook.counts[k],
                "storageBytes": outlook.storage[k],
                "oldest": outlook.oldest_at(k),
            }
            for k in range(len(outlook.counts))
        ],
        "steady": {
            "at": forecast.at(steady),
            "count": outlook.counts[-1],
            "storageBytes": outlook.storage[-1],
            "trend": outlook.trend,
        },
        "restorePoints": (
            restore_points_entry(outlook.ladder) if outlook.ladder is not None else None
        ),
    }
