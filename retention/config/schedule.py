"""Warnings about the job's ``schedule``: the lease it gives kept snapshots."""

from __future__ import annotations

from datetime import datetime, timedelta

from retention.core.horizon import lease

SHORT_LEASE = timedelta(hours=1)


def schedule_warnings(schedule: str | None, now: datetime, minimum: timedelta) -> list[str]:
    """A schedule so frequent that the lease of kept snapshots (the time to the job's
    second-next run, at least ``minimum``: lease_minimum) is under an hour: one missed run
    or a slow one and the service may delete a snapshot a rule keeps, because its expiry
    was only that far ahead."""
    if schedule is None:
        return []
    lease_for = lease(schedule, now, minimum)
    if lease_for >= SHORT_LEASE:
        return []
    return [
        f"schedule {schedule!r} gives kept snapshots a lease of only "
        f"{int(lease_for.total_seconds())} s (the time to the second-next run): a run that "
        "is missed or late lets the service delete what a rule keeps. Run the job at most "
        'hourly, e.g. "0 3 * * *" (daily) or "0 * * * *" (hourly), or raise lease_minimum'
    ]
