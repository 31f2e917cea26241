"""What a policy change does to one cluster (retention.core.compare): each snapshot's fate
under the base and the new plan, and the shift between them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retention.core.compare import SHIFTS, compare, fate
from retention.core.model import (
    Action,
    ClusterDecisions,
    ClusterPlan,
    Decision,
    Hold,
    SnapshotView,
    Target,
)
from retention.core.model import State as DecisionState

NOW = datetime(2026, 11, 21, 12, tzinfo=UTC)
TARGET = Target("p" * 24, "c" * 24, "orders")
SNAPSHOT = SnapshotView("a" * 24, NOW, True, False, None, storage_bytes=1000)


def decision(state: DecisionState, action: Action = "none") -> Decision:
    """The one snapshot's decision in ``state`` with ``action``."""
    return Decision(SNAPSHOT, state, action)


def plan(*decisions: Decision, holds: list[Hold] | None = None) -> ClusterPlan:
    """A plan of the cluster with these decisions and holds."""
    return ClusterPlan(ClusterDecisions(TARGET, decisions, tuple(holds or ()), (), ("prod",)))


KEPT = decision("kept")
PROTECTED = decision("protected", "protect")
LET_GO = decision("unkept", "shorten")
UNMATCHED = decision("unmatched")
INCONSISTENT = decision("inconsistent")


@pytest.mark.parametrize(
    ("before", "after", "fates", "shift"),
    [
        (KEPT, LET_GO, ("kept", "let go"), "stops keeping"),
        (INCONSISTENT, LET_GO, ("untouched", "let go"), "stops keeping"),
        (KEPT, UNMATCHED, ("kept", "untouched"), "stops keeping"),
        (LET_GO, KEPT, ("let go", "kept"), "newly keeps"),
        (UNMATCHED, KEPT, ("untouched", "kept"), "newly keeps"),
        (KEPT, PROTECTED, ("kept", "kept"), "newly protects"),
        (PROTECTED, KEPT, ("kept", "kept"), "stops protecting"),
    ],
    ids=[
        "kept-to-let-go",
        "untouched-to-let-go",
        "kept-to-untouched-when-no-policy-matches",
        "let-go-to-kept",
        "untouched-to-kept",
        "kept-to-protected",
        "protected-to-kept",
    ],
)
def test_each_change_of_fate_is_its_shift(
    before: Decision, after: Decision, fates: tuple[str, str], shift: str
) -> None:
    """A snapshot's fate on each side, and the shift the change makes of it."""
    assert (fate(before), fate(after)) == fates
    diff = compare(plan(before), plan(after))
    [only] = diff.shifts
    assert (only.shift, only.before, only.after) == (shift, *fates)
    assert diff.keeps_less is (shift == "stops keeping")
    assert diff.bytes_given_back == (1000 if shift == "stops keeping" else 0)
    assert diff.bytes_newly_kept == (1000 if shift == "newly keeps" else 0)


@pytest.mark.parametrize("same", [KEPT, PROTECTED, LET_GO, UNMATCHED])
def test_the_same_fate_on_both_sides_is_no_shift(same: Decision) -> None:
    """Nothing shifts when the snapshot fares alike under both."""
    diff = compare(plan(same), plan(same))
    assert diff.shifts == []
    assert diff.changed is False


def test_holds_are_compared_by_kind_and_alert_not_by_words() -> None:
    """A fraction hold whose reason gives another fraction is the same hold; a new alert's
    hold is added, a gone one is gone."""
    before = [
        Hold("max_expire_fraction", "would expire 60% of 10"),
        Hold("alert", "alert OPLOG_BEHIND open", alert_id="a1"),
    ]
    after = [
        Hold("max_expire_fraction", "would expire 70% of 10"),
        Hold("alert", "alert RESYNC_REQUIRED open", alert_id="a2"),
    ]
    diff = compare(plan(KEPT, holds=before), plan(KEPT, holds=after))
    assert [(h.kind, h.alert_id) for h in diff.holds_added] == [("alert", "a2")]
    assert [(h.kind, h.alert_id) for h in diff.holds_gone] == [("alert", "a1")]
    assert diff.changed is True


def test_shifts_are_listed_stops_keeping_first_then_newest_first() -> None:
    """A cluster with one shift of each kind lists them in the order of SHIFTS (what makes
    diff exit 3 first, so a cut table never hides it), and within a kind the newest first."""
    kinds = [(PROTECTED, KEPT), (KEPT, PROTECTED), (LET_GO, KEPT), (KEPT, LET_GO), (KEPT, LET_GO)]
    before, after = [], []
    for k, (was, now) in enumerate(kinds):
        snapshot = SnapshotView(f"{k:024x}", NOW.replace(hour=k), True, False, None)
        before.append(Decision(snapshot, was.state, was.action))
        after.append(Decision(snapshot, now.state, now.action))

    shifts = compare(plan(*before), plan(*after)).shifts

    assert [(s.shift, s.created.hour) for s in shifts] == [
        ("stops keeping", 4),
        ("stops keeping", 3),
        ("newly keeps", 2),
        ("newly protects", 1),
        ("stops protecting", 0),
    ]
    assert tuple(dict.fromkeys(s.shift for s in shifts)) == SHIFTS


def test_a_config_servers_advisory_changes_are_no_shift() -> None:
    """A config server's plan sends nothing, so its snapshot kept under the base and
    shortened (advisory) under the new policies stays as the service keeps it: no shift,
    and the new policies do not keep less."""
    server = Target("p" * 24, "h" * 24, "cfg0.example.net:27019", kind="config-server")
    advised = Decision(SNAPSHOT, "unkept", "shorten", advisory=True)

    before, after = (ClusterPlan(ClusterDecisions(server, (d,))) for d in (KEPT, advised))
    diff = compare(before, after)

    assert diff.shifts == []
    assert not diff.keeps_less
