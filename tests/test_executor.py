"""Applying plans against the simulator: the intended end state, dry runs that send nothing,
idempotence, compare-and-swap, holds, the journal, faults, saved-plan checks, the lock."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from retention.api.client import OpsManagerClient
from retention.api.transport import RetryPolicy
from retention.apply.applying import RunResult, apply_saved
from retention.apply.executor import Journal, apply_plan
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.guard import Trusted, index_of
from retention.core.planfile import Change, ListName
from retention.core.policy.loader import PolicySet
from retention.core.snapshot import SnapshotPatch
from retention.errors import LockHeldError, PlanFileError, UsageError
from retention.library.changing import run_job
from retention.library.requests import ApplyRequest
from retention.library.stages import Quiet
from retention.ops.lock import run_lock
from retention.plan.planner import PlanResult, make_plan
from retention.runfolder.planread import open_plan
from retention.runfolder.planwrite import CLUSTERS_CLOSE, CLUSTERS_OPEN
from retention.simulator.server import Simulator
from tests.support.client import fixed_clock
from tests.support.journal import outcome_lines
from tests.support.planfiles import decision_lines, write_plan_files
from tests.support.simfleet import BIG, NOW, SHARDED, SMALL, P, client_for, running

POLICY = """\
name: everything
keep:
  last: 3
  daily: 7
protect:
  yearly: 1
safety:
  min_keep: 2
  max_expire_fraction: {fraction}
"""
PATIENT = RetryPolicy(retries=8, backoff_factor=0.0, jitter=0.0, max_total_seconds=60)


def policies(tmp_path: Path, fraction: float = 1.0) -> PolicySet:
    """One policy for every cluster."""
    path = tmp_path / f"policy-{fraction}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(POLICY.format(fraction=fraction))
    return load_policies(path)


@pytest.fixture
def api(sim: Simulator) -> Iterator[OpsManagerClient]:
    """A patient client for the simulator."""
    with client_for(sim, retry=PATIENT) as client:
        yield client


def job(
    api: OpsManagerClient, tmp_path: Path, *, dry_run: bool = False, fraction: float = 1.0
) -> RunResult:
    """Run the whole job as of NOW."""
    scope = Scope(
        policies(tmp_path, fraction), [ProjectTargets(P)], schedule="0 3 * * *", concurrency=4
    )
    return run_job(api, scope, reports=tmp_path / "reports", dry_run=dry_run, clock=lambda: NOW)


def plan(api: OpsManagerClient, tmp_path: Path, fraction: float = 1.0) -> PlanResult:
    """A plan of the whole project as of NOW, to tmp_path/run/plan.json."""
    scope = Scope(policies(tmp_path, fraction), [ProjectTargets(P)], concurrency=2)
    return make_plan(api, scope, plan_path=tmp_path / "run" / "plan.json", now=NOW)


def apply_file(
    api: OpsManagerClient, plan_path: Path, reports: Path, max_age: timedelta
) -> RunResult:
    """Apply the saved plan at ``plan_path`` as of NOW, into a run folder under ``reports``."""
    saved = ApplyRequest(plan_path, max_age).saved()
    return apply_saved(
        api, saved, reports=reports, concurrency=2, clock=lambda: NOW, listener=Quiet()
    )


def entries(plan: Path, name: ListName = "changes") -> list[Change]:
    """A list of a written plan file (changes, held or advisory)."""
    return list(open_plan(plan).read_list(name))


def state(api: OpsManagerClient, cluster: str) -> dict[str, tuple[bool, str | None]]:
    """Each snapshot's doNotDelete and expires as the API shows them now."""
    return {
        s.id: (s.do_not_delete, s.expires.isoformat() if s.expires else None)
        for s in api.list_snapshots(P, cluster)
    }


def test_run_reaches_the_planned_state(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """After a run, every applied change shows in the API exactly as its body said."""
    result = job(api, tmp_path)
    changes = entries(result.run_dir / "plan.json")

    assert result.applied is not None
    assert result.applied.counts.get("applied", 0) == len(changes) > 0
    after = {**state(api, BIG), **state(api, SMALL), **state(api, SHARDED)}
    for change in changes:
        dnd, expires = after[change["snapshotId"]]
        body = change["body"]
        assert dnd == body.get("doNotDelete", False)
        if "expires" in body and not dnd:
            assert expires is not None
            assert expires == body["expires"].isoformat()
    log = sim.admin("patches")["patches"]
    assert len(log) == len(changes)
    assert all(entry["status"] == 200 for entry in log)


def test_dry_run_sends_no_patch(sim: Simulator, api: OpsManagerClient, tmp_path: Path) -> None:
    """Invariant 3: a dry run plans changes but sends no PATCH at all."""
    result = job(api, tmp_path, dry_run=True)

    assert entries(result.run_dir / "plan.json")
    assert result.applied is None
    assert sim.admin("patches") == {"patches": []}
    assert "PATCH" not in json.dumps(sim.admin("counters")["byEndpoint"])


def test_second_run_changes_nothing(sim: Simulator, api: OpsManagerClient, tmp_path: Path) -> None:
    """Invariant 8 end to end: a second run on the resulting state plans and sends nothing."""
    job(api, tmp_path)
    sent = len(sim.admin("patches")["patches"])

    second = job(api, tmp_path)

    assert entries(second.run_dir / "plan.json") == []
    assert len(sim.admin("patches")["patches"]) == sent


def test_stale_changes_are_skipped(sim: Simulator, api: OpsManagerClient, tmp_path: Path) -> None:
    """A snapshot changed by someone else after the plan is skipped as stale, not overwritten."""
    planned = plan(api, tmp_path)
    changes = entries(planned.plan.path)
    victim = next(c for c in changes if c["action"] == "shorten")
    api.patch_snapshot(P, victim["clusterId"], victim["snapshotId"], SnapshotPatch.protect())
    journal = Journal(tmp_path / "run" / "results.jsonl", lambda: NOW)

    result = apply_plan(
        api,
        changes,
        Trusted.made(planned.plan.head, index_of(planned.plan.read_clusters())),
        journal,
        concurrency=2,
    )
    journal.close()

    assert result.counts["stale"] == 1
    assert result.counts["applied"] == len(changes) - 1
    assert api.get_snapshot(P, victim["clusterId"], victim["snapshotId"]).do_not_delete is True
    lines = outcome_lines(tmp_path / "run" / "results.jsonl")
    [stale] = [x for x in lines if x["outcome"] == "stale"]
    assert stale["snapshotId"] == victim["snapshotId"]
    assert "state changed since the plan" in stale["error"]


def test_held_cluster_gets_no_destructive_change(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """With the fraction gate holding, destructive changes are not sent; protect still is."""
    result = job(api, tmp_path, fraction=0.01)

    log = sim.admin("patches")["patches"]
    assert result.held
    assert entries(result.run_dir / "plan.json", "held")
    assert log
    assert all(entry["body"] in ({"doNotDelete": True},) or entry["after"]["expires"] is None
               or entry["body"].get("expires", "") > "2026-11-23" for entry in log)  # fmt: skip


def test_executor_refuses_destructive_changes_of_a_held_cluster_whatever_the_plan_says(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """A plan file edited to put a held cluster's shorten into `changes` still sends nothing."""
    planned = plan(api, tmp_path, 0.01)
    held = entries(planned.plan.path, "held")
    doctored = entries(planned.plan.path) + [_without_held(c) for c in held]
    doctored.sort(key=lambda c: (c["projectId"], c["clusterId"]))
    journal = Journal(tmp_path / "run" / "results.jsonl", lambda: NOW)

    result = apply_plan(
        api,
        doctored,
        Trusted.made(planned.plan.head, index_of(planned.plan.read_clusters())),
        journal,
        concurrency=2,
    )
    journal.close()

    assert result.counts["held"] == len(held) > 0
    destructive = [
        e for e in sim.admin("patches")["patches"] if e["body"].get("expires", "9") < "2026-11-23"
    ]
    assert destructive == []


def _without_held(change: Change) -> Change:
    unheld = dict(change)
    del unheld["held"]
    return unheld  # type: ignore[return-value] # a Change without its optional member


def test_applying_the_same_plan_twice_sends_nothing_the_second_time(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """Compare-and-swap makes a re-apply of the same plan skip everything already applied:
    each change is unchanged, since its snapshot already holds what the change writes."""
    planned = plan(api, tmp_path)
    reports = tmp_path / "reports"
    first = apply_file(api, planned.plan.path, reports, timedelta(hours=1))
    sent = len(sim.admin("patches")["patches"])

    second = apply_file(api, planned.plan.path, reports, timedelta(hours=1))

    assert first.applied is not None
    assert second.applied is not None
    assert first.applied.counts["applied"] == sent > 0
    assert second.applied.counts == {"unchanged": sent}
    assert first.run_dir != second.run_dir
    assert len(sim.admin("patches")["patches"]) == sent


def test_faults_do_not_change_the_end_state(tmp_path: Path) -> None:
    """With 503s, 429s, resets and stale nonces injected, the end state equals a clean run's."""
    ends = []
    for spec in ("", "503=0.2,429=0.1,reset=0.1,stale=0.1,retry_after=0"):
        with running(faults=spec or None, seed=5) as sim, client_for(sim, retry=PATIENT) as api:
            folder = tmp_path / (spec[:3] or "clean")
            job(api, folder)
            job(api, folder)  # "within two runs"
            ends.append({**state(api, BIG), **state(api, SMALL)})
            injected = sim.admin("counters")["faultsInjected"]
    assert ends[0] == ends[1]
    assert sum(injected.values()) > 0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"format": "retention-plan/v0"}, "not a retention-plan/v2 plan"),
        ({"format": "retention-plan/v1"}, "of format retention-plan/v1, written by an older"),
        ({"baseUrl": "https://elsewhere.example/api/public/v1.0"}, "was made against"),
        (
            {"createdAt": "2026-11-19T12:00:00Z", "evaluatedAt": "2026-11-19T12:00:00Z"},
            "old, more than --max-age",
        ),
        ({"evaluatedAt": "2026-11-19T12:00:00Z"}, "evaluated at 2026-11-19T12:00:00Z but made"),
        ({"whatIf": True}, "what-if plan, made with --at"),
    ],
)
def test_saved_plans_that_cannot_be_applied_safely_are_refused(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path, edit: dict[str, object], message: str
) -> None:
    """apply refuses another format, another API, or a plan older than max-age; sends nothing."""
    planned = plan(api, tmp_path)
    if edit.get("format") == "retention-plan/v1":
        # A v1 plan is one JSON document, as the older retentions wrote it.
        document = json.loads(planned.plan.path.read_text())
        planned.plan.path.write_text(json.dumps({**document, **edit}))
    else:
        edit_head(planned.plan.path, edit)

    with pytest.raises(UsageError, match=message):
        apply_file(api, planned.plan.path, tmp_path / "reports", timedelta(hours=24))

    assert sim.admin("patches") == {"patches": []}


def edit_head(plan_path: Path, edit: Mapping[str, object]) -> None:
    """Set members of the head of the plan at ``plan_path`` (its first line), the plan still
    in the layout retention writes, its clusters and decisions as they were."""
    first, rest = plan_path.read_bytes().split(b"\n", 1)
    head = orjson.loads(first + CLUSTERS_CLOSE)
    del head["clusters"]
    edited = orjson.dumps({**head, **edit})
    plan_path.write_bytes(edited[:-1] + b"," + CLUSTERS_OPEN + b"\n" + rest)


def test_a_plan_written_by_an_older_retention_is_refused_before_any_request(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """A plan of format v1 (its lists in plan.json, its decisions plain in decisions.jsonl)
    is refused, by the reader and by apply, with the advice to plan again, and no request
    reaches the API."""
    planned = plan(api, tmp_path)
    plan_path = planned.plan.path
    head = json.loads(plan_path.read_bytes())
    lists = {name: entries(plan_path, name) for name in ("changes", "held", "advisory")}
    assert lists["changes"]  # a v1 plan with something to send
    lines = decision_lines(plan_path)
    del head["decisions"]
    old = {**head, "format": "retention-plan/v1", **lists}
    plan_path.write_bytes(orjson.dumps(old, option=orjson.OPT_INDENT_2 | orjson.OPT_UTC_Z))
    (tmp_path / "run" / "decisions.jsonl").write_bytes(b"".join(lines))
    (tmp_path / "run" / "decisions.jsonl.zst").unlink()
    with pytest.raises(PlanFileError, match=r"of format retention-plan/v1, written by an older"):
        open_plan(plan_path)  # this version reads v2 plans only
    assert sim.admin("counters")["requests"] > 0

    refused_before_any_request(
        sim, api, plan_path, tmp_path, "of format retention-plan/v1, written by an older"
    )


def test_a_plan_with_another_plans_decisions_is_refused_before_any_request(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """When decisions.jsonl.zst is not the one plan.json names (its sha256 differs: here
    the record of a snapshot left as it is says another size, so every change it holds is
    one apply could send), apply refuses the plan and sends nothing."""
    planned = plan(api, tmp_path)
    plan_path = planned.plan.path
    head = json.loads(plan_path.read_bytes())
    records = [json.loads(line) for line in decision_lines(plan_path)]
    [first] = [r for r in records if r["action"] == "none"][:1]
    first["storageBytes"] += 1
    other = tmp_path / "other" / "plan.json"
    other.parent.mkdir()
    write_plan_files(other, head, records)
    decisions = plan_path.with_name("decisions.jsonl.zst")
    decisions.write_bytes(other.with_name("decisions.jsonl.zst").read_bytes())

    refused_before_any_request(
        sim, api, plan_path, tmp_path, r"not the decisions of plan.json .*: plan again"
    )


def refused_before_any_request(
    sim: Simulator, api: OpsManagerClient, plan_path: Path, tmp_path: Path, message: str
) -> None:
    """Apply ``plan_path``: it must be refused with ``message`` (exit 2) and no request may
    reach the simulator."""
    requests = sim.admin("counters")["requests"]

    with pytest.raises(PlanFileError, match=message):
        apply_file(api, plan_path, tmp_path / "reports", timedelta(hours=24))

    assert sim.admin("counters")["requests"] == requests
    assert sim.admin("patches") == {"patches": []}


def test_a_second_run_is_refused_while_the_lock_is_held(tmp_path: Path) -> None:
    """While one run holds the reports folder's lock, another gets LockHeldError (exit 4)."""
    with (
        run_lock(tmp_path, clock=fixed_clock),
        pytest.raises(LockHeldError, match="another retention run") as info,
        run_lock(tmp_path, clock=fixed_clock),
    ):
        pass

    assert info.value.exit_code == 4
    with run_lock(tmp_path, clock=fixed_clock):  # released when the first holder let go
        pass


def test_own_audit_alerts_are_acknowledged_and_holds_never(
    sim: Simulator, api: OpsManagerClient, tmp_path: Path
) -> None:
    """With acknowledge_own_audit_alerts, the expiry-audit alerts this run caused are
    acknowledged for 24 hours naming the run; the OPEN hold alert stays untouched."""
    scope = Scope(
        policies(tmp_path), [ProjectTargets(P)], concurrency=2, acknowledge_audit_alerts=True
    )
    result = run_job(api, scope, reports=tmp_path / "reports", dry_run=False, clock=lambda: NOW)

    alerts = {a.id: a for a in api.list_alerts(P)}
    audits = [a for a in alerts.values() if a.event_type_name.endswith("EXPIRY_UPDATED_AUDIT")]
    assert sorted(result.acknowledged) == sorted(a.id for a in audits)
    assert audits
    for alert in audits:
        assert alert.acknowledged_until == NOW + timedelta(hours=24)
        assert f"retention run {result.run_id}" in (alert.acknowledgement_comment or "")
    assert alerts["a-open"].acknowledged_until is None  # BAD_CLUSTERSHOTS: a hold


def test_compare_and_swap_reads_one_by_one_when_the_list_moves(tmp_path: Path) -> None:
    """When the cluster's list drifts while the executor re-reads it, the changes are checked
    with GETs instead of failing, and applied."""
    with running() as sim, client_for(sim, retry=PATIENT) as api:
        planned = plan(api, tmp_path)
        sim.admin("faults", {"spec": "drift=1", "seed": 1})
        journal = Journal(tmp_path / "run" / "results.jsonl", lambda: NOW)
        changes = entries(planned.plan.path)

        result = apply_plan(
            api,
            changes,
            Trusted.made(planned.plan.head, index_of(planned.plan.read_clusters())),
            journal,
            concurrency=1,
        )
        journal.close()
        gets = sim.admin("counters")["byEndpoint"].get(
            "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}", 0
        )

    assert result.counts.get("failed", 0) == 0
    assert result.counts["applied"] + result.counts.get("stale", 0) == len(changes)
    assert gets > 100  # the big cluster (3 pages) drifted and was read one by one
