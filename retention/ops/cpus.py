"""The CPUs this process may use, and so how many processes a plan decides on."""

from __future__ import annotations

import math
import os
from pathlib import Path

# The most planning workers a plan starts unless api.workers says more: eight keep up with
# the walk's default eight connections, at about 40 MiB each.
DEFAULT_WORKERS_MAX = 8


def planning_workers(configured: int | None) -> int:
    """The processes a plan decides on: ``configured`` (api.workers), else the CPUs this
    process may use (its affinity and the container's CPU limit), at most
    DEFAULT_WORKERS_MAX: 1 on a one-CPU pod, and not a hundred interpreters on an unlimited
    big host."""
    if configured is not None:
        return configured
    return min(available_cpus(), DEFAULT_WORKERS_MAX)


def available_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may use: those it may run on, capped by the container's CPU
    limit (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``) rounded up; at least 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limit = _cgroup_limit(cgroup)
    return max(1, min(cpus or 1, limit or cpus or 1))


def _cgroup_limit(cgroup: Path) -> int | None:
    """The CPU limit of the cgroup in whole CPUs (rounded up); None when there is none."""
    try:
        if (v2 := cgroup / "cpu.max").is_file():
            quota, _, period = v2.read_text().strip().partition(" ")
            if quota == "max":
                return None
            return math.ceil(int(quota) / int(period or "100000"))
        v1 = cgroup / "cpu"
        quota_us = int((v1 / "cpu.cfs_quota_us").read_text())
        period_us = int((v1 / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return math.ceil(quota_us / period_us) if quota_us > 0 and period_us > 0 else None
