"""The checks apply makes before it trusts a plan (plan.guard): the head, each entry, and the
last check before each PATCH, against the state just re-read and the clock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from retention.core.guard import (
    ClusterFacts,
    ClusterIndex,
    EntryCheck,
    approve,
    check_send,
    facts_of,
    index_of,
    plan_refusal,
)
from retention.core.model import SnapshotView
from retention.core.planfile import (
    CHANGE,
    CLUSTER,
    HEAD,
    Change,
    ClusterEntry,
    PlanHead,
)
from retention.core.snapshot import SnapshotPatch
from retention.errors import PlanFileError
from retention.runfolder.planread import open_plan

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
GRACE = 86400
BASE = "https://om.test/api/public/v1.0"
# A plan of format v1 (plan.json with its lists, pretty-printed), as older versions wrote it.
PLAN_V1 = Path(__file__).parent / "fixtures" / "plan-v1" / "plan.json"


def cluster(cid: str = "c1", **over: Any) -> ClusterEntry:
    """A plan's cluster entry (a replica set, grace 24 h, release_protection off)."""
    entry: dict[str, Any] = {
        "projectId": "p1",
        "clusterId": cid,
        "name": f"prod-{cid}",
        "kind": "cluster",
        "typeName": "REPLICA_SET",
        "members": [],
        "policies": ["prod"],
        "holds": [],
        "errors": [],
        "counts": {},
        "graceSeconds": GRACE,
        "releaseProtection": False,
        "bytesGivenBack": 0,
        "bytesHeld": 0,
        "expiresFrom": None,
        **over,
    }
    return entry  # type: ignore[return-value] # checked by test_fixtures_are_valid_records


def facts(cid: str = "c1", **over: Any) -> ClusterFacts:
    """What apply knows of a cluster entry made by ``cluster``."""
    return facts_of(cluster(cid, **over))


def head(**over: Any) -> PlanHead:
    """A plan's head made at NOW, lease 1 day."""
    value: dict[str, Any] = {
        "format": "retention-plan/v2",
        "createdAt": NOW,
        "evaluatedAt": NOW,
        "whatIf": False,
        "baseUrl": BASE,
        "serviceVersion": None,
        "leaseSeconds": 86400.0,
        "projects": [{"projectId": "p1", "name": "shop"}],
        "policies": [],
        "unusedPolicies": [],
        "summary": {
            "clusters": 1,
            "snapshots": 1,
            "byState": {},
            "byAction": {},
            "clustersHeld": 0,
            "clustersWithErrors": 0,
            "clustersUnmanaged": 0,
            "bytesGivenBack": 0,
            "bytesHeld": 0,
            "expiresFrom": None,
        },
        "warnings": [],
        "errors": [],
        **over,
    }
    return value  # type: ignore[return-value] # checked by test_fixtures_are_valid_records


def change(action: str = "shorten", sid: str = "s1", cid: str = "c1", **over: Any) -> Change:
    """A change as the planner writes it: a shorten to NOW + grace by default."""
    bodies: dict[str, dict[str, Any]] = {
        "protect": {"doNotDelete": True},
        "extend": {"expires": NOW + 3 * DAY},
        "shorten": {"expires": NOW + DAY},
        "delete": {"expires": NOW + DAY},
        "release": {"doNotDelete": False, "expires": NOW + 3 * DAY},
    }
    value: dict[str, Any] = {
        "projectId": "p1",
        "clusterId": cid,
        "clusterName": f"prod-{cid}",
        "snapshotId": sid,
        "created": NOW - 10 * DAY,
        "storageBytes": 1 << 30,
        "action": action,
        "destructive": action in ("shorten", "delete"),
        "grace": GRACE,
        "observed": {"doNotDelete": action == "release", "expires": None},
        "body": bodies[action],
        "policy": "prod",
        "reasons": [],
        "expiresAfter": None,
        **over,
    }
    return value  # type: ignore[return-value] # checked by test_fixtures_are_valid_records


def view(
    sid: str = "s1", *, expires: datetime | None = None, dnd: bool = False, complete: bool = True
) -> SnapshotView:
    """The snapshot's state as just re-read."""
    return SnapshotView(sid, NOW - 10 * DAY, complete, dnd, expires)


def test_fixtures_are_valid_records() -> None:
    """The records these tests build are ones the plan file's model accepts."""
    HEAD.validate_python(head())
    CLUSTER.validate_python(cluster())
    for action in ("protect", "extend", "shorten", "delete", "release"):
        CHANGE.validate_python(change(action))


# ---- check_send: the last check before each PATCH ----------------------------------------


def test_a_planned_expiry_sooner_than_now_plus_grace_is_sent_as_now_plus_grace() -> None:
    """A plan reviewed for two days still gives the snapshot its full grace: the expiry sent
    is max(planned, send time + grace) (invariant 4)."""
    later = NOW + 2 * DAY

    verdict = check_send(change(), view(), cluster=facts(), now=later)

    assert verdict.outcome == "send"
    assert verdict.body == SnapshotPatch.expire_at(later + DAY)


def test_a_planned_expiry_beyond_now_plus_grace_is_sent_as_planned() -> None:
    """When the plan's expiry is already later than send time + grace, it goes out as is."""
    verdict = check_send(change(body={"expires": NOW + 5 * DAY}), view(), cluster=facts(), now=NOW)

    assert verdict.body == SnapshotPatch.expire_at(NOW + 5 * DAY)


def test_do_not_delete_true_with_expires_is_refused() -> None:
    """Invariant 1: a body with doNotDelete: true and expires is never sent."""
    bad = change("protect", body={"doNotDelete": True, "expires": NOW + DAY})

    verdict = check_send(bad, view(), cluster=facts(), now=NOW)

    assert (verdict.outcome, verdict.body) == ("refused", None)
    assert "doNotDelete: true together with expires" in (verdict.reason or "")


@pytest.mark.parametrize(
    ("current", "outcome", "reason"),
    [
        (None, "stale", "the snapshot is gone"),
        (view(expires=NOW - timedelta(seconds=1)), "stale", "state changed"),
        (view(dnd=True), "stale", "state changed"),
        (view(complete=False), "refused", "incomplete"),
    ],
    ids=["gone", "expiry-moved", "protected-since", "incomplete"],
)
def test_a_snapshot_that_moved_on_or_is_incomplete_gets_no_patch(
    current: SnapshotView | None, outcome: str, reason: str
) -> None:
    """Compare-and-swap and invariant 2: a gone, changed or incomplete snapshot is not sent."""
    verdict = check_send(change(), current, cluster=facts(), now=NOW)

    assert (verdict.outcome, verdict.body) == (outcome, None)
    assert reason in (verdict.reason or "")


@pytest.mark.parametrize(
    ("planned", "current", "outcome"),
    [
        (change(), view(expires=NOW + DAY), "unchanged"),
        # Sent two hours after the plan: the expiry written was then + grace.
        (change(), view(expires=NOW + DAY + timedelta(hours=2)), "unchanged"),
        (change(), view(expires=NOW + DAY - timedelta(seconds=1)), "stale"),
        (change(), view(expires=NOW + DAY + timedelta(hours=3, seconds=1)), "stale"),
        (change(), view(dnd=True), "stale"),
        (change("protect"), view(dnd=True), "unchanged"),
        (
            change("release", observed={"doNotDelete": True, "expires": None}),
            view(expires=NOW + 3 * DAY),
            "unchanged",
        ),
    ],
    ids=[
        "as-planned",
        "sent-later",
        "earlier",
        "beyond-now-plus-grace",
        "protected",
        "protect",
        "release",
    ],
)
def test_a_snapshot_that_already_holds_what_the_change_writes_is_unchanged(
    planned: Change, current: SnapshotView, outcome: str
) -> None:
    """Three hours after the plan, a snapshot showing what this change writes, or wrote
    when sent earlier (its expiry from the planned one to now + grace), is unchanged: no
    PATCH; any other state that differs from the plan's is stale."""
    verdict = check_send(planned, current, cluster=facts(), now=NOW + timedelta(hours=3))

    assert (verdict.outcome, verdict.body) == (outcome, None)


def test_a_stale_reason_says_both_states_as_json() -> None:
    """The reason of a stale change gives the state the plan saw and the state now in the
    API's JSON spelling, not Python's."""
    planned = change(observed={"doNotDelete": False, "expires": NOW + 5 * DAY})

    verdict = check_send(planned, view(dnd=True), cluster=facts(), now=NOW)

    assert verdict.reason == (
        'state changed since the plan: it was {"doNotDelete": false, "expires": '
        '"2026-11-26T12:00:00Z"}, now {"doNotDelete": true, "expires": null}'
    )


def test_an_expiry_that_passed_since_the_plan_gets_no_patch() -> None:
    """Invariant 2: a snapshot whose expiry is at or before the send time awaits deletion; the
    API forbids editing it, so nothing is sent."""
    planned = change(observed={"doNotDelete": False, "expires": NOW + timedelta(hours=1)})
    current = view(expires=NOW + timedelta(hours=1))

    verdict = check_send(planned, current, cluster=facts(), now=NOW + timedelta(hours=1))

    assert (verdict.outcome, verdict.reason) == ("stale", "its expiry has passed since the plan")


def test_a_config_server_snapshot_is_refused() -> None:
    """Invariant 2: config-server snapshots have no PATCH endpoint, whatever a plan says."""
    verdict = check_send(change(), view(), cluster=facts(kind="config-server"), now=NOW)

    assert verdict.outcome == "refused"


def test_lifting_do_not_delete_needs_release_protection() -> None:
    """Invariant 6: a release is refused unless the cluster's policies all allow it."""
    current = view(dnd=True)

    refused = check_send(change("release"), current, cluster=facts(), now=NOW)
    allowed = check_send(change("release"), current, cluster=facts(releaseProtection=True), now=NOW)

    assert refused.outcome == "refused"
    assert "release_protection" in (refused.reason or "")
    assert allowed.body == SnapshotPatch.release(NOW + 3 * DAY)


def test_a_kept_snapshot_is_never_shortened() -> None:
    """Invariant 4: a change that keeps a snapshot may not write an earlier expiry than it has."""
    has = NOW + 10 * DAY
    shortening = change(
        "extend",
        body={"expires": NOW + 3 * DAY},
        observed={"doNotDelete": False, "expires": has},
    )

    verdict = check_send(shortening, view(expires=has), cluster=facts(), now=NOW)

    assert verdict.outcome == "refused"
    assert "would shorten a kept snapshot" in (verdict.reason or "")


def test_protect_is_sent_as_do_not_delete_true() -> None:
    """A protect goes out as {doNotDelete: true}, nothing else."""
    verdict = check_send(change("protect"), view(), cluster=facts(), now=NOW)

    assert verdict.body == SnapshotPatch.protect()


# ---- EntryCheck: every entry before the first request -------------------------------------


def problems(*changes: Change, plan: Sequence[ClusterEntry] = ()) -> list[str | None]:
    """What EntryCheck says of each entry, in order, in a plan of the clusters ``plan``
    (one cluster by default)."""
    check = EntryCheck(head(), index_of(plan or [cluster()]))
    return [check.problem(c) for c in changes]


def test_a_plan_as_the_planner_writes_it_passes() -> None:
    """Every kind of change, as the planner writes them, passes the entry checks."""
    plan = [cluster(releaseProtection=True)]
    actions = ["protect", "extend", "shorten", "delete", "release"]

    assert problems(*(change(a, f"s{n}") for n, a in enumerate(actions)), plan=plan) == [None] * 5


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (change(cid="c9"), "not among the plan's clusters"),
        (change("protect", body={"doNotDelete": True, "expires": NOW}), "doNotDelete: true"),
        (
            change("extend", body={"doNotDelete": False}),
            "an extend body has expires, this one has doNotDelete",
        ),
        (change(destructive=False), "a shorten is destructive"),
        (change("extend", destructive=True), "an extend is not destructive"),
        (change(grace=0), "grace 0 s differs"),
        (change(body={"expires": NOW}), "earlier than the plan's time plus the grace"),
        (change("extend", body={"expires": NOW + timedelta(hours=1)}), "at least the lease"),
        (change("release", observed={"doNotDelete": False, "expires": None}), "not protected"),
        (change("release"), "release_protection: true"),
        (change(held="a gate"), "belongs in the plan's held list"),
    ],
    ids=[
        "unknown-cluster",
        "protect-with-expires",
        "body-of-another-action",
        "shorten-not-destructive",
        "extend-destructive",
        "grace-edited",
        "expiry-in-the-past",
        "extend-below-lease",
        "release-of-unprotected",
        "release-without-permission",
        "held-in-changes",
    ],
)
def test_entries_a_person_or_a_bug_could_write_are_refused(entry: Change, message: str) -> None:
    """Each way an entry can be wrong is found before anything is sent, and said."""
    [problem] = problems(entry)

    assert problem is not None
    assert message in problem


def test_config_server_duplicate_and_scattered_entries_are_refused() -> None:
    """A config server's change, a snapshot changed twice, and a cluster whose changes are
    not together are refused."""
    plan = [cluster("c1"), cluster("c2"), cluster("h1", kind="config-server")]

    found = problems(
        change(sid="s1", cid="c1"),
        change(sid="s1", cid="c1"),
        change(sid="s2", cid="c2"),
        change(sid="s3", cid="c1"),
        change(sid="s4", cid="h1"),
        plan=plan,
    )

    assert found[0] is None
    assert "more than one change" in (found[1] or "")
    assert found[2] is None
    assert "not together" in (found[3] or "")
    assert "advisory" in (found[4] or "")


# ---- plan_refusal: the head ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"whatIf": True}, "what-if plan"),
        ({"evaluatedAt": NOW - DAY}, "evaluated at 2026-11-20T12:00:00Z but made at"),
        ({"evaluatedAt": NOW + timedelta(minutes=6)}, "computed for another time"),
        ({"baseUrl": "https://other.test/api/public/v1.0"}, "was made against"),
        ({"createdAt": NOW - 2 * DAY, "evaluatedAt": NOW - 2 * DAY}, "48.0h old"),
        ({"createdAt": NOW + DAY, "evaluatedAt": NOW + DAY}, "in this machine's future"),
    ],
    ids=["what-if", "evaluated-earlier", "evaluated-later", "other-api", "old", "future"],
)
def test_plans_that_must_not_be_applied_are_refused_whole(
    over: dict[str, Any], message: str
) -> None:
    """A what-if plan, one evaluated at another time than made, one of another API, an old
    one and one from the future are refused before anything is read further."""
    refusal = plan_refusal(head(**over), base_url=BASE, now=NOW, max_age=DAY)

    assert refusal is not None
    assert message in refusal


def test_a_plan_of_format_v1_is_refused_whole_as_it_is_opened() -> None:
    """A plan an older retention wrote (format v1) is refused before its head reaches the
    checks above: opening it is a PlanFileError saying so, and what to do."""
    with pytest.raises(
        PlanFileError, match="of format retention-plan/v1, written by an older"
    ) as info:
        open_plan(PLAN_V1)

    assert "Run `retention plan` again" in str(info.value)


def test_a_fresh_plan_of_this_api_is_not_refused() -> None:
    """A plan made a minute ago against the configured API (trailing slash aside) passes."""
    plan = head(evaluatedAt=NOW + timedelta(seconds=30))

    assert (
        plan_refusal(plan, base_url=BASE + "/", now=NOW + timedelta(minutes=1), max_age=DAY) is None
    )


# ---- approve: which held clusters an apply may let through ---------------------------------

FRACTION = {"kind": "max_expire_fraction", "reason": "9 of 10 would expire", "alertId": None}
ALERT = {"kind": "alert", "reason": "OPEN alert BAD_CLUSTERSHOTS (a1)", "alertId": "a1"}


def held_plan() -> ClusterIndex:
    """Four clusters: held by the fraction, by an alert, by both, and not held."""
    return index_of(
        [
            cluster("c1", name="orders", holds=[FRACTION]),
            cluster("c2", name="billing", holds=[ALERT]),
            cluster("c3", name="users", holds=[ALERT, FRACTION]),
            cluster("c4", name="catalog"),
        ]
    )


def test_a_fraction_hold_is_approved_by_name_or_id() -> None:
    """--approve takes a cluster's name or its id."""
    by_name = approve(held_plan(), ["orders"], everything=False)
    by_id = approve(held_plan(), ["c1"], everything=False)

    assert by_name.clusters == by_id.clusters == {("p1", "c1")}
    assert by_name.names == ("orders",)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("billing", "held by alert: OPEN alert BAD_CLUSTERSHOTS (a1). Only a max_expire_fraction"),
        ("users", "held by alert"),
        ("catalog", "the plan does not hold this cluster"),
        ("nope", "the plan has no cluster of that name or id"),
    ],
)
def test_what_cannot_be_approved_is_refused_with_why(name: str, message: str) -> None:
    """An alert hold (alone or with the fraction), a cluster not held and a name the plan
    does not have are refused, saying why."""
    with pytest.raises(ValueError, match="--approve " + name) as raised:
        approve(held_plan(), [name], everything=False)

    assert message in str(raised.value)


def test_a_name_shared_by_two_clusters_must_be_approved_by_id() -> None:
    """Two clusters of one name (in two projects) are not approved by name."""
    plan = index_of(
        [
            cluster("c1", name="orders", holds=[FRACTION]),
            cluster("c2", name="orders", holds=[FRACTION]),
        ]
    )

    with pytest.raises(ValueError, match="2 clusters have that name"):
        approve(plan, ["orders"], everything=False)


def test_approve_all_takes_the_fraction_holds_and_names_the_others() -> None:
    """--approve-all lets through every cluster held only by the fraction, and lists those
    it could not approve."""
    approval = approve(held_plan(), [], everything=True)

    assert approval.clusters == {("p1", "c1")}
    assert [s.split(" (")[0] for s in approval.skipped] == ["billing", "users"]


ID_HOLD = {
    "kind": "id",
    "reason": "cluster id '5e4e/../\\x1b' cannot be carried by a plan (it holds '/', ...)",
    "alertId": None,
    "setting": None,
}


def test_an_id_hold_is_never_approved_and_says_why() -> None:
    """--approve of a cluster held for its id is refused, saying no approval makes the id
    safe; --approve-all passes it over with the control character of its id escaped."""
    odd = cluster("5e4e/../\x1b", name="5e4e/../\x1b", holds=[ID_HOLD])
    plan = index_of([odd, cluster("c1", name="orders", holds=[FRACTION])])

    with pytest.raises(ValueError, match="--approve 5e4e") as raised:
        approve(plan, ["5e4e/../\x1b"], everything=False)
    every = approve(plan, [], everything=True)

    assert "held by id: cluster id" in str(raised.value)
    assert "no approval makes an id safe to put in a path" in str(raised.value)
    assert every.clusters == {("p1", "c1")}
    [skipped] = every.skipped
    assert skipped.startswith("5e4e/../\\x1b (5e4e/../\\x1b): held by id")
    assert "\x1b" not in skipped
