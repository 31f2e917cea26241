"""Tests of retention.core.restore: what a journal says a run changed, and how undo puts it
back, without a server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from retention.core.restore import Restoration, State, restorations, state_after, verdict
from retention.core.runfiles import ApplyIntent, ApplyOutcome
from retention.core.snapshot import SnapshotPatch
from tests.support.journal import journal_line

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(days=300)
SOON = NOW + timedelta(hours=24)


def line(
    sid: str, observed: dict[str, Any], body: dict[str, Any], **fields: Any
) -> ApplyIntent | ApplyOutcome:
    """A results.jsonl line of an applied destructive change."""
    return journal_line(
        {
            "projectId": "p",
            "clusterId": "c",
            "clusterName": "prod",
            "snapshotId": sid,
            "action": "shorten",
            "destructive": True,
            "observed": observed,
            "planned": body,
            "body": body,
            "outcome": "applied",
            **fields,
        }
    )


def test_the_state_a_patch_leaves_follows_the_api() -> None:
    """Protecting drops the expiry; a member left out stays as it was; release sets both."""
    dated = State(False, LATER)
    assert state_after(dated, {"expires": "2026-11-22T12:00:00Z"}) == State(
        False, SOON - timedelta(hours=0)
    )
    assert state_after(dated, {"doNotDelete": True}) == State(True, None)
    assert state_after(
        State(True, None), {"doNotDelete": False, "expires": "2026-11-22T12:00:00Z"}
    ) == State(False, SOON)
    assert state_after(dated, {"doNotDelete": False}) == dated


def test_only_applied_destructive_changes_are_taken_back() -> None:
    """Extensions, protections, held, stale and failed lines are not undone."""
    observed = {"doNotDelete": False, "expires": "2027-09-17T12:00:00Z"}
    body = {"expires": "2026-11-22T12:00:00Z"}
    lines = [
        line("a", observed, body),
        line(
            "b", observed, {"expires": "2028-01-01T00:00:00Z"}, destructive=False, action="extend"
        ),
        line("c", observed, body, outcome="held"),
        line("d", observed, body, outcome="stale"),
        line("e", observed, body, outcome="failed"),
    ]

    found = restorations(lines)

    assert [r.snapshot_id for r in found] == ["a"]
    assert found[0].before == State(False, datetime(2027, 9, 17, 12, 0, tzinfo=UTC))
    assert found[0].written == State(False, SOON)
    assert found[0].cluster_name == "prod"


def test_a_snapshot_journalled_twice_goes_back_to_its_first_state() -> None:
    """If an apply journalled one snapshot twice, undo restores what was there before the
    first change and compares with what the last one wrote."""
    first = line(
        "a",
        {"doNotDelete": True, "expires": None},
        {"doNotDelete": False, "expires": "2026-12-01T00:00:00Z"},
    )
    second = line(
        "a",
        {"doNotDelete": False, "expires": "2026-12-01T00:00:00Z"},
        {"expires": "2026-11-22T12:00:00Z"},
    )

    (found,) = restorations([first, second])

    assert found.before == State(True, None)
    assert found.written == State(False, SOON)


@pytest.mark.parametrize(
    ("before", "bodies"),
    [
        (State(False, LATER), [{"expires": "2027-09-17T12:00:00Z"}]),
        (State(False, None), [{"doNotDelete": True}, {"doNotDelete": False}]),
        (State(True, None), [{"doNotDelete": True}]),
    ],
)
def test_the_steps_put_back_an_expiry_no_expiry_or_protection(
    before: State, bodies: list[dict[str, Any]]
) -> None:
    """An old expiry is set again; no expiry takes protect then unprotect (the API drops an
    expiry only on protect); a lifted doNotDelete is set again."""
    item = Restoration("p", "c", "prod", "a", "shorten", before, State(False, SOON))

    steps = item.steps()

    assert [step.to_api() for step in steps] == bodies
    assert all(isinstance(step, SnapshotPatch) for step in steps)


@pytest.mark.parametrize(
    ("current", "now", "expected"),
    [
        (State(False, SOON), NOW, "restore"),
        (None, NOW, "gone"),
        (State(False, LATER), NOW, "unchanged"),
        (State(True, None), NOW, "stale"),
        (State(False, SOON + timedelta(seconds=1)), NOW, "stale"),
        (State(False, SOON), SOON, "expired"),
    ],
)
def test_undo_changes_a_snapshot_only_when_it_has_exactly_what_the_run_wrote(
    current: State | None, now: datetime, expected: str
) -> None:
    """Compare-and-swap: the state the run wrote is restored; gone, already back, changed
    since (even by a second) and past its written expiry are left alone."""
    item = Restoration("p", "c", "prod", "a", "shorten", State(False, LATER), State(False, SOON))

    assert verdict(item, current, now) == expected


def test_an_old_expiry_that_has_passed_is_not_put_back() -> None:
    """Restoring an expiry that has passed would let the service delete the snapshot at
    once: undo says lapsed and leaves it."""
    before = State(False, NOW + timedelta(hours=2))
    item = Restoration("p", "c", "prod", "a", "shorten", before, State(False, SOON))

    assert verdict(item, State(False, SOON), NOW + timedelta(hours=3)) == "lapsed"
    assert verdict(item, State(False, SOON), NOW + timedelta(hours=1)) == "restore"
