"""Tests of retention.core.timestamps: parsing, formatting and rounding of API timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from retention.core.timestamps import (
    TIMESTAMP_FORMAT,
    ceil_to_second,
    format_timestamp,
    parse_timestamp,
    to_utc,
)

PLUS_TWO = timezone(timedelta(hours=2))
MINUS_FIVE = timezone(timedelta(hours=-5))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T10:15:30Z", datetime(2026, 3, 1, 10, 15, 30, tzinfo=UTC)),
        ("2026-03-01T10:15:30z", datetime(2026, 3, 1, 10, 15, 30, tzinfo=UTC)),
        ("2026-03-01T02:00:00+02:00", datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC)),
        ("2026-02-28T22:30:00-05:00", datetime(2026, 3, 1, 3, 30, 0, tzinfo=UTC)),
        ("2026-03-01T10:15:30.250Z", datetime(2026, 3, 1, 10, 15, 30, 250000, tzinfo=UTC)),
        (
            "2026-03-01T12:15:30.123456+02:00",
            datetime(2026, 3, 1, 10, 15, 30, 123456, tzinfo=UTC),
        ),
        ("2026-03-01T10:15:30", datetime(2026, 3, 1, 10, 15, 30, tzinfo=UTC)),
        ("  2026-03-01T10:15:30Z  ", datetime(2026, 3, 1, 10, 15, 30, tzinfo=UTC)),
    ],
    ids=[
        "Z",
        "lowercase-z",
        "plus-0200",
        "minus-0500",
        "fraction-Z",
        "fraction-offset",
        "naive",
        "surrounding-whitespace",
    ],
)
def test_parse_timestamp_returns_aware_utc(text: str, expected: datetime) -> None:
    """parse_timestamp turns Z, lowercase z, offset, fractional and naive forms into aware UTC."""
    parsed = parse_timestamp(text)

    assert parsed == expected
    assert parsed.tzinfo is UTC
    assert parsed.utcoffset() == timedelta(0)


def test_parse_timestamp_keeps_wall_clock_for_naive_text() -> None:
    """A naive timestamp is taken as UTC, not shifted by the local time zone."""
    parsed = parse_timestamp("2026-07-04T23:59:59")

    assert (parsed.year, parsed.month, parsed.day) == (2026, 7, 4)
    assert (parsed.hour, parsed.minute, parsed.second) == (23, 59, 59)
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    ["not a date", "", "Z", "2026-13-01T00:00:00Z", "2026-03-01T25:00:00Z", "yesterday"],
)
def test_parse_timestamp_rejects_garbage_naming_the_text(text: str) -> None:
    """Text that is not an ISO 8601 timestamp raises ValueError whose message quotes the text."""
    with pytest.raises(ValueError, match="not an ISO 8601 timestamp") as excinfo:
        parse_timestamp(text)

    assert repr(text) in str(excinfo.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 3, 1, 10, 15, 30, tzinfo=UTC), "2026-03-01T10:15:30Z"),
        (datetime(2026, 3, 1, 10, 15, 30, 999999, tzinfo=UTC), "2026-03-01T10:15:30Z"),
        (datetime(2026, 3, 1, 2, 0, 0, tzinfo=PLUS_TWO), "2026-03-01T00:00:00Z"),
        (datetime(2026, 2, 28, 22, 30, 0, tzinfo=MINUS_FIVE), "2026-03-01T03:30:00Z"),
        (datetime(2026, 3, 1, 10, 15, 30), "2026-03-01T10:15:30Z"),
        (datetime(2026, 1, 1, 1, 0, 0, 500000, tzinfo=PLUS_TWO), "2025-12-31T23:00:00Z"),
    ],
    ids=["utc", "sub-second-dropped", "plus-0200", "minus-0500", "naive", "offset-and-fraction"],
)
def test_format_timestamp_writes_utc_whole_seconds(value: datetime, expected: str) -> None:
    """format_timestamp writes YYYY-MM-DDTHH:MM:SSZ in UTC, truncating sub-second digits."""
    assert format_timestamp(value) == expected


def test_format_timestamp_round_trips_through_parse() -> None:
    """Formatting a parsed whole-second timestamp gives back the original UTC text."""
    text = "2026-03-01T10:15:30Z"

    assert format_timestamp(parse_timestamp(text)) == text
    assert TIMESTAMP_FORMAT == "%Y-%m-%dT%H:%M:%SZ"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 3, 1, 10, 0, 0), datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)),
        (datetime(2026, 3, 1, 12, 0, 0, tzinfo=PLUS_TWO), datetime(2026, 3, 1, 10, 0, tzinfo=UTC)),
        (datetime(2026, 3, 1, 5, 0, 0, tzinfo=MINUS_FIVE), datetime(2026, 3, 1, 10, 0, tzinfo=UTC)),
        (datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC), datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)),
    ],
    ids=["naive", "plus-0200", "minus-0500", "already-utc"],
)
def test_to_utc_converts_to_aware_utc(value: datetime, expected: datetime) -> None:
    """to_utc labels naive values as UTC and converts offset values to the same instant in UTC."""
    converted = to_utc(value)

    assert converted == expected
    assert converted.tzinfo is UTC
    assert (converted.hour, converted.minute) == (expected.hour, expected.minute)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC), datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)),
        (
            datetime(2026, 3, 1, 10, 0, 0, 1, tzinfo=UTC),
            datetime(2026, 3, 1, 10, 0, 1, tzinfo=UTC),
        ),
        (
            datetime(2026, 3, 1, 10, 0, 0, 999999, tzinfo=UTC),
            datetime(2026, 3, 1, 10, 0, 1, tzinfo=UTC),
        ),
        (
            datetime(2026, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
            datetime(2027, 1, 1, 0, 0, 0, tzinfo=UTC),
        ),
        (datetime(2026, 3, 1, 10, 0, 0, 1), datetime(2026, 3, 1, 10, 0, 1)),
    ],
    ids=["whole-second", "one-microsecond", "almost-next", "year-rollover", "naive"],
)
def test_ceil_to_second_rounds_up_to_whole_second(value: datetime, expected: datetime) -> None:
    """ceil_to_second leaves whole seconds alone and rounds any fraction up to the next second."""
    rounded = ceil_to_second(value)

    assert rounded == expected
    assert rounded.microsecond == 0
    assert rounded.tzinfo == value.tzinfo


def test_ceil_to_second_then_format_is_never_earlier() -> None:
    """A ceiled then formatted expiry is not earlier than the intended instant."""
    intended = datetime(2026, 3, 1, 10, 0, 0, 1, tzinfo=UTC)

    text = format_timestamp(ceil_to_second(intended))

    assert text == "2026-03-01T10:00:01Z"
    assert parse_timestamp(text) >= intended
