"""Undo against the simulator: a bad run taken back in full, what changed since left alone,
dry runs that send nothing, and the folders undo refuses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from retention.api.client import OpsManagerClient
from retention.apply.applying import RunResult
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.snapshot import SnapshotPatch
from retention.errors import ApiError, UsageError
from retention.library.changing import run_job
from retention.runfolder.folder import RunFolder
from retention.simulator.server import Simulator
from retention.undo.restoring import UndoResult, undo_run
from tests.support.journal import intent_lines, outcome_lines
from tests.support.simfleet import BIG, NOW, SHARDED, SMALL, P, client_for

# Keeps one snapshot a cluster and lifts every doNotDelete: what a typo in production does.
BAD_POLICY = """\
name: typo
match: {{clusters: [{clusters}]}}
keep: {{last: 1}}
release_protection: true
grace: 24h
safety: {{min_keep: 1, max_expire_fraction: 1.0, hold_on_alerts: []}}
"""
# The big cluster's thousand PATCHes make a run slow: only the first test needs it.
SMALL_ONES = "prod-small, prod-sharded"
CLUSTERS = (BIG, SMALL, SHARDED)


@pytest.fixture
def api(sim: Simulator) -> Iterator[OpsManagerClient]:
    """A client for the simulator."""
    with client_for(sim) as client:
        yield client


def states(api: OpsManagerClient) -> dict[str, tuple[bool, Any]]:
    """Every cluster snapshot's doNotDelete and expires as the API shows them now."""
    return {
        s.id: (s.do_not_delete, s.expires)
        for cluster in CLUSTERS
        for s in api.list_snapshots(P, cluster)
    }


def bad_run(api: OpsManagerClient, tmp_path: Path, clusters: str = SMALL_ONES) -> RunResult:
    """The whole job with the bad policy on ``clusters``, applied as of NOW."""
    policy = tmp_path / "typo.yaml"
    policy.write_text(BAD_POLICY.format(clusters=clusters))
    scope = Scope(load_policies(policy), [ProjectTargets(P)], concurrency=4)
    return run_job(api, scope, reports=tmp_path / "reports", dry_run=False, clock=lambda: NOW)


def take_back(
    api: OpsManagerClient, run_dir: Path, tmp_path: Path, *, dry_run: bool = False, hours: int = 1
) -> UndoResult:
    """Undo the run in ``run_dir``, ``hours`` after NOW."""
    return undo_run(
        api,
        run_dir,
        reports=tmp_path / "reports",
        dry_run=dry_run,
        concurrency=4,
        clock=lambda: NOW + timedelta(hours=hours),
    )


def snapshot_patches(sim: Simulator) -> list[dict[str, Any]]:
    """The simulator's log of snapshot PATCHes, in order."""
    return [p for p in sim.admin("patches")["patches"] if p["kind"] == "snapshot"]


def test_undo_puts_every_snapshot_of_a_bad_run_back_as_it_was(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """After a run that shortened, deleted and unprotected a thousand snapshots, undo leaves
    each of them with the state it had before the run (per the simulator's PATCH log, its
    first "before" is its last "after"), and only what the run lengthened stays longer."""
    before = states(api)
    run = bad_run(api, tmp_path, "prod-*")
    assert states(api) != before

    destructive = {
        line["snapshotId"]
        for line in map(orjson.loads, (run.run_dir / "results.jsonl").read_bytes().splitlines())
        if line["destructive"]
    }

    result = take_back(api, run.run_dir, tmp_path)

    after = states(api)
    assert {sid: after[sid] for sid in destructive} == {sid: before[sid] for sid in destructive}
    # What the run only lengthened keeps its longer expiry: undoing it would shorten.
    lengthened = {sid for sid in after if after[sid] != before[sid]}
    assert lengthened == {"fresh", "shard-ok"}
    assert all(after[sid][1] > before[sid][1] for sid in lengthened)
    assert result.counts == {"restored": len(destructive)}
    assert not result.failed
    first: dict[str, Any] = {}
    last: dict[str, Any] = {}
    for patch in snapshot_patches(sim):
        if patch["snapshotId"] in destructive:
            first.setdefault(patch["snapshotId"], patch["before"])
            last[patch["snapshotId"]] = patch["after"]
    assert len(first) == len(destructive) > 1000
    assert all(first[sid] == last[sid] for sid in first)


def test_a_snapshot_without_expiry_gets_none_back_through_protect_then_unprotect(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """The API drops an expiry only on doNotDelete: true, so undo sends that and then
    doNotDelete: false; a snapshot whose protection the run lifted is protected again."""
    run = bad_run(api, tmp_path)
    sent_by_run = len(snapshot_patches(sim))

    take_back(api, run.run_dir, tmp_path)

    undo = snapshot_patches(sim)[sent_by_run:]
    bodies = {
        sid: [p["body"] for p in undo if p["snapshotId"] == sid] for sid in ("noexpiry", "held")
    }
    assert bodies == {
        "noexpiry": [{"doNotDelete": True}, {"doNotDelete": False}],
        "held": [{"doNotDelete": True}],
    }
    now = {s.id: s for s in api.list_snapshots(P, SMALL)}
    assert (now["noexpiry"].do_not_delete, now["noexpiry"].expires) == (False, None)
    assert now["held"].do_not_delete is True


def test_snapshots_changed_or_deleted_since_the_run_are_reported_and_not_touched(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """A snapshot someone protected since the run is stale, one the service deleted is gone:
    both are in the result with the reason, and no PATCH is sent for either."""
    run = bad_run(api, tmp_path)
    api.patch_snapshot(P, SMALL, "held", SnapshotPatch.expire_at(NOW + timedelta(days=90)))
    assert sim.app is not None
    with sim.app.lock:
        sim.app.fleet.projects[P].clusters[SMALL].remove("noexpiry")
    sent_before_undo = len(snapshot_patches(sim))

    result = take_back(api, run.run_dir, tmp_path)

    outcomes = {item.restoration.snapshot_id: item for item in result.items}
    assert outcomes["held"].outcome == "stale"
    assert "changed since the run" in outcomes["held"].reason
    assert outcomes["noexpiry"].outcome == "gone"
    assert snapshot_patches(sim)[sent_before_undo:] == []
    assert api.get_snapshot(P, SMALL, "held").expires == NOW + timedelta(days=90)
    assert result.failed
    assert result.counts["stale"] == result.counts["gone"] == 1


def test_an_undo_after_the_written_expiry_passed_leaves_the_snapshot_alone(
    api: OpsManagerClient, tmp_path: Path
) -> None:
    """Past the grace window the API no longer edits the expiry: undo says expired."""
    run = bad_run(api, tmp_path)

    result = take_back(api, run.run_dir, tmp_path, dry_run=True, hours=25)

    assert set(result.counts) == {"expired"}
    assert result.failed


def test_a_dry_run_undo_sends_nothing_and_says_what_it_would_put_back(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """undo --dry-run reads the snapshots, sends no PATCH, and counts would-restore."""
    run = bad_run(api, tmp_path)
    sent = len(snapshot_patches(sim))

    result = take_back(api, run.run_dir, tmp_path, dry_run=True)

    assert len(snapshot_patches(sim)) == sent
    assert set(result.counts) == {"would-restore"}
    assert not result.failed


def test_a_second_undo_finds_everything_already_back_and_sends_nothing(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """Undoing the same run twice is harmless: the second finds every snapshot unchanged."""
    run = bad_run(api, tmp_path)
    first = take_back(api, run.run_dir, tmp_path)
    sent = len(snapshot_patches(sim))

    second = take_back(api, run.run_dir, tmp_path, hours=2)

    assert len(snapshot_patches(sim)) == sent
    assert second.counts == {"unchanged": first.counts["restored"]}
    assert not second.failed


def test_an_undo_is_a_run_with_its_own_folder_journal_and_undo_file(
    api: OpsManagerClient, tmp_path: Path
) -> None:
    """The undo writes undo.json naming the run it undid and results.jsonl with a line per
    snapshot, in a run folder of its own."""
    run = bad_run(api, tmp_path)

    result = take_back(api, run.run_dir, tmp_path)

    assert result.run_dir != run.run_dir
    assert result.run_dir.parent == run.run_dir.parent
    document = orjson.loads((result.run_dir / "undo.json").read_bytes())
    assert document["format"] == "retention-undo/v1"
    assert document["undoOf"] == str(run.run_dir)
    assert len(document["items"]) == len(result.items)
    journal = outcome_lines(result.run_dir / "results.jsonl")
    assert len(journal) == len(result.items)
    line = journal[0]
    assert line["outcome"] == "restored"
    assert line["before"] != line["written"]
    # Its PATCHes were journalled ahead, the two steps of a restore in one intent.
    steps = {x["snapshotId"]: x["steps"] for x in intent_lines(result.run_dir / "results.jsonl")}
    assert steps == {x["snapshotId"]: x["sent"] for x in journal if x["outcome"] == "restored"}


def test_an_undo_of_an_undo_is_refused_before_any_request(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """Undoing an undo would redo the bad run: it is a usage error and nothing is sent."""
    run = bad_run(api, tmp_path)
    undone = take_back(api, run.run_dir, tmp_path)
    sent = len(snapshot_patches(sim))

    with pytest.raises(UsageError, match="is an undo: an undo is not undone"):
        take_back(api, undone.run_dir, tmp_path, hours=2)

    assert len(snapshot_patches(sim)) == sent


def test_folders_that_are_no_run_of_this_service_are_refused(
    api: OpsManagerClient, tmp_path: Path
) -> None:
    """A missing folder, a folder without a plan, a run stopped before its plan was
    written, and a run against another base URL are usage errors that name the folder."""
    run = bad_run(api, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    plan = (run.run_dir / "plan.json").read_bytes()
    base_url = orjson.dumps(orjson.loads(plan)["baseUrl"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "plan.json").write_bytes(
        plan.replace(base_url, b'"https://elsewhere.example/api/public/v1.0"', 1)
    )
    (other / "results.jsonl").write_bytes((run.run_dir / "results.jsonl").read_bytes())
    stopped = RunFolder(tmp_path / "stopped").mark_interrupted("run", "SIGTERM", NOW, NOW).parent

    for folder, message in [
        (tmp_path / "missing", "no such run folder"),
        (empty, "is not a run folder: it has no plan.json"),
        (stopped, "is a run that SIGTERM stopped while planning: no plan was written"),
        (other, "was a run against https://elsewhere.example"),
    ]:
        with pytest.raises(UsageError, match=message):
            take_back(api, folder, tmp_path)


def test_a_dry_run_is_no_apply_to_undo(api: OpsManagerClient, tmp_path: Path) -> None:
    """A dry run sent nothing: undo of its folder is a usage error that says it holds a
    plan, not an apply, and that no apply used its plan."""
    policy = tmp_path / "typo.yaml"
    policy.write_text(BAD_POLICY.format(clusters=SMALL_ONES))
    scope = Scope(load_policies(policy), [ProjectTargets(P)], concurrency=2)
    run = run_job(api, scope, reports=tmp_path / "reports", dry_run=True, clock=lambda: NOW)

    with pytest.raises(UsageError) as refused:
        take_back(api, run.run_dir, tmp_path)

    # run_job writes no reports (the command's lifecycle does): a plan, by its files.
    assert str(refused.value) == (
        f"{run.run_dir} is a plan (`retention plan`, or a dry run without reports), not an "
        "apply: nothing was sent from it, so it has nothing to undo. No run folder in "
        f"{tmp_path / 'reports'} applied this plan (an apply copies the plan into a folder "
        "of its own, with the journal undo reads)"
    )


def test_a_failed_restore_names_its_patch_in_the_apis_words(
    api: OpsManagerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATCH of undo the API refuses is the item's failure, and its reason shows the body
    as JSON (``{"expires": ...}``, ``{"doNotDelete": true}``), never in Python's spelling."""
    run = bad_run(api, tmp_path)

    def refused(*_args: Any) -> Any:
        raise ApiError("refused by the test", endpoint="PATCH snapshot")

    monkeypatch.setattr(OpsManagerClient, "patch_snapshot", refused)
    result = take_back(api, run.run_dir, tmp_path)

    reasons = {item.restoration.snapshot_id: item.reason for item in result.items}
    assert {item.outcome for item in result.items} == {"failed"}
    assert reasons["noexpiry"] == (
        'PATCH {"doNotDelete": true} failed: PATCH snapshot: refused by the test'
    )
    for reason in reasons.values():
        assert reason.startswith('PATCH {"')
        assert "{'" not in reason
        assert "True" not in reason
