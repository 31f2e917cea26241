"""Sharding a fleet across several processes (a Kubernetes Indexed Job, say).

A cluster belongs to shard ``sha256(cluster id) mod count``: stable across runs, machines
and Python versions (Python's own hash() is salted per process), so each cluster is planned
and changed by exactly one shard, always the same one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from retention.errors import UsageError


@dataclass(frozen=True)
class Shard:
    """This process's part of the fleet: shard ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise UsageError(
                f"shard {self.index}/{self.count}: the index must be 0 to count-1 and the "
                "count at least 1 (e.g. --shard 0/4 ... --shard 3/4)"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``INDEX/COUNT``, e.g. ``2/4``."""
        index, sep, count = text.partition("/")
        if not sep or not index.strip().isdigit() or not count.strip().isdigit():
            raise UsageError(f"--shard {text!r}: use INDEX/COUNT, e.g. --shard 0/4")
        return cls(int(index), int(count))

    def owns(self, cluster_id: str) -> bool:
        """True when the cluster (or config server) with this id is this shard's."""
        digest = hashlib.sha256(cluster_id.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index

    @property
    def label(self) -> str:
        """``2/4``."""
        return f"{self.index}/{self.count}"


def choose_shard(shard: str | None, shard_count: int | None, env_index: str | None) -> Shard | None:
    """The shard from --shard, or from --shard-count and JOB_COMPLETION_INDEX; None: all."""
    if shard is not None:
        if shard_count is not None:
            raise UsageError("give --shard INDEX/COUNT or --shard-count N, not both")
        return Shard.parse(shard)
    if shard_count is None:
        return None
    if env_index is None or not env_index.strip().isdigit():
        raise UsageError(
            "--shard-count needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job) "
            "or use --shard INDEX/COUNT"
        )
    return Shard(int(env_index), shard_count)
