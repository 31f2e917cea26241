"""Metrics of a run for batch monitoring, through prometheus_client: a node-exporter
textfile (``--metrics-file``) or a Pushgateway (``--pushgateway``).

The last success timestamp outlives failed runs, because "no success for two days" is the
alert people set on batch jobs: the textfile carries it over from the previous file, and
the Pushgateway keeps it because a failed run pushes (pushadd) without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, pushadd_to_gateway, write_to_textfile

SUCCESS = "retention_last_success_timestamp_seconds"
SUCCESSFUL_EXITS = frozenset({0, 3})  # 3: done, and a gate held changes for a human


@dataclass(frozen=True)
class NewestRestorable:
    """How old one cluster's newest restorable snapshot is, and how old it may be."""

    project: str  # the project id
    cluster: str  # the cluster's name
    age_seconds: int | None  # None: no restorable snapshot
    within_seconds: int


@dataclass
class RunMetrics:
    """What one run did, in numbers."""

    started: datetime
    finished: datetime
    exit_code: int
    snapshots: int = 0
    changes: dict[str, int] = field(default_factory=dict)  # by action, held and advisory too
    outcomes: dict[str, int] = field(default_factory=dict)  # by outcome (apply or undo)
    clusters_held: int = 0
    approved: int = 0  # held changes an apply --approve let through, applied
    bytes_given_back: int = 0
    bytes_held: int = 0
    clusters_unmanaged: int = 0
    unused_policies: int = 0
    errors: int = 0
    api_requests: int = 0
    api_retries: int = 0
    notices_sent: int = 0  # notify: URLs that took the run's notice
    notices_failed: int = 0  # notify: URLs the notice could not be sent to
    clusters_stale: int = 0  # clusters whose backups stopped
    # The plan's lease: how long a stopped job and service lose no kept snapshot.
    outage_tolerance_seconds: float = 0.0
    # Per checked cluster (plan.json's newestRestorable): its project id and name, the age
    # of its newest restorable snapshot (None: it has none) and the age expected at most.
    freshness: list[NewestRestorable] = field(default_factory=list)
    shard: str | None = None
    # What the last plan found changed outside retention, by kind (changed, deleted-early,
    # gone), and the ledger's chain head once the run was recorded (None: no ledger).
    outside_changes: dict[str, int] = field(default_factory=dict)
    ledger_head: str | None = None

    @property
    def succeeded(self) -> bool:
        """The job did its work (exit 0, or 3 with changes held for a human)."""
        return self.exit_code in SUCCESSFUL_EXITS


# The gauges of a run, in the order the textfile lists them: name, help, value.
_RUN_GAUGES: tuple[tuple[str, str, Callable[[RunMetrics], float]], ...] = (
    (
        "retention_last_run_start_timestamp_seconds",
        "When the last run started.",
        lambda m: m.started.timestamp(),
    ),
    (
        "retention_last_run_finish_timestamp_seconds",
        "When the last run ended.",
        lambda m: m.finished.timestamp(),
    ),
    (
        "retention_last_run_duration_seconds",
        "How long the last run took.",
        lambda m: (m.finished - m.started).total_seconds(),
    ),
    (
        "retention_last_run_exit_code",
        "Exit code of the last run: 0 done, 1 failures, 2 bad input, 3 held, 4 locked, "
        "5 API unreachable, 130 stopped by SIGINT, 143 stopped by SIGTERM.",
        lambda m: m.exit_code,
    ),
)
# After the last success: what the run counted.
_COUNT_GAUGES: tuple[tuple[str, str, Callable[[RunMetrics], float]], ...] = (
    ("retention_snapshots_seen", "Snapshots the last run planned.", lambda m: m.snapshots),
    (
        "retention_clusters_held",
        "Clusters whose destructive changes a gate held.",
        lambda m: m.clusters_held,
    ),
    (
        "retention_changes_approved",
        "Held changes that an apply with --approve sent and the API applied.",
        lambda m: m.approved,
    ),
    (
        "retention_bytes_given_back",
        "Storage (the parts' storageSizeBytes) of the snapshots the plan shortens or deletes.",
        lambda m: m.bytes_given_back,
    ),
    (
        "retention_bytes_held",
        "Storage of the snapshots whose destructive changes a safety gate held.",
        lambda m: m.bytes_held,
    ),
    (
        "retention_clusters_unmanaged",
        "Clusters and config servers no policy matches (never changed).",
        lambda m: m.clusters_unmanaged,
    ),
    (
        "retention_policies_unused",
        "Policies that matched no cluster or config server in the last run.",
        lambda m: m.unused_policies,
    ),
    ("retention_errors", "Walk, plan and PATCH errors of the last run.", lambda m: m.errors),
    ("retention_api_requests", "API requests of the last run.", lambda m: m.api_requests),
    ("retention_api_retries", "API retries of the last run.", lambda m: m.api_retries),
    (
        "retention_clusters_stale",
        "Clusters whose newest restorable snapshot is older than expected (backups stopped).",
        lambda m: m.clusters_stale,
    ),
    (
        "retention_outage_tolerance_seconds",
        "How long a stopped job and a stopped service lose no kept snapshot, once the last "
        "run's plan is applied: its lease (the time to the second-next run, at least "
        "lease_minimum).",
        lambda m: m.outage_tolerance_seconds,
    ),
    (
        "retention_notices_sent",
        "Notification URLs (notify: in retention.yaml) the last run's notice was sent to.",
        lambda m: m.notices_sent,
    ),
    (
        "retention_notices_failed",
        "Notification URLs the last run's notice could not be sent to.",
        lambda m: m.notices_failed,
    ),
)


def registry(m: RunMetrics, previous_success: float | None = None) -> CollectorRegistry:
    """The run's metrics; ``previous_success`` is carried when this run did not succeed."""
    reg = CollectorRegistry()
    labels = ["shard"] if m.shard else []
    values = [m.shard] if m.shard else []

    def gauge(name: str, doc: str, value: float) -> None:
        metric = Gauge(name, doc, labels, registry=reg)
        (metric.labels(*values) if labels else metric).set(value)

    for name, doc, value in _RUN_GAUGES:
        gauge(name, doc, value(m))
    success = m.finished.timestamp() if m.succeeded else previous_success
    if success is not None:
        gauge(SUCCESS, "When a run last succeeded (exit 0 or 3).", success)
    for name, doc, value in _COUNT_GAUGES:
        gauge(name, doc, value(m))
    changes = Gauge(
        "retention_changes", "Planned changes by action.", [*labels, "action"], registry=reg
    )
    for action, count in sorted(m.changes.items()):
        changes.labels(*values, action).set(count)
    outcomes = Gauge(
        "retention_outcomes", "PATCH outcomes by kind.", [*labels, "outcome"], registry=reg
    )
    for outcome, count in sorted(m.outcomes.items()):
        outcomes.labels(*values, outcome).set(count)
    outside = Gauge(
        "retention_outside_changes",
        "Changes made outside retention that the last run's plan found, by kind (changed, "
        "deleted-early, gone).",
        [*labels, "kind"],
        registry=reg,
    )
    for kind in OUTSIDE_KINDS:
        outside.labels(*values, kind).set(m.outside_changes.get(kind, 0))
    if m.ledger_head is not None:
        info = Gauge(
            "retention_ledger_info",
            "Always 1: the ledger's chain head once the last run was recorded (its head label; "
            "a copy kept outside the database anchors the chain).",
            [*labels, "head"],
            registry=reg,
        )
        info.labels(*values, m.ledger_head).set(1)
    _freshness(reg, m, labels, values)
    return reg


# Every kind is written, 0 when none was found, so that an alert rule sees the series.
OUTSIDE_KINDS = ("changed", "deleted-early", "gone")


def _freshness(reg: CollectorRegistry, m: RunMetrics, labels: list[str], values: list[str]) -> None:
    """A sample per checked cluster: the age of its newest restorable snapshot (when it has
    one), and the age expected at most (expect.newest_within, or from its cadence), so that
    one alert rule compares the two with each cluster's own threshold."""
    names = [*labels, "project", "cluster"]
    age = Gauge(
        "retention_newest_restorable_age_seconds",
        "Age of the cluster's newest restorable snapshot when the last run planned.",
        names,
        registry=reg,
    )
    expected = Gauge(
        "retention_newest_restorable_expected_seconds",
        "The age the cluster's newest restorable snapshot may reach before it is a warning.",
        names,
        registry=reg,
    )
    for f in m.freshness:
        if f.age_seconds is not None:
            age.labels(*values, f.project, f.cluster).set(f.age_seconds)
        expected.labels(*values, f.project, f.cluster).set(f.within_seconds)


def previous_success(path: Path) -> float | None:
    """The last success timestamp in an existing textfile, if any."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(rf"^{SUCCESS}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def write_textfile(path: Path, m: RunMetrics) -> None:
    """Write the node-exporter textfile (atomically, as prometheus_client does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry(m, previous_success(path)))


def push(gateway: str, m: RunMetrics) -> None:
    """Push to a Pushgateway, grouped by job (and shard); a failed run leaves the last
    success timestamp as it was."""
    grouping = {"shard": m.shard.replace("/", "-of-")} if m.shard else {}
    pushadd_to_gateway(gateway, job="retention", registry=registry(m), grouping_key=grouping)
