"""The chaos suite, reduced for CI (make chaos runs more scenarios), and the PATCH-log
checker it relies on, shown to catch each kind of violation."""

from __future__ import annotations

from tests.support.chaos import run_chaos, violations


def test_two_chaos_scenarios_converge_without_violations() -> None:
    """Under 503s, 429s, resets, slow answers, stale nonces (and drift in one scenario) the
    job converges, with no invariant broken in the simulator's PATCH log."""
    results = run_chaos(2)

    assert [r.converged for r in results] == [True, True]
    assert [r.violations for r in results] == [[], []]
    assert sum(sum(r.faults.values()) for r in results) > 50
    assert [r.drift for r in results] == [True, False]


def entry(
    sid: str, body: dict[str, object], before: dict[str, object], **extra: object
) -> dict[str, object]:
    """A PATCH log entry at 12:00 as the simulator writes it."""
    return {"kind": "snapshot", "snapshotId": sid, "at": "2026-11-21T12:00:00Z", "body": body,
            "before": before, "status": 200, "complete": True, **extra}  # fmt: skip


def test_the_log_checker_catches_each_violation() -> None:
    """Each invariant the PATCH log can show is reported; an identical retry is only counted."""
    keep = {"doNotDelete": False, "expires": "2026-12-30T00:00:00Z"}
    log = [
        entry("both", {"doNotDelete": True, "expires": "2027-01-01T00:00:00Z"}, keep),
        entry(
            "expired",
            {"doNotDelete": True},
            {"doNotDelete": False, "expires": "2026-11-21T11:00:00Z"},
        ),
        entry("running", {"doNotDelete": True}, keep, complete=False),
        entry("early", {"expires": "2026-11-21T18:00:00Z"}, keep),
        entry(
            "lifted",
            {"doNotDelete": False, "expires": "2027-01-01T00:00:00Z"},
            {"doNotDelete": True, "expires": None},
        ),
        entry("twice", {"expires": "2026-11-22T12:00:00Z"}, keep),
        entry("twice", {"expires": "2026-11-22T12:00:05Z"}, keep, at="2026-11-21T12:00:05Z"),
        entry("retried", {"expires": "2026-11-22T12:00:00Z"}, keep),
        entry("retried", {"expires": "2026-11-22T12:00:00Z"}, keep),
    ]

    found, again = violations(log)

    assert found == [
        "both: invariant 1: doNotDelete true with expires",
        "expired: invariant 2: PATCH of an incomplete or expired snapshot",
        "running: invariant 2: PATCH of an incomplete or expired snapshot",
        "early: invariant 4: expiry written before now + grace",
        "lifted: invariant 6: hold lifted without release_protection",
        "twice: shortened by 2 decisions",
    ]
    assert again == 1
