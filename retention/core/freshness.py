"""Backups that stopped: the age of a cluster's newest restorable snapshot against what is
expected of it. Pure: the snapshots' times, the setting and ``now`` in.

A plan walks every snapshot of every cluster, so it is the first to see that a cluster's
backups stopped. Restorable means complete, consistent and not awaiting deletion, whatever
the policies decide of it. What is expected: ``expect.newest_within`` of the cluster's
policies (the smallest when several say), or else twice the cluster's own cadence (the
lower median interval between its newest six restorable snapshots) and an hour more, so
that one late snapshot is not a warning and two missed ones are; ``DEFAULT_WITHIN`` when
there are too few snapshots to have a cadence. A cluster with no snapshot at all is not
checked unless a policy says what to expect of it: backup may simply be off for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from statistics import median_low
from typing import Literal

from retention.core.wording import counted

Source = Literal["policy", "cadence", "default"]

DEFAULT_WITHIN = timedelta(hours=36)
# How many of the newest intervals make the cadence: enough to outvote one odd gap, few
# enough to stay inside what the policies have not thinned yet (unkept snapshots live out
# their grace, so the newest ones are still at the service's own interval).
CADENCE_FROM = 5
_SLACK = timedelta(hours=1)


@dataclass(frozen=True)
class Freshness:
    """The newest restorable snapshot of a cluster and whether it is older than expected."""

    newest: datetime | None
    age_seconds: int | None
    within_seconds: int
    source: Source  # where the expectation comes from
    stale: bool

    def words(self) -> str:
        """ "newest restorable snapshot 3 days 2 h old; expected within 13 h (its cadence)"."""
        whence = {
            "policy": "expect.newest_within",
            "cadence": "twice its cadence",
            "default": "default",
        }
        expected = f"expected within {age_words(self.within_seconds)} ({whence[self.source]})"
        if self.age_seconds is None:
            return f"no restorable snapshot; {expected}"
        return f"newest restorable snapshot {age_words(self.age_seconds)} old; {expected}"


def freshness(
    restorable: Sequence[datetime],
    now: datetime,
    *,
    within: timedelta | None,
    any_snapshot: bool,
) -> Freshness | None:
    """How fresh a cluster's backups are: ``restorable`` the creation times of its
    restorable snapshots, ``within`` what its policies expect (None: from its cadence),
    ``any_snapshot`` whether it has a snapshot at all. None when it is not checked (no
    snapshot and no expectation)."""
    if not restorable and not any_snapshot and within is None:
        return None
    source: Source = "policy"
    if within is None:
        within, source = _from_cadence(restorable)
    newest = max(restorable, default=None)
    age = None if newest is None else max(0, int((now - newest).total_seconds()))
    seconds = int(within.total_seconds())
    stale = age is None or age > seconds
    return Freshness(newest, age, seconds, source, stale)


def _from_cadence(restorable: Sequence[datetime]) -> tuple[timedelta, Source]:
    newest = sorted(set(restorable), reverse=True)[: CADENCE_FROM + 1]
    gaps = [(a - b).total_seconds() for a, b in pairwise(newest)]
    if len(gaps) < 2:
        return DEFAULT_WITHIN, "default"
    return 2 * timedelta(seconds=median_low(gaps)) + _SLACK, "cadence"


def age_words(seconds: int) -> str:
    """An age for people, to the hour: "13 h", "3 days 2 h", "40 min"."""
    if seconds < 3600:
        return f"{max(1, seconds // 60)} min"
    days, rest = divmod(seconds, 86400)
    hours = rest // 3600
    if not days:
        return f"{hours} h"
    return f"{counted(days, 'day')} {hours} h" if hours else counted(days, "day")
