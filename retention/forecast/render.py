"""A forecast in words for a terminal: the fleet line first (today, the steady state and the
day it is reached), the base's beside it with --base, then a small table per cluster, the
largest change first, then what the forecast assumes and the errors.

Names from the service go through ``printable``: a cluster name cannot act on the terminal.
"""

from __future__ import annotations

from array import array
from datetime import timedelta

from retention.config.baseline import Baseline
from retention.core.cadence import Cadence
from retention.core.forecast import steady_index, trend
from retention.core.wording import counted, printable, size
from retention.forecast.forecaster import ASSUMPTIONS, ClusterOutlook, Forecast, Outlook


def text_lines(forecast: Forecast, base: Baseline | None, *, what_if: bool) -> list[str]:
    """The forecast for a terminal. A steady state is the count and bytes the last step
    ends with, and the day from which the count stays near it (core.forecast)."""
    when = f"{forecast.evaluated_at:%Y-%m-%d %H:%M} UTC" + (" (what-if: --at)" if what_if else "")
    lines = [
        f"Forecast from {when}, {counted(forecast.days, 'day')} ahead in steps of "
        f"{every(forecast.step)}, {counted(len(forecast.clusters), 'cluster')}:",
        "fleet: " + _fleet(forecast, forecast.counts, forecast.storage, forecast.awaiting_deletion),
    ]
    if base is not None:
        lines.append(
            f"base ({base.spec}): " + _fleet(forecast, forecast.base_counts, forecast.base_storage)
        )
        if forecast.counts:
            lines.append(
                "  the current policies keep "
                + instead(
                    (forecast.counts[-1], forecast.storage[-1]),
                    (forecast.base_counts[-1], forecast.base_storage[-1]),
                )
            )
    for cluster in forecast.clusters:
        lines += ["", *_cluster_lines(forecast, cluster)]
    lines += ["", "Assumes:", *(f"  - {a}" for a in ASSUMPTIONS)]
    if forecast.errors:
        lines += ["", "Errors (these clusters are missing from the forecast):"]
        lines += [f"  - {printable(e)}" for e in forecast.errors]
    return lines


def _fleet(forecast: Forecast, counts: array[int], storage: array[int], awaiting: int = 0) -> str:
    """ "3,012 snapshots (14.3 TiB) today -> 412 (2.1 TiB) from 2027-01-05", with today's
    snapshots past their expiry when there are ``awaiting`` ("today (and 7 awaiting
    deletion: a plan counts 3,019) -> ...")."""
    if not counts:
        return "no cluster forecast"
    aside = awaiting_words(counts[0], awaiting)
    return (
        f"{counts[0]:,} snapshots ({size(storage[0])}) today{f' ({aside})' if aside else ''} "
        f"-> {counts[-1]:,} ({size(storage[-1])}) {at_the_end(forecast, counts)}"
    )


def awaiting_words(today: int, awaiting: int) -> str:
    """What today's count leaves out: "and 7 awaiting deletion: a plan counts 2,346" (the
    snapshots whose expiry has passed, which the service still lists until its reaper
    comes); empty when there are none."""
    if not awaiting:
        return ""
    return f"and {awaiting:,} awaiting deletion: a plan counts {today + awaiting:,}"


def settles(forecast: Forecast, counts: array[int]) -> str:
    """ "from 2027-01-05" (the day the count settles), or "still growing" (or falling)."""
    going = trend(counts)
    if going == "steady":
        return f"from {forecast.at(steady_index(counts) or 0):%Y-%m-%d}"
    return "still " + going


def at_the_end(forecast: Forecast, counts: array[int]) -> str:
    """What follows a count at the end: "from 2027-01-05", or "at the end, still growing"."""
    words = settles(forecast, counts)
    return words if trend(counts) == "steady" else "at the end, " + words


def instead(mine: tuple[int, int], theirs: tuple[int, int]) -> str:
    """ "41 instead of 312 snapshots, 2.1 TiB instead of 14.3 TiB", what a verb keeps."""
    if mine == theirs:
        return f"the same: {counted(mine[0], 'snapshot')}, {size(mine[1])}"
    return (
        f"{mine[0]:,} instead of {theirs[0]:,} snapshots, "
        f"{size(mine[1])} instead of {size(theirs[1])}"
    )


def _cluster_lines(forecast: Forecast, cluster: ClusterOutlook) -> list[str]:
    t, mine = cluster.target, cluster.current
    rows = [
        ("cadence", cadence_words(cluster.cadence)),
        ("policies", policies_words(cluster, mine)),
        ("today", _today(mine)),
        (_at_end(mine), _ending(forecast, mine)),
        ("oldest at the end", _oldest(mine)),
        ("ladder at the end", mine.ladder.words() if mine.ladder else "no restore point"),
    ]
    theirs = cluster.base
    if theirs is not None:
        rows += [
            ("base policies", policies_words(cluster, theirs)),
            ("base " + _at_end(theirs), _ending(forecast, theirs)),
            ("base oldest", _oldest(theirs)),
            ("base ladder", theirs.ladder.words() if theirs.ladder else "no restore point"),
            ("difference", "keeps " + instead(_steady_pair(mine), _steady_pair(theirs))),
        ]
    width = max(len(label) for label, _ in rows) + 1
    head = f"{printable(t.name)} ({t.kind} {printable(t.cluster_id)}, project {t.project_id})"
    return [head, *(f"  {(label + ':').ljust(width)} {value}" for label, value in rows)]


def policies_words(cluster: ClusterOutlook, outlook: Outlook) -> str:
    """The policies of one side: "production", "none (unmanaged)"; a config server's say
    that they only advise: the service's own expiries alone change its snapshots."""
    if not outlook.policies:
        return "none (unmanaged)"
    names = ", ".join(outlook.policies)
    if cluster.target.kind == "config-server":
        return f"{names} (advisory: a config server's changes are never sent)"
    return names


def _today(outlook: Outlook) -> str:
    """ "28 snapshots (126.0 GiB), and 1 awaiting deletion: a plan counts 29"."""
    aside = awaiting_words(outlook.counts[0], outlook.awaiting_deletion)
    return _amount(outlook, 0) + (f", {aside}" if aside else "")


def _at_end(outlook: Outlook) -> str:
    return "steady" if outlook.trend == "steady" else "at the end"


def _ending(forecast: Forecast, outlook: Outlook) -> str:
    """ "400 snapshots (1.8 TiB) from 2027-11-04", or "..., still growing"."""
    gap = " " if outlook.trend == "steady" else ", "
    return _amount(outlook, -1) + gap + settles(forecast, outlook.counts)


def _steady_pair(outlook: Outlook) -> tuple[int, int]:
    return outlook.counts[-1], outlook.storage[-1]


def _amount(outlook: Outlook, index: int) -> str:
    return f"{counted(outlook.counts[index], 'snapshot')} ({size(outlook.storage[index])})"


def _oldest(outlook: Outlook) -> str:
    oldest = outlook.oldest_at(len(outlook.oldest) - 1)
    return "no restore point" if oldest is None else f"{oldest:%Y-%m-%d %H:%M}"


def cadence_words(cadence: Cadence) -> str:
    """ "observed, every 6 h", "stopped: takes no more", "none: no snapshot to go by"."""
    if cadence.source == "stopped":
        return "stopped: its backups stopped, it takes no more"
    if cadence.source == "none" or cadence.interval is None:
        return "none: no snapshot to go by, it takes none"
    return f"{cadence.source}, every {every(cadence.interval)}"


def every(interval: timedelta) -> str:
    """An interval for people: "6 h", "1 day", "90 min"."""
    seconds = int(interval.total_seconds())
    if seconds % 86400 == 0:
        return counted(seconds // 86400, "day")
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return f"{round(seconds / 60)} min"
