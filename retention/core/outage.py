"""Outage tolerance: how long a stopped job, and a stopped service whose grooming catches up
when it is back, lose no snapshot a policy keeps. After a plan is applied no kept snapshot
expires within the lease (retention.core.horizon), so the lease is the tolerance; a cluster
whose newest kept snapshot was found expiring sooner than the last run left it (shortened by
hand) is named, since it is the restore point an outage would cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from retention.core.model import ClusterDecisions
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted, printable

KEPT = ("kept", "protected", "manual-hold")


def span_words(seconds: float) -> str:
    """A lease in words, to the hour: "7 days", "1 day and 15 hours", "36 hours" below two
    days."""
    hours = int(seconds // 3600)
    if hours < 48:
        return counted(hours, "hour")
    days, rest = divmod(hours, 24)
    return counted(days, "day") + (f" and {counted(rest, 'hour')}" if rest else "")


def tolerance_text(lease_seconds: float) -> str:
    """The outage a plan's fleet survives once it is applied, as summaries say it."""
    return f"a stopped job and service lose no kept snapshot for {span_words(lease_seconds)}"


def tolerance_sentence(lease_seconds: float, *, applied: bool) -> str:
    """The summaries' line (terminal, report.md, notices): the tolerance, and that it
    holds once the plan is applied when nothing was."""
    when = "" if applied else " once the plan is applied"
    return f"Outage tolerance: {tolerance_text(lease_seconds)}{when} (at least lease_minimum)."


@dataclass(frozen=True)
class LastRun:
    """The job's last scheduled run before a plan, and the least expiry it left every
    snapshot it kept (its time plus its lease)."""

    at: datetime
    left_until: datetime
    lease_seconds: float  # the plan's lease: the outage tolerance


def exposed(decided: ClusterDecisions, last: LastRun) -> str | None:
    """Why the cluster's newest kept snapshot was found exposed to an outage, or None.

    A snapshot taken before the job's last scheduled run was seen by it, and left at least
    ``last.left_until`` ahead if kept; found nearer, someone shortened it by hand (or that
    run did not apply), and an outage would cost this restore point. Newer snapshots still
    carry the service's expiry until this run extends them, which is no news. Config
    servers are passed over: their changes are never sent, as the plan's notice says.
    """
    if decided.target.kind != "cluster":
        return None
    older = [d for d in decided.decisions if d.state in KEPT and d.snapshot.created < last.at]
    if not older:
        return None
    newest = max(older, key=lambda d: d.snapshot.created)
    expires = None if newest.snapshot.do_not_delete else newest.snapshot.expires
    if expires is None or expires >= last.left_until:
        return None
    return printable(
        f"{decided.target.name}: its newest kept snapshot from before the last scheduled run, "
        f"{newest.snapshot.id}, expires at {format_timestamp(expires)}, sooner than that run "
        f"left it: an outage of {span_words(last.lease_seconds)} would cost it (shortened by "
        "hand, or that run did not happen or apply); this plan extends it"
    )
