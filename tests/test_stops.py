"""The stop, piece by piece: the flag and its signal handlers, the client that starts no
request after it (and ends a wait to retry), an apply that journals what it did not send, a
plan that leaves no half files, and undo's reading of a journal written ahead."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from retention.api.client import OpsManagerClient
from retention.api.transport import RetryPolicy
from retention.apply.executor import Journal, apply_plan
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.guard import Trusted, index_of
from retention.core.policy.loader import PolicySet
from retention.core.restore import restorations
from retention.core.runfiles import ApplyIntent, ApplyOutcome
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import format_timestamp, parse_timestamp
from retention.errors import StopRequestedError
from retention.library.changing import run_job
from retention.ops.stopping import Stop, on_signals
from retention.plan.planner import make_plan
from retention.report.read import read_results
from retention.runfolder.planwrite import encode_line
from retention.simulator.server import Simulator
from retention.undo.restoring import undo_run
from tests.support.client import PRIVATE_KEY, PUBLIC_KEY, make_client
from tests.support.digest import DigestChecker
from tests.support.fakeapi import snapshot
from tests.support.journal import intent_lines, journal_line, outcome_lines
from tests.support.simfleet import BIG, NOW, SMALL, P, client_for
from tests.support.wire_server import Fault, WireState, serve

POLICY = """\
name: everything
keep: {last: 3, daily: 7}
protect: {yearly: 1}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""


def policies_file(tmp_path: Path) -> PolicySet:
    """One policy for every cluster, from a file in ``tmp_path/policies``."""
    folder = tmp_path / "policies"
    folder.mkdir(exist_ok=True)
    (folder / "everything.yaml").write_text(POLICY)
    return load_policies(folder)


def scope_of(tmp_path: Path) -> Scope:
    """The small fleet's project, with the policy of policies_file, two requests at once."""
    return Scope(policies_file(tmp_path), [ProjectTargets(P)], concurrency=2)


def write_journal(path: Path, lines: list[ApplyIntent | ApplyOutcome]) -> None:
    """A results.jsonl holding ``lines``, as the executor encodes them."""
    path.write_bytes(b"".join(encode_line(x) for x in lines))


@pytest.fixture
def restore_handlers() -> Iterator[None]:
    """Put SIGINT's and SIGTERM's handlers back as they were, whatever the test did."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in before.items():
        signal.signal(number, handler)


@pytest.mark.usefixtures("restore_handlers")
def test_sigterm_requests_the_stop_a_repeat_changes_nothing_and_ctrl_c_exits_at_once() -> None:
    """SIGTERM sets the stop (and says which signal); a second SIGTERM (supervisors repeat
    it) changes nothing; a Ctrl-C while stopping calls the exit with 130 instead of
    waiting; the handlers in place before come back after."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Python's own Ctrl-C handler, whatever an earlier test in this worker left: with
    # SIGINT ignored, on_signals rightly leaves it so and the Ctrl-C below would do nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    exits: list[int] = []
    stop = Stop()

    with on_signals(stop, exit_now=exits.append):
        os.kill(os.getpid(), signal.SIGTERM)
        first = (stop.requested, stop.name, stop.exit_code)
        os.kill(os.getpid(), signal.SIGTERM)
        after_repeat = list(exits)
        woke = stop.sleep(5)  # the watcher thread wakes every wait
        os.kill(os.getpid(), signal.SIGINT)

    assert first == (True, "SIGTERM", 143)
    assert after_repeat == []
    assert woke is True
    assert exits == [130]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.usefixtures("restore_handlers")
def test_a_handler_python_did_not_install_comes_back_as_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """getsignal says None for a handler set outside Python: the block still installs its
    own, and puts back the default after (signal.signal refuses None)."""
    monkeypatch.setattr(signal, "getsignal", lambda _number: None)
    stop = Stop()

    with on_signals(stop):
        os.kill(os.getpid(), signal.SIGTERM)
    monkeypatch.undo()

    assert stop.name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL


@pytest.mark.usefixtures("restore_handlers")
def test_a_sigint_the_process_was_started_with_ignored_stays_ignored() -> None:
    """A background job's ignored SIGINT is left ignored (as Python leaves it); SIGTERM is
    still handled."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = Stop()

    with on_signals(stop):
        os.kill(os.getpid(), signal.SIGINT)
        after_sigint = stop.requested
        handled = signal.getsignal(signal.SIGTERM)

    assert after_sigint is False
    assert callable(handled)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_shield_lets_one_thread_go_on_after_a_stop() -> None:
    """Inside shield() a stop does not raise on that thread, and it does again after."""
    stop = Stop()
    stop.request(signal.SIGINT)

    with stop.shield():
        stop.check("the second step")
    with pytest.raises(StopRequestedError) as info:
        stop.check("the next change")

    assert (info.value.exit_code, info.value.in_doubt) == (130, False)
    assert str(info.value) == "SIGINT: stopped before the next change"


def test_the_client_starts_no_request_after_a_stop(sim: Simulator) -> None:
    """After a stop the client raises StopRequestedError naming the endpoint, and the
    service sees no request."""
    stop = Stop()
    with client_for(sim, stop=stop) as api:
        api.get_snapshot(P, SMALL, "fresh")
        before = sim.admin("counters")["requests"]
        stop.request(signal.SIGTERM)
        with pytest.raises(StopRequestedError) as info:
            api.get_snapshot(P, SMALL, "fresh")

    assert sim.admin("counters")["requests"] == before
    assert "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}" in str(
        info.value
    )
    assert info.value.exit_code == 143


def test_a_stop_ends_the_wait_to_retry_and_says_a_try_went_out() -> None:
    """A 503 asks for a 20-second wait; a stop during it ends the wait with a
    StopRequestedError in doubt (the first try reached the service), and no second try."""
    state = WireState(checker=DigestChecker(PUBLIC_KEY, PRIVATE_KEY), body=snapshot("s1"))
    state.faults = [Fault("status", 503, {"Retry-After": "20"})]
    patient = RetryPolicy(retries=3, backoff_factor=0.0, jitter=0.0, max_total_seconds=60)
    stop = Stop()
    timer = threading.Timer(0.3, stop.request)
    with serve(state) as url, make_client(url, stop=stop, retry=patient) as api:
        timer.start()
        with pytest.raises(StopRequestedError) as info:
            api.get_snapshot("p1", "c1", "s1")
    timer.cancel()

    assert info.value.in_doubt is True
    assert [entry[2] for entry in state.log] == [401, 503]


def test_a_stop_ends_a_wait_for_the_rate_limit_before_the_request() -> None:
    """With one request every 10 seconds, a stop while the second waits for its slot ends
    the wait, and the request never goes out."""
    state = WireState(checker=DigestChecker(PUBLIC_KEY, PRIVATE_KEY), body=snapshot("s1"))
    stop = Stop()
    timer = threading.Timer(0.3, stop.request)
    with serve(state) as url, make_client(url, stop=stop, max_requests_per_second=0.1) as api:
        api.get_snapshot("p1", "c1", "s1")
        timer.start()
        with pytest.raises(StopRequestedError):
            api.get_snapshot("p1", "c1", "s1")
    timer.cancel()

    assert [entry[2] for entry in state.log] == [401, 200]


def test_a_stopped_apply_journals_every_change_it_did_not_send(
    sim: Simulator, tmp_path: Path
) -> None:
    """A stop after the fifth outcome: each PATCH the service received has its intent and
    its applied outcome, every other change is journalled not-sent, none is lost, and the
    result names the signal."""
    with client_for(sim) as api:
        planned = make_plan(
            api, scope_of(tmp_path), plan_path=tmp_path / "run" / "plan.json", now=NOW
        )
    plan = planned.plan
    changes = list(plan.read_list("changes"))
    stop = Stop()
    seen: list[str] = []

    class Counting:
        """Hears each outcome; asks to stop at the fifth."""

        def apply(self, total: int) -> None:
            """Nothing to count yet."""

        def outcome(self, outcome: Any) -> None:
            """One more outcome."""
            seen.append(outcome.outcome)
            if len(seen) == 5:
                stop.request(signal.SIGINT)

    journal = Journal(tmp_path / "run" / "results.jsonl", lambda: NOW)
    with client_for(sim, stop=stop) as api:
        trusted = Trusted.made(plan.head, index_of(plan.read_clusters()))
        result = apply_plan(
            api, changes, trusted, journal, concurrency=2, listener=Counting()
        )  # fmt: skip
    journal.close()

    path = tmp_path / "run" / "results.jsonl"
    service = [p["snapshotId"] for p in sim.admin("patches")["patches"]]
    applied = [x["snapshotId"] for x in outcome_lines(path) if x["outcome"] == "applied"]
    assert result.interrupted == "SIGINT"
    assert sorted(x["snapshotId"] for x in intent_lines(path)) == sorted(service)
    assert sorted(applied) == sorted(service)
    assert 5 <= len(service) <= 5 + 2  # at most api.concurrency after the stop
    assert len(outcome_lines(path)) == len(changes)
    assert result.counts["not-sent"] == len(changes) - len(service) > 0
    assert all(
        x["error"] == "not sent: the apply was stopped (SIGINT)"
        for x in outcome_lines(path)
        if x["outcome"] == "not-sent"
    )


def test_a_stopped_plan_leaves_no_file_and_an_earlier_plan_as_it_was(
    sim: Simulator, tmp_path: Path
) -> None:
    """A plan stopped during its walk raises StopRequestedError and writes neither
    plan.json nor decisions.jsonl (nor their partial files); a plan already at that path,
    and its decisions, are left untouched."""
    out = tmp_path / "plan.json"
    out.write_text("earlier plan\n")
    (tmp_path / "plan.decisions.jsonl").write_text("earlier decisions\n")
    stop = Stop()
    stop.request(signal.SIGINT)

    with client_for(sim, stop=stop) as api, pytest.raises(StopRequestedError):
        make_plan(api, scope_of(tmp_path), plan_path=out, now=NOW)

    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "policies") == [
        "plan.decisions.jsonl",
        "plan.json",
    ]
    assert out.read_text() == "earlier plan\n"
    assert (tmp_path / "plan.decisions.jsonl").read_text() == "earlier decisions\n"


def line(sid: str, **fields: Any) -> ApplyIntent | ApplyOutcome:
    """A destructive journal line of snapshot ``sid``: a shorten from no expiry."""
    return journal_line(
        {
            "projectId": P,
            "clusterId": SMALL,
            "clusterName": "prod-small",
            "snapshotId": sid,
            "action": "shorten",
            "destructive": True,
            "observed": {"doNotDelete": False, "expires": None},
            "body": {"expires": "2026-11-22T12:00:00Z"},
            **fields,
        }
    )


def test_an_intent_without_an_outcome_or_with_a_failure_is_in_doubt() -> None:
    """Undo's reading of a journal: applied is restored; an intent with no outcome, or
    whose outcome is a failure (with no answer, or a 503 that may have followed a try the
    service applied), is in doubt; a change not sent, and a failure with no intent before
    it, are left out."""
    journal = [
        line("applied", intent=True), line("applied", outcome="applied", status=200),
        line("killed", intent=True),
        line("no-answer", intent=True), line("no-answer", outcome="failed", status=None),
        line("retried", intent=True), line("retried", outcome="failed", status=503),
        line("unsent", intent=True), line("unsent", outcome="not-sent"),
        line("never-sent", outcome="failed", status=None),
    ]  # fmt: skip

    found = {r.snapshot_id: r.in_doubt for r in restorations(journal)}

    assert found == {"applied": False, "no-answer": True, "retried": True, "killed": True}


def test_the_report_counts_intents_left_without_an_outcome(tmp_path: Path) -> None:
    """A journal cut by a kill: the report's reading counts as in doubt the intents with
    no outcome and the one that failed (by the rule undo uses), and no intent line as
    unreadable or as an outcome."""
    path = tmp_path / "results.jsonl"
    write_journal(
        path,
        [
            line("a", intent=True), line("a", outcome="applied", status=200),
            line("b", intent=True),
            line("c", intent=True),
            line("d", intent=True), line("d", outcome="failed", status=503),
        ],
    )  # fmt: skip

    outcomes = read_results(path, max_listed=10)

    assert outcomes is not None
    assert (outcomes.in_doubt, outcomes.unreadable, dict(outcomes.counts)) == (
        3,
        0,
        {"applied": 1, "failed": 1},
    )


def test_undo_puts_back_an_in_doubt_change_the_service_applied_and_leaves_one_it_did_not(
    sim: Simulator, tmp_path: Path
) -> None:
    """Two intents without outcomes (a kill -9 while both were on the wire): the one the
    service applied (its state is what the body wrote) is restored; the one it never got
    (still as observed) is unchanged; both are counted in doubt, and the undo journals its
    own intent before its two PATCHes."""
    run_dir = tmp_path / "reports" / "20261121T120000Z-killed00"
    written = {"expires": "2026-11-22T00:00:00Z"}
    with client_for(sim) as api:
        make_plan(api, scope_of(tmp_path), plan_path=run_dir / "plan.json", now=NOW)
        api.patch_snapshot(P, SMALL, "noexpiry", SnapshotPatch.expire_at(NOW + timedelta(hours=12)))
        fresh = {"doNotDelete": False, "expires": "2026-11-23T12:00:00Z"}  # NOW + 2 days
        write_journal(
            run_dir / "results.jsonl",
            [
                line("noexpiry", intent=True, body=written),
                line("fresh", intent=True, observed=fresh, body=written),
            ],
        )

        result = undo_run(
            api, run_dir, reports=tmp_path / "reports", dry_run=False, concurrency=2,
            clock=lambda: NOW,
        )  # fmt: skip
        after = api.get_snapshot(P, SMALL, "noexpiry")

    outcomes = {i.restoration.snapshot_id: i.outcome for i in result.items}
    assert outcomes == {"noexpiry": "restored", "fresh": "unchanged"}
    assert result.in_doubt == 2
    assert (after.do_not_delete, after.expires) == (False, None)
    [intent] = intent_lines(result.run_dir / "results.jsonl")
    assert (intent["snapshotId"], intent["steps"]) == (
        "noexpiry",
        [{"doNotDelete": True}, {"doNotDelete": False}],
    )


def test_a_stopped_undo_finishes_the_restore_it_began_and_starts_no_other(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop right after the first PATCH of a two-step restore (protect, then unprotect:
    the only way to drop an expiry): its second PATCH still goes, so the snapshot is back
    to no expiry rather than left protected; the other restores are not-sent, and the
    undo says which signal stopped it."""
    run_dir = tmp_path / "reports" / "20261121T120000Z-applied0"
    shortened = {"expires": "2026-11-22T12:00:00Z"}
    stop = Stop()
    with client_for(sim, stop=stop) as api:
        make_plan(api, scope_of(tmp_path), plan_path=run_dir / "plan.json", now=NOW)
        lines = [line("noexpiry", outcome="applied", status=200, body=shortened)]
        for sid in ("big0000", "big0001", "big0002"):
            before = api.get_snapshot(P, BIG, sid).expires
            assert before is not None  # the fleet's big snapshots all expire
            observed = {"doNotDelete": False, "expires": format_timestamp(before)}
            lines.append(
                line(sid, clusterId=BIG, outcome="applied", observed=observed, body=shortened)
            )
        for entry in lines:
            expires = parse_timestamp(shortened["expires"])
            api.patch_snapshot(
                P, entry["clusterId"], entry["snapshotId"], SnapshotPatch.expire_at(expires)
            )
        write_journal(run_dir / "results.jsonl", lines)
        sent: list[tuple[str, dict[str, Any]]] = []
        real = OpsManagerClient.patch_snapshot

        def stopping(self: OpsManagerClient, *args: Any) -> Any:
            answer = real(self, *args)
            sent.append((args[2], args[3].to_api()))
            stop.request(signal.SIGINT)
            return answer

        monkeypatch.setattr(OpsManagerClient, "patch_snapshot", stopping)
        result = undo_run(
            api, run_dir, reports=tmp_path / "reports", dry_run=False, concurrency=1,
            clock=lambda: NOW,
        )  # fmt: skip
        monkeypatch.undo()
    with client_for(sim) as api:
        after = api.get_snapshot(P, SMALL, "noexpiry")

    outcomes = {i.restoration.snapshot_id: i.outcome for i in result.items}
    assert sent == [("noexpiry", {"doNotDelete": True}), ("noexpiry", {"doNotDelete": False})]
    assert (after.do_not_delete, after.expires) == (False, None)
    assert outcomes == {
        "noexpiry": "restored",
        "big0000": "not-sent",
        "big0001": "not-sent",
        "big0002": "not-sent",
    }
    assert result.interrupted == "SIGINT"
    assert result.document["interrupted"] == "SIGINT"


def test_a_stop_after_the_last_patch_skips_the_audit_alerts_and_says_the_run_stopped(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop that comes once every change is sent, as the run turns to acknowledging its
    audit alerts: no alert is acknowledged, nothing more is sent, and the run still says
    it was stopped (interrupted.json, the result), so its reports are written."""
    stop = Stop()
    real = OpsManagerClient.list_alerts
    calls: list[str] = []

    def stopping(self: OpsManagerClient, *args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        if len(calls) == 2:  # the survey's, then the acknowledgement's
            stop.request(signal.SIGTERM)
        return real(self, *args, **kwargs)

    with client_for(sim, stop=stop) as api:
        monkeypatch.setattr(OpsManagerClient, "list_alerts", stopping)
        scope = Scope(
            policies_file(tmp_path),
            [ProjectTargets(P)],
            concurrency=2,
            acknowledge_audit_alerts=True,
        )
        result = run_job(
            api, scope, reports=tmp_path / "reports", dry_run=False, clock=lambda: NOW
        )  # fmt: skip

    interrupted = json.loads((result.run_dir / "interrupted.json").read_text())
    assert result.applied is not None
    assert result.interrupted == "SIGTERM"
    assert result.acknowledged == []
    assert "not-sent" not in result.applied.counts
    assert (interrupted["step"], interrupted["sent"]) == ("apply", True)
    assert calls == [P, P]
    assert [p for p in sim.admin("patches")["patches"] if p["kind"] != "snapshot"] == []
