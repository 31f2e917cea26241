"""report.html's change rows, cluster by cluster: each cluster's rows go in a disclosure
whose summary names the cluster and counts its changes by action, so a cluster with a
hundred changes takes one line until the reader opens it. Short lists are shown open."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby

from retention.report.model import ChangeRow
from retention.report.summary import ACTIONS

# A cluster's changes are shown open up to this many rows; longer lists start closed.
OPEN_ROWS = 10


@dataclass(frozen=True)
class ClusterChanges:
    """The change rows of one cluster, in the order the plan lists them."""

    cluster: str
    cluster_id: str
    rows: list[ChangeRow] = field(default_factory=list)

    @property
    def open(self) -> bool:
        """Shown open: short enough to read in passing."""
        return len(self.rows) <= OPEN_ROWS

    @property
    def by_action(self) -> list[tuple[str, int]]:
        """(action, count) of its rows, in the report's order of actions."""
        counts = Counter(row.action for row in self.rows)
        order = [*ACTIONS, *sorted(set(counts) - set(ACTIONS))]
        return [(action, counts[action]) for action in order if counts[action]]


def by_cluster(rows: Iterable[ChangeRow]) -> list[ClusterChanges]:
    """``rows`` split where the cluster changes (they come cluster by cluster)."""
    return [
        ClusterChanges(cluster, cluster_id, list(group))
        for (cluster, cluster_id), group in groupby(rows, lambda r: (r.cluster, r.cluster_id))
    ]
