"""Hold records: the entries of ``protect.ids`` written as a mapping, ``{id, reason,
ticket, until}``, beside plain ids.

A record protects its snapshot until its end: ``until`` is a day (held to the end of that
day in UTC, whatever the policy's time zone, so one date is one instant in every policy and
report) or a timestamp with its zone; without it the record holds until it is removed. The
reason is required: a hold nobody can explain is one nobody dares to lift, and plain ids
remain for holds without one. The engine's form of a record is ``HoldRecordTerms``;
``protecting`` and ``ended`` say which entries of ``ids`` protect at a time, and which have
ended.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    Strict,
    StringConstraints,
    TypeAdapter,
    WithJsonSchema,
    WrapValidator,
)

from retention.core.timestamps import LATEST, format_timestamp
from retention.core.wording import show_value

_DAY_PATTERN = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_UNTIL_HINT = (
    "give a day such as 2027-01-31 (the hold ends when that day ends in UTC) or a UTC "
    "timestamp such as 2027-01-31T18:00:00Z"
)


def _until(value: object) -> date | datetime:
    """The end of a hold: a day (a date), or an instant (an aware datetime in UTC)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            if _DAY_PATTERN.match(text):
                return date.fromisoformat(text)
            value = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
        except ValueError:
            raise ValueError(f"{value!r} is not a date or a timestamp: {_UNTIL_HINT}") from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(
                f"{value.isoformat(sep=' ')} has no time zone: end it with Z for UTC "
                "(2027-01-31T18:00:00Z), or give just the day"
            )
        return value.astimezone(UTC)
    if isinstance(value, date):
        return value
    raise ValueError(f"{show_value(value)} is not a date or a timestamp: {_UNTIL_HINT}")


def until_text(value: date | datetime) -> str:
    """The end of a hold as policies, plans and reports write it: the day, or the UTC
    timestamp."""
    return format_timestamp(value) if isinstance(value, datetime) else value.isoformat()


def until_instant(value: date | datetime) -> datetime:
    """The instant a hold ends: a timestamp as it is; a day at the midnight (UTC) after it,
    so the whole day is held."""
    if isinstance(value, datetime):
        return value
    try:
        return datetime.combine(value + timedelta(days=1), time(), UTC)
    except OverflowError:
        return LATEST


Until = Annotated[
    date | datetime,
    PlainValidator(_until),
    PlainSerializer(until_text, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date"},
                {"type": "string", "format": "date-time"},
            ],
            "examples": ["2027-01-31", "2027-01-31T18:00:00Z"],
        }
    ),
]
# Strict: YAML gives text as text; `ticket: 1234` is a number and must be quoted.
Text = Annotated[str, Strict(), StringConstraints(strip_whitespace=True, min_length=1)]


class HoldRecord(BaseModel):
    """A snapshot held by id, with why, under which ticket and until when: an entry of
    ``protect.ids`` written as a mapping. Past ``until`` it no longer protects."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="The snapshot id, as in a plain entry of ids.")
    reason: Text = Field(
        description="Why the snapshot is held (required): shown in plans, reports and "
        "`retention explain`."
    )
    ticket: Text | None = Field(None, description="The ticket or case behind the hold.")
    until: Until | None = Field(
        None,
        description="When the hold ends: a day (2027-01-31: to the end of that day, UTC) or "
        "a UTC timestamp (2027-01-31T18:00:00Z). Omitted: it holds until it is removed.",
    )

    def to_engine(self) -> HoldRecordTerms:
        """The engine's form of this record."""
        until = self.until
        return HoldRecordTerms(
            self.id,
            self.reason,
            self.ticket,
            None if until is None else until_text(until),
            None if until is None else until_instant(until),
        )


_PLAIN_ID: TypeAdapter[str] = TypeAdapter(str)


def _id_or_record(value: object, _: object) -> str | HoldRecord:
    # A mapping is a record, anything else a plain id: a problem reads
    # "protect.ids[2].until: ..." once, not once per member of the union.
    if isinstance(value, dict):
        return HoldRecord.model_validate(value)
    return _PLAIN_ID.validate_python(value)


_ID_ENTRIES: TypeAdapter[list[str | HoldRecord]] = TypeAdapter(
    list[Annotated[str | HoldRecord, WrapValidator(_id_or_record)]]
)


def id_entries(value: object) -> object:
    """Each entry of ``ids`` as a plain id or a HoldRecord (anything else is left for the
    field's own type to refuse in its words)."""
    if not isinstance(value, list):
        return value
    return _ID_ENTRIES.validate_python(value)


@dataclass(frozen=True, slots=True)
class HoldRecordTerms:
    """A snapshot held by id with a reason, maybe a ticket, and maybe an end: it protects
    while the time decided for is before ``ends`` (None: for good). ``until`` is the end as
    the policy writes it ("2027-01-31" for a whole day, or a UTC timestamp)."""

    id: str
    reason: str
    ticket: str | None = None
    until: str | None = None
    ends: datetime | None = None

    def in_force(self, now: datetime) -> bool:
        """True while the hold protects: ``now`` is before its end, or it has none."""
        return self.ends is None or now < self.ends

    @property
    def words(self) -> str:
        """The hold in words: ``legal hold (ticket LEGAL-42, until 2027-01-31)``."""
        details = [f"ticket {self.ticket}"] if self.ticket else []
        details += [f"until {self.until}"] if self.until else []
        return f"{self.reason} ({', '.join(details)})" if details else self.reason

    @property
    def ended_words(self) -> str:
        """An ended hold in words: ``hold ended 2027-01-31: legal hold (ticket LEGAL-42)``."""
        ticket = f" (ticket {self.ticket})" if self.ticket else ""
        return f"hold ended {self.until}: {self.reason}{ticket}"


# An entry of ``ids``: a plain id (protected for good) or a hold record.
IdEntry = str | HoldRecordTerms


def entry_id(entry: IdEntry) -> str:
    """The snapshot id an entry of ``ids`` names."""
    return entry if isinstance(entry, str) else entry.id


def protecting(ids: Collection[IdEntry], now: datetime) -> dict[str, IdEntry]:
    """The entry that protects each id of ``ids`` at ``now``: a plain id first, else the
    record in force that ends last (one without an end before all)."""
    found: dict[str, IdEntry] = {}
    for entry in ids:
        if isinstance(entry, HoldRecordTerms) and not entry.in_force(now):
            continue
        key = entry_id(entry)
        if key not in found or _lasts_longer(entry, found[key]):
            found[key] = entry
    return found


def ended(ids: Collection[IdEntry], now: datetime) -> dict[str, HoldRecordTerms]:
    """The hold records of ``ids`` that have ended at ``now``, by id (the one that ended
    last), for the ids no entry protects any more."""
    protected = protecting(ids, now)
    found: dict[str, HoldRecordTerms] = {}
    for entry in ids:
        if not isinstance(entry, HoldRecordTerms) or entry.ends is None or entry.id in protected:
            continue
        if entry.id not in found or _lasts_longer(entry, found[entry.id]):
            found[entry.id] = entry
    return found


def _lasts_longer(entry: IdEntry, other: IdEntry) -> bool:
    if isinstance(other, str):
        return False
    if isinstance(entry, str) or entry.ends is None:
        return True
    return other.ends is not None and entry.ends > other.ends
