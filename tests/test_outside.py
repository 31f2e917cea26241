"""The pure comparison of a cluster's walk with what the ledger knew (core.outside)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retention.core.model import AlertView, SnapshotView, Target
from retention.core.outside import (
    Attention,
    Known,
    Retained,
    cluster_drift,
    describe,
    gone,
    hold_reason,
    outside_entry,
    tally,
    with_alerts,
)

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
TARGET = Target("p1", "c1", "prod-orders")


def snap(
    i: int, *, expires_in: float | None = 10, dnd: bool = False, complete: bool = True
) -> SnapshotView:
    expires = None if expires_in is None or dnd else NOW + timedelta(days=expires_in)
    return SnapshotView(f"s{i}", NOW - timedelta(days=i), complete, dnd, expires)


def known_of(
    *snapshots: SnapshotView, pending: dict[str, Retained] | None = None
) -> dict[str, Known]:
    pending = pending or {}
    return {s.id: Known(s.created, Retained.of(s), pending.get(s.id)) for s in snapshots}


def test_nothing_known_makes_every_snapshot_new_and_nothing_drift() -> None:
    """A cluster the ledger never saw is its baseline: every snapshot new, no outside change."""
    walked = [snap(1), snap(2)]

    drift = cluster_drift(TARGET, {}, walked, NOW)

    assert [s.id for s in drift.new] == ["s1", "s2"]
    assert drift.outside == []
    assert drift.vanished == []


def test_the_same_walk_again_is_quiet() -> None:
    """A walk that finds exactly what the ledger knew has nothing to write."""
    walked = [snap(1), snap(2)]

    drift = cluster_drift(TARGET, known_of(*walked), walked, NOW)

    assert drift.quiet


def test_a_shortened_expiry_nobody_of_ours_sent_is_changed_outside() -> None:
    """An expiry that moved with no change of ours pending is changed outside, old and new named."""
    before = snap(1, expires_in=30)
    after = snap(1, expires_in=2)

    drift = cluster_drift(TARGET, known_of(before), [after], NOW)

    [change] = drift.outside
    assert change.kind == "changed"
    assert change.snapshot_id == "s1"
    assert change.before == Retained(True, NOW + timedelta(days=30), False)
    assert change.after == Retained(True, NOW + timedelta(days=2), False)
    assert drift.observed == []


def test_do_not_delete_set_outside_is_a_change_too() -> None:
    """doNotDelete turned on by someone else is a change outside retention."""
    drift = cluster_drift(TARGET, known_of(snap(1)), [snap(1, dnd=True)], NOW)

    assert [c.kind for c in drift.outside] == ["changed"]
    assert "doNotDelete" in describe(drift.outside[0])


def test_a_change_of_ours_pending_is_seen_not_reported() -> None:
    """The change a run of ours sent (pending in the ledger) is ours when the walk finds it."""
    sent = Retained(True, NOW + timedelta(days=3), False)
    walked = snap(1, expires_in=3)

    drift = cluster_drift(TARGET, known_of(snap(1), pending={"s1": sent}), [walked], NOW)

    assert drift.outside == []
    [seen] = drift.observed
    assert seen.ours
    assert seen.after == sent


def test_a_change_other_than_the_one_pending_is_outside() -> None:
    """A pending change of ours does not cover a different value someone else set."""
    sent = Retained(True, NOW + timedelta(days=3), False)
    walked = snap(1, expires_in=1)

    drift = cluster_drift(TARGET, known_of(snap(1), pending={"s1": sent}), [walked], NOW)

    assert [c.kind for c in drift.outside] == ["changed"]


def test_completing_is_observed_not_an_outside_change() -> None:
    """A snapshot that finished since (complete false to true, same retention) is no news."""
    running = snap(0, expires_in=None, complete=False)
    done = snap(0, expires_in=None, complete=True)

    drift = cluster_drift(TARGET, known_of(running), [done], NOW)

    assert drift.outside == []
    assert [o.snapshot_id for o in drift.observed] == ["s0"]
    assert not drift.observed[0].ours


def test_a_snapshot_gone_after_its_expiry_expired() -> None:
    """A snapshot no longer listed whose last known expiry has passed expired, as it should."""
    old = snap(5, expires_in=-1)

    drift = cluster_drift(TARGET, known_of(snap(1), old), [snap(1)], NOW)

    assert drift.outside == []
    assert drift.expired == ["s5"]
    assert drift.vanished == ["s5"]


def test_a_snapshot_gone_before_its_expiry_was_deleted_early() -> None:
    """A complete snapshot no longer listed before its expiry was deleted early."""
    kept = snap(5, expires_in=40)

    drift = cluster_drift(TARGET, known_of(snap(1), kept), [snap(1)], NOW)

    [change] = drift.outside
    assert (change.kind, change.snapshot_id, change.after) == ("deleted-early", "s5", None)
    assert change.before == Retained.of(kept)


def test_a_protected_snapshot_that_goes_was_deleted_early() -> None:
    """A doNotDelete snapshot has no expiry to pass: its going is always early."""
    drift = cluster_drift(TARGET, known_of(snap(1), snap(6, dnd=True)), [snap(1)], NOW)

    assert [c.kind for c in drift.outside] == ["deleted-early"]


def test_an_incomplete_snapshot_that_goes_is_not_a_restore_point_lost() -> None:
    """A snapshot that never completed and disappears (a failed one) is not deleted early."""
    failed = snap(0, expires_in=None, complete=False)

    drift = cluster_drift(TARGET, known_of(snap(1), failed), [snap(1)], NOW)

    assert drift.outside == []
    assert drift.vanished == ["s0"]


def test_every_snapshot_gone_at_once_is_one_gone_finding() -> None:
    """A cluster whose snapshots all went is gone: one finding, with what it had."""
    had = [snap(1), snap(2), snap(9, expires_in=-1)]

    drift = cluster_drift(TARGET, known_of(*had), [], NOW)

    [change] = drift.outside
    assert change.kind == "gone"
    assert change.snapshot_id is None
    assert change.restore_points == 2
    assert change.newest == NOW - timedelta(days=1)
    assert sorted(drift.vanished) == ["s1", "s2", "s9"]


def test_gone_counts_only_unexpired_complete_restore_points() -> None:
    """gone() says the restore points the cluster still had, not expired or failed ones."""
    known = known_of(snap(1), snap(3, expires_in=-2), snap(0, expires_in=None, complete=False))

    change = gone(TARGET, known, NOW)

    assert (change.restore_points, change.newest) == (1, NOW - timedelta(days=1))
    assert "gone" in describe(change)
    assert "1 restore point" in describe(change)


def test_audit_alerts_are_matched_by_event_and_cluster() -> None:
    """The audit alert naming the cluster and the event is attached; another cluster's is not."""
    drift = cluster_drift(TARGET, known_of(snap(1, expires_in=30)), [snap(1, expires_in=2)], NOW)
    alerts = [
        AlertView("a-other", "SNAPSHOT_EXPIRY_UPDATED_AUDIT", cluster_id="c2"),
        AlertView("a-delete", "SNAPSHOT_DELETED_AUDIT", cluster_id="c1"),
        AlertView("a-expiry", "SNAPSHOT_EXPIRY_UPDATED_AUDIT", cluster_id="c1"),
    ]

    [named] = with_alerts(drift.outside, alerts, {"c1": TARGET})

    assert named.alert_id == "a-expiry"
    assert "audit alert a-expiry" in describe(named)


def test_the_plan_entry_carries_kind_ids_values_and_words() -> None:
    """outside_entry is what plan.json's outsideChanges holds for one change."""
    drift = cluster_drift(TARGET, known_of(snap(1, expires_in=30)), [snap(1, expires_in=2)], NOW)

    entry = outside_entry(drift.outside[0])

    assert entry["kind"] == "changed"
    assert (entry["projectId"], entry["clusterId"], entry["snapshotId"]) == ("p1", "c1", "s1")
    assert entry["before"] == {
        "complete": True,
        "expires": NOW + timedelta(days=30),
        "doNotDelete": False,
    }
    assert entry["after"] == {
        "complete": True,
        "expires": NOW + timedelta(days=2),
        "doNotDelete": False,
    }
    assert entry["alertId"] is None
    assert entry["text"] == (
        "snapshot s1 of prod-orders: expires 2026-12-20T12:00:00Z -> expires "
        "2026-11-22T12:00:00Z, changed outside retention"
    )


def test_the_hold_reason_counts_and_names_the_kinds() -> None:
    """The hold says how many changes and of which kinds."""
    drift = cluster_drift(
        TARGET, known_of(snap(1, expires_in=30), snap(4)), [snap(1, expires_in=2)], NOW
    )

    assert hold_reason(drift.outside, name="prod-orders") == (
        "2 changes made outside retention since the last run (1 expiry changed, 1 deleted "
        "early): a person should look before anything more is expired, then `retention "
        "ledger ack prod-orders`"
    )


def test_an_unacknowledged_earlier_change_holds_alone_or_beside_new_ones() -> None:
    """A change an earlier run found and nobody acknowledged is a reason to hold on its own
    (when it was found, and by which run), and beside this plan's; with neither there is
    none."""
    earlier = Attention(7, NOW - timedelta(days=2))
    drift = cluster_drift(TARGET, known_of(snap(1), snap(4)), [snap(1)], NOW)

    assert hold_reason([], earlier, "prod-orders") == (
        "changes made outside retention found on 2026-11-18T12:00:00Z (ledger run 7), not "
        "acknowledged: a person should look before anything more is expired, then "
        "`retention ledger ack prod-orders`"
    )
    assert hold_reason(drift.outside, Attention(7, None), "prod-orders") == (
        "1 change made outside retention since the last run (1 deleted early) and earlier "
        "ones found (ledger run 7), not acknowledged: a person should look before anything "
        "more is expired, then `retention ledger ack prod-orders`"
    )
    assert hold_reason([], None) is None


def test_a_protection_changed_is_counted_apart_from_an_expiry_changed() -> None:
    """Protecting or releasing a snapshot outside retention is counted as a protection
    changed, a moved date as an expiry changed, each in its own words and number."""
    known = known_of(snap(1), snap(2), snap(3, dnd=True), snap(5, expires_in=30))
    walked = [snap(1, dnd=True), snap(2, expires_in=2), snap(3), snap(5, expires_in=3)]

    drift = cluster_drift(TARGET, known, walked, NOW)

    assert tally(outside_entry(c) for c in drift.outside) == (
        "2 expiries changed, 2 protections changed"
    )
    assert str(hold_reason(drift.outside)).startswith(
        "4 changes made outside retention since the last run (2 expiries changed, "
        "2 protections changed): "
    )


def test_a_later_expiry_than_ours_pending_is_ours_sent_with_its_grace() -> None:
    """A pending expiry of ours found later than planned is ours (sent with the grace from
    the moment it went out); one found earlier is not."""
    sent = Retained(True, NOW + timedelta(days=3), False)
    known = known_of(snap(1), pending={"s1": sent})

    later = cluster_drift(TARGET, known, [snap(1, expires_in=3.5)], NOW)
    earlier = cluster_drift(TARGET, known, [snap(1, expires_in=2)], NOW)

    assert later.outside == []
    assert [o.ours for o in later.observed] == [True]
    assert [c.kind for c in earlier.outside] == ["changed"]
