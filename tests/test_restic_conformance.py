"""restic's own `forget` test vectors (tests/conformance/restic, BSD-2-Clause, see NOTICE):
our engine must keep exactly what restic keeps, with the same reasons and counters."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from retention.core.policy.duration import RetentionDuration
from retention.core.policy.engine import evaluate
from retention.core.policy.spec import Item, KeepSpec
from retention.core.timestamps import parse_timestamp

DATA = Path(__file__).parent / "conformance" / "restic"
CASES: list[dict[str, Any]] = json.loads((DATA / "cases.json").read_text())
SNAPSHOTS = [
    Item(s["id"], parse_timestamp(s["time"]), frozenset(s["tags"]))
    for s in json.loads((DATA / "snapshots.json").read_text())
]
# Any time after the newest snapshot gives the same results (README: "now").
LATER = datetime(2026, 11, 21, tzinfo=UTC)


def spec_of(policy: dict[str, Any]) -> KeepSpec:
    """The engine's KeepSpec for a case's policy."""
    options: dict[str, Any] = {}
    for key, value in policy.items():
        if key == "tags":
            options["tags"] = tuple(tuple(t) for t in value)
        elif key.startswith("within"):
            options[key] = RetentionDuration.parse(value)
        else:
            options[key] = value
    return KeepSpec(**options)


def test_all_forty_cases_are_vendored() -> None:
    """The conformance data holds the 40 cases and 103 snapshots restic's test uses."""
    assert [c["index"] for c in CASES] == list(range(40))
    assert len(SNAPSHOTS) == 103


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_restic_case(case: dict[str, Any]) -> None:
    """The kept snapshots, their order, reasons and counters equal restic's golden file."""
    # A case's "now" is restic's `latest` (the newest snapshot before the wall clock), not a
    # wall-clock time: any now after it gives the same answer.
    if "now" in case:
        assert parse_timestamp(case["now"]) == max(s.time for s in SNAPSHOTS)

    result = evaluate(SNAPSHOTS, spec_of(case["policy"]), LATER)

    assert [item.id for item in result.keep] == case["expected_keep"]
    got = [
        {
            "id": item.id,
            "matches": result.reasons[item.id].texts,
            "counters": result.reasons[item.id].counters,
        }
        for item in result.keep
    ]
    assert got == case["expected_reasons"]
    kept = {item.id for item in result.keep}
    assert [i.id for i in result.remove] == [
        i.id for i in sorted(SNAPSHOTS, key=lambda i: i.time, reverse=True) if i.id not in kept
    ]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_cases_hold_in_zones_the_readme_names_safe(zone: str) -> None:
    """The README notes all 40 cases also pass with buckets in Europe/Berlin; so must ours."""
    for case in CASES:
        result = evaluate(SNAPSHOTS, spec_of(case["policy"]), LATER, ZoneInfo(zone))
        assert [i.id for i in result.keep] == case["expected_keep"], case["name"]
