"""Snapshot schedules in the simulator: the body of ``GET /groups/{PROJECT-ID}/backupConfigs/
{CLUSTER-ID}/snapshotSchedule``, and the snapshots a schedule takes as the clock moves.

What the real service documents (tests/fixtures/real/SOURCES.md): a snapshot every
``snapshotIntervalHours`` (6, 8, 12 or 24) counted from the reference time
(``referenceHourOfDay``:``referenceMinuteOfHour``, always stored in UTC); ordinary snapshots
kept ``snapshotRetentionDays``, daily ones ``dailySnapshotRetentionDays``, weekly ones
``weeklySnapshotRetentionWeeks``, monthly ones ``monthlySnapshotRetentionMonths``; a
retention of 0 turns that kind off. The defaults are 6 hours, 2 days, 7 days, 4 weeks and 13
months.

What it does not document, and the simulator's choice: which snapshot becomes the daily,
weekly or monthly one. Here, as in the generated histories (fleet.py), the snapshot taken at
the reference time of day is the daily one; on a Sunday (the documented default
``fullIncrementalDayOfWeek``) it is also the weekly one, and on the 1st of a month the
monthly one. A snapshot expires at its creation plus the longest retention among its kinds.

Taking (store.take_due). A cluster whose schedule has ``taking`` on gets, whenever the
simulator looks at it, the snapshots its schedule would have taken since ``taken_until``
(the fleet's build time at first): complete, with the expiry above, until ``stops_at`` when
a fleet file says when its backups stop (``stopsInDays``: the agent stops, the schedule
stays). A clock moved back takes nothing and forgets nothing, so moving it forward again
never takes a tick twice.
"""

from __future__ import annotations

import calendar
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

HOUR = 3600
SUNDAY = 6  # datetime.weekday()


def add_months(when: datetime, months: int) -> datetime:
    """``when`` plus calendar months, the day clamped to the length of the target month."""
    year, month0 = divmod(when.year * 12 + when.month - 1 + months, 12)
    day = min(when.day, calendar.monthrange(year, month0 + 1)[1])
    return when.replace(year=year, month=month0 + 1, day=day)


@dataclass
class SimSchedule:
    """A cluster's snapshot schedule; field defaults are the service's."""

    interval_hours: int = 6
    retention_days: int = 2
    daily_days: int = 7
    weekly_weeks: int = 4
    monthly_months: int = 13
    point_in_time_hours: int = 24
    reference_hour: int = 0
    reference_minute: int = 0
    checkpoint_minutes: int | None = None  # sharded clusters only, as the docs say
    taking: bool = False
    taken_until: datetime | None = None
    stops_at: datetime | None = None  # fleet files' stopsInDays: the last tick it takes

    @property
    def _anchor(self) -> int:
        """Seconds after midnight UTC of the reference time."""
        return self.reference_hour * HOUR + self.reference_minute * 60

    def ticks(self, after: datetime, until: datetime) -> list[datetime]:
        """The creation times the schedule gives in (after, until], oldest first."""
        step, anchor = self.interval_hours * HOUR, self._anchor
        first = anchor + ((int(after.timestamp()) - anchor) // step + 1) * step
        last = int(until.timestamp())
        return [datetime.fromtimestamp(epoch, UTC) for epoch in range(first, last + 1, step)]

    def expires(self, created: datetime) -> datetime:
        """The expiry the service gives a snapshot of this schedule created then."""
        keep = created + timedelta(days=self.retention_days)
        seconds = created.hour * HOUR + created.minute * 60 + created.second
        if seconds != self._anchor:
            return keep
        if self.daily_days:
            keep = max(keep, created + timedelta(days=self.daily_days))
        if self.weekly_weeks and created.weekday() == SUNDAY:
            keep = max(keep, created + timedelta(weeks=self.weekly_weeks))
        if self.monthly_months and created.day == 1:
            keep = max(keep, add_months(created, self.monthly_months))
        return keep


def schedule_json(schedule: SimSchedule, group_id: str, cluster_id: str, links: object) -> str:
    """The schedule resource as the service answers it (keys in the documentation's order)."""
    body: dict[str, object] = {"clusterId": cluster_id}
    if schedule.checkpoint_minutes is not None:
        body["clusterCheckpointIntervalMin"] = schedule.checkpoint_minutes
    body.update(
        {
            "dailySnapshotRetentionDays": schedule.daily_days,
            "groupId": group_id,
            "links": links,
            "monthlySnapshotRetentionMonths": schedule.monthly_months,
            "pointInTimeWindowHours": schedule.point_in_time_hours,
            "referenceHourOfDay": schedule.reference_hour,
            "referenceMinuteOfHour": schedule.reference_minute,
            "referenceTimeZoneOffset": "+0000",
            "snapshotIntervalHours": schedule.interval_hours,
            "snapshotRetentionDays": schedule.retention_days,
            "weeklySnapshotRetentionWeeks": schedule.weekly_weeks,
        }
    )
    return json.dumps(body)
