"""Reading plan files back: entry by entry in the layout PlanBuilder writes, and whole when
someone re-saved the plan in another layout."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retention.api.models import SnapshotPatch
from retention.plan.decide import decide
from retention.plan.model import ClusterPlan, Decision, SnapshotView, Target
from retention.plan.planfile import (
    LISTS,
    PlanBuilder,
    decision_record,
    encode_line,
    read_entries,
    read_head,
)
from retention.policy.engine import KeepSpec
from retention.timestamps import format_timestamp
from tests.planning import TestPolicy

GOLDEN = (
    Path(__file__).parent / "scenarios" / "first_run_held_by_safety_gates" / "expected.plan.json"
)


def resaved(tmp_path: Path, **dump: object) -> Path:
    """The golden plan re-saved through json.dumps with the given options."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(json.loads(GOLDEN.read_text()), **dump) + "\n")  # type: ignore[arg-type]
    return path


def test_written_layout_puts_each_entry_on_a_line_of_its_own() -> None:
    """The lists hold one entry a line, so grep and diff see one change a line."""
    lines = GOLDEN.read_text().splitlines()
    held = json.loads(GOLDEN.read_text())["held"]

    entry_lines = [line for line in lines if line.startswith('    {"projectId":')]

    assert len(held) > 1
    assert [json.loads(line.rstrip(",")) for line in entry_lines] == held


@pytest.mark.parametrize(
    "dump", [{}, {"indent": 2}, {"indent": 4}], ids=["compact", "indent2", "indent4"]
)
@pytest.mark.parametrize("name", LISTS)
def test_entries_and_head_read_the_same_whatever_the_layout(
    tmp_path: Path, name: str, dump: dict[str, object]
) -> None:
    """A plan re-saved compact or indented reads back to the same entries and head."""
    document = json.loads(GOLDEN.read_text())
    path = resaved(tmp_path, **dump)

    assert list(read_entries(path, name)) == document[name]
    assert list(read_entries(GOLDEN, name)) == document[name]
    assert read_head(path) == {k: v for k, v in document.items() if k not in LISTS}
    assert read_head(GOLDEN) == read_head(path)


def test_a_plan_file_that_is_not_an_object_is_refused_by_name(tmp_path: Path) -> None:
    """A JSON list where a plan should be is a ValueError that says what the file holds."""
    path = tmp_path / "plan.json"
    path.write_text("[1, 2]\n")

    with pytest.raises(ValueError, match="holds a JSON list, not a plan object"):
        read_head(path)


@given(
    st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    )
)
def test_records_write_timestamps_exactly_as_format_timestamp(value: datetime) -> None:
    """A UTC datetime in a record is written as the API writes it, sub-seconds dropped."""
    assert encode_line({"t": value}) == b'{"t":"' + format_timestamp(value).encode() + b'"}\n'


def test_a_decision_in_another_zone_is_written_in_utc() -> None:
    """Datetimes in another zone (a policy's horizon, say) reach the record in UTC, so every
    timestamp in the files has the Z shape; the PATCH body is the wire form."""
    berlin = datetime(2027, 1, 1, 0, 0, 0, 500_000, tzinfo=ZoneInfo("Europe/Berlin"))
    created = datetime(2026, 11, 20, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    snapshot = SnapshotView("s1", created, True, False, None)
    patch = SnapshotPatch.expire_at(berlin)
    plan = ClusterPlan(Target("p1", "c1", "prod"))
    decision = Decision(snapshot, "kept", "extend", ["x"], ["prod"], berlin, patch)

    line = json.loads(encode_line(decision_record(plan, decision)))

    assert line["created"] == "2026-11-20T12:00:00Z"
    assert line["expiresAfter"] == "2026-12-31T23:00:00Z"
    assert line["body"] == patch.body() == {"expires": "2026-12-31T23:00:01Z"}
    assert line["observed"] == snapshot.observed() == {"doNotDelete": False, "expires": None}


def test_a_held_config_server_change_is_advisory_in_counts_lists_and_summary() -> None:
    """A config server's change that a gate also holds is counted and listed one way,
    as advisory (it is never sent), in the cluster's counts, the lists and the summary."""
    now = datetime(2026, 11, 21, tzinfo=UTC)
    snapshots = [
        SnapshotView(f"s{i}", now - timedelta(days=i + 1), True, False, now + timedelta(days=300))
        for i in range(10)
    ]
    policy = TestPolicy(keep=KeepSpec(last=1), max_expire_fraction=0.5)
    target = Target("p1", "h1", "cfg0", "config-server")
    plan = decide(target, snapshots, [policy], [], now=now, lease_for=timedelta(days=1))
    builder = PlanBuilder(now, now, "https://om.test/api/public/v1.0", [])
    builder.add(plan)

    document = builder.document()

    assert plan.holds, "the fraction gate holds the config server's destructive changes"
    assert document["clusters"][0]["counts"]["action:advisory"] == 9
    assert "action:held" not in document["clusters"][0]["counts"]
    assert document["summary"]["byAction"] == {"advisory": 9}
    assert (len(document["advisory"]), document["held"]) == (9, [])
