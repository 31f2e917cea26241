"""Timestamps as the API writes them: UTC, shaped ``YYYY-MM-DDTHH:MM:SSZ``.

Everything inside retention is an aware ``datetime`` in UTC. Values with an offset are
converted; values without one are taken as UTC, which is what the spec says they are.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, PlainSerializer, WithJsonSchema

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# The ends of what a timestamp can say, in whole seconds (the wire format's precision), so
# that rounding an expiry up to a second never leaves the range. A horizon beyond them (a
# restic vector keeps "9999y") stops there, and means "keep".
EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def to_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime (a naive value is taken to be UTC already)."""
    if value.tzinfo is UTC:  # what a walk decodes "Z" into: nothing to convert
        return value
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    """Format as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; sub-second digits are dropped, not rounded."""
    # isoformat is several times faster than strftime, and the simulator formats millions.
    utc = value if value.tzinfo is UTC else to_utc(value)
    return utc.isoformat(timespec="seconds")[:19] + "Z"


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (``Z``, a numeric offset, or none) into aware UTC.

    Raises ValueError with the offending text when it is not a timestamp.
    """
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        return to_utc(datetime.fromisoformat(cleaned))
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {text!r}") from None


def add_seconds(moment: datetime, seconds: float) -> datetime:
    """``moment`` plus ``seconds``, stopping at EARLIEST or LATEST instead of overflowing."""
    try:
        return moment + timedelta(seconds=seconds)
    except OverflowError:
        return LATEST if seconds > 0 else EARLIEST


def ceil_to_second(value: datetime) -> datetime:
    """Round up to the next whole second, so that a formatted expiry is never earlier than meant."""
    if value.microsecond == 0:
        return value
    return value.replace(microsecond=0) + timedelta(seconds=1)


# The pydantic field type for every timestamp in a model: parsed (by pydantic's fast parser),
# normalised to UTC, and written back in the API's exact shape.
UtcDatetime = Annotated[
    datetime,
    AfterValidator(to_utc),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]

TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


# The timestamp type of the files retention writes and reads back (plan.json,
# decisions.jsonl): written as YYYY-MM-DDTHH:MM:SSZ; read back as an aware datetime (UTC),
# and a value without a zone is refused rather than guessed, since a file may have been
# edited by hand. pydantic's own AwareDatetime checks that in Rust: an AfterValidator in
# Python cost a third of the time of reading a 600k-line decisions.jsonl.
AwareUtcDatetime = Annotated[
    AwareDatetime,
    WithJsonSchema({"type": "string", "pattern": TIMESTAMP_PATTERN}),
]


def add_date(moment: datetime, years: int, months: int, days: int, zone: tzinfo) -> datetime:
    """Go's ``time.AddDate`` on the wall clock of ``zone``: shift, then normalise overflow
    (restic's durations and the calendar rules' horizons; here, in a compiled module)."""
    local = moment.astimezone(zone)
    month_index = local.year * 12 + (local.month - 1) + years * 12 + months
    year, month = divmod(month_index, 12)
    # Day overflow rolls into the next month(s) (Go), rather than clamping to the month's end.
    day_one = date(year, month + 1, 1)
    target = day_one + timedelta(days=local.day - 1 + days)
    return local.replace(year=target.year, month=target.month, day=target.day, fold=0)
