"""`retention apply` as a new user runs it, against the simulator: the five ways a plan file
could make apply break our first promise (nothing deleted that the policies keep), each
reproduced end to end. The simulator's PATCH log is the witness of what was sent."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from retention import cli
from retention.api.client import OpsManagerClient
from retention.apply.executor import Journal, apply_plan
from retention.core.guard import Trusted, index_of
from retention.ops.clock import Clock
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator
from tests.support.journal import intent_lines, outcome_lines
from tests.support.planfiles import decision_lines, write_plan_files
from tests.support.simfleet import NOW, SMALL, P, client_for, clock_at, running, small_fleet

# The sim fixture (tests/support/simfleet.running) freezes the simulator's clock at NOW, and the
# product is given that clock: apply checks plans against the product's clock.
POLICY = """\
name: everything
keep:
  last: 2
release_protection: {release}
safety:
  min_keep: 1
  max_expire_fraction: 1.0
"""


def configure(folder: Path, base_url: str, *, release: bool = False) -> None:
    """retention.yaml and one policy in ``folder``; reports go to ``folder/reports``."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "everything.yaml").write_text(
        POLICY.format(release=str(release).lower())
    )
    (folder / "retention.yaml").write_text(
        f"api:\n  base_url: {base_url}\n  concurrency: 4\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
        "reports:\n  dir: reports/\n"
    )


def retention(*args: str, clock: Clock) -> int:
    """Run the command line as a user would, in the current folder, at ``clock``'s time."""
    return cli.main(list(args), clock=clock)


def is_change(record: dict[str, Any]) -> bool:
    """Whether a decision record is an entry of the plan's ``changes`` (a patch, neither
    held nor advisory)."""
    listed = record["action"] != "none" and record["body"] is not None
    return listed and not record["held"] and not record["advisory"]


def patches(sim: Simulator) -> list[dict[str, Any]]:
    """The snapshot PATCHes the simulator received."""
    return [p for p in sim.admin("patches")["patches"] if p["kind"] == "snapshot"]


# In the past the open alert holds prod-small's shortens (exit 3); 30 days on, every
# snapshot of prod-small is past its expiry and the alert has nothing to hold (exit 0).
@pytest.mark.parametrize(("days", "planned"), [(-21, 3), (30, 0)], ids=["past", "future"])
def test_a_what_if_plan_is_refused_and_nothing_is_sent(
    sim: Simulator, folder: Path, days: int, planned: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan made with --at (past or future) is a what-if: apply refuses it with exit 2,
    says what it is and what to do instead, and sends nothing."""
    configure(folder, sim.base_url)
    at = (NOW + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert retention("plan", "--at", at, "--out", "whatif.json", clock=sim.clock.now) == planned
    whatif = open_plan(folder / "whatif.json")
    assert whatif.head["whatIf"] is True
    assert list(whatif.read_list("changes")), "the what-if plan has changes"
    capsys.readouterr()

    code = retention("apply", "whatif.json", clock=sim.clock.now)

    err = capsys.readouterr().err
    assert code == 2
    assert "what-if plan, made with --at" in err
    assert "Run `retention plan` (without --at) and apply that" in err
    assert patches(sim) == []
    assert not [d for d in (folder / "reports").glob("*") if d.is_dir()]


def test_a_plan_older_than_max_age_by_the_shared_clock_is_refused(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the product's clock moved on two hours from the plan, apply --max-age 1h
    refuses it (exit 2, its age named) and sends nothing; half an hour on, it applies."""
    configure(folder, sim.base_url)
    assert (
        retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
    )  # the open alert holds prod-small
    capsys.readouterr()

    stale = retention(
        "apply", "plan.json", "--max-age", "1h", clock=clock_at(NOW + timedelta(hours=2))
    )
    err = capsys.readouterr().err
    sent_when_stale = patches(sim)
    fresh = retention(
        "apply", "plan.json", "--max-age", "1h", clock=clock_at(NOW + timedelta(minutes=30))
    )

    assert stale == 2
    assert "the plan is 2.0h old, more than --max-age 1.0h" in err
    assert sent_when_stale == []
    assert fresh == 3
    assert patches(sim)


def test_apply_of_a_plan_with_any_name_writes_its_own_run_folder(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """apply PLAN takes any file name: the run folder under reports.dir gets a copy of the
    plan, its decisions, results.jsonl and both reports; the current folder gets nothing."""
    configure(folder, sim.base_url)
    assert (
        retention("plan", "--out", "mine.json", clock=sim.clock.now) == 3
    )  # the open alert holds prod-small
    before = sorted(p.name for p in folder.iterdir())
    capsys.readouterr()

    code = retention("apply", "mine.json", clock=sim.clock.now)

    out = capsys.readouterr().out
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    assert code == 3
    assert sorted(p.name for p in folder.iterdir()) == sorted({*before, "reports"})
    assert "mine.decisions.jsonl.zst" in before
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "decisions.jsonl.zst",
        "plan.json",
        "report.html",
        "report.md",
        "results.jsonl",
    ]
    assert (run_dir / "plan.json").read_bytes() == (folder / "mine.json").read_bytes()
    copied = (run_dir / "decisions.jsonl.zst").read_bytes()
    assert copied == (folder / "mine.decisions.jsonl.zst").read_bytes()
    results = outcome_lines(run_dir / "results.jsonl")
    assert len([r for r in results if r["outcome"] == "applied"]) == len(patches(sim)) > 0
    assert len(intent_lines(run_dir / "results.jsonl")) == len(patches(sim))
    assert f"Run folder: {run_dir}" in out


def test_a_cluster_named_like_a_placeholder_round_trips_through_plan_and_apply(
    folder: Path,
) -> None:
    """A cluster named "@@changes@@" (names come from the API) stays a name: the plan's
    changes read back whole with that name, and apply sends the cluster's changes."""
    fleet = small_fleet(NOW)
    fleet.projects[P].clusters[SMALL].name = "@@changes@@"
    with running(lambda _now: fleet) as sim:
        configure(folder, sim.base_url, release=True)
        assert retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
        plan = json.loads((folder / "plan.json").read_text())
        names = {c["name"] for c in plan["clusters"]}
        changes = list(open_plan(folder / "plan.json").read_list("changes"))

        assert retention("apply", "plan.json", clock=sim.clock.now) == 3

        sent = patches(sim)
    assert "@@changes@@" in names
    assert "changes" not in plan  # the head alone: the changes are in its decisions
    named = sorted(c["snapshotId"] for c in changes if c["clusterName"] == "@@changes@@")
    assert named
    assert sorted(p["snapshotId"] for p in sent if p["clusterId"] == SMALL) == named


def test_a_malformed_entry_refuses_the_whole_plan_before_any_request(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A change whose snapshot id is ".." is exit 2 naming the entry, and no request at all
    reaches the API (not even the first of the other changes)."""
    configure(folder, sim.base_url)
    assert retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
    plan_path = folder / "plan.json"
    records = [json.loads(line) for line in decision_lines(plan_path)]
    # The last change in the decisions file: every other change comes before it.
    last = max(n for n, r in enumerate(records) if is_change(r))
    records[last]["snapshotId"] = ".."
    write_plan_files(plan_path, json.loads(plan_path.read_bytes()), records)
    requests_before = sim.admin("counters")["requests"]
    capsys.readouterr()

    code = retention("apply", "plan.json", clock=sim.clock.now)

    err = capsys.readouterr().err
    entry = f"decisions.jsonl.zst: line {last + 1} (snapshot ..)"
    assert code == 2
    assert f"{entry}: snapshotId: '..' is not an id a plan can carry" in err
    assert sim.admin("counters")["requests"] == requests_before
    assert patches(sim) == []


def test_an_error_in_one_worker_neither_stops_the_others_nor_loses_a_journal_line(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug that raises while one cluster is applied fails that cluster's changes, in the
    journal; every other cluster's changes are applied."""
    folder = tmp_path / "run"
    configure(tmp_path, sim.base_url)
    from retention.config.policyfiles import load_policies  # noqa: PLC0415
    from retention.config.scope import ProjectTargets, Scope  # noqa: PLC0415
    from retention.plan.planner import make_plan  # noqa: PLC0415

    with client_for(sim) as api:
        scope = Scope(load_policies(tmp_path / "policies"), [ProjectTargets(P)], concurrency=2)
        planned = make_plan(api, scope, plan_path=folder / "plan.json", now=NOW)
        changes = list(planned.plan.read_list("changes"))
        real = OpsManagerClient.patch_snapshot
        calls = threading.local()

        def broken(self: OpsManagerClient, project: str, cluster: str, *rest: Any) -> Any:
            if cluster == SMALL:
                calls.seen = True
                raise RuntimeError("a bug")
            return real(self, project, cluster, *rest)

        monkeypatch.setattr(OpsManagerClient, "patch_snapshot", broken)
        journal = Journal(folder / "results.jsonl", lambda: NOW)
        result = apply_plan(
            api,
            changes,
            Trusted.made(planned.plan.head, index_of(planned.plan.read_clusters())),
            journal,
            concurrency=2,
        )
        journal.close()

    lines = outcome_lines(folder / "results.jsonl")
    small = [c for c in changes if c["clusterId"] == SMALL and not c["destructive"]]
    others = [c for c in changes if c["clusterId"] != SMALL]
    assert small
    assert others
    assert len(lines) == len(changes)
    failed = {x["snapshotId"] for x in lines if x["outcome"] == "failed"}
    assert failed == {c["snapshotId"] for c in small}
    assert all("internal error while applying: RuntimeError: a bug" in x["error"]
               for x in lines if x["outcome"] == "failed")  # fmt: skip
    assert result.counts["applied"] == len(others) == len(patches(sim))


def test_a_held_clusters_release_of_a_kept_snapshot_is_one_change_everywhere(
    sim: Simulator, folder: Path
) -> None:
    """In a cluster an alert holds, lifting the hold of a snapshot a rule keeps is not
    destructive: the plan lists it under changes, and apply sends it (it is not reported
    as held); the cluster's shorten stays held."""
    configure(folder, sim.base_url, release=True)
    assert retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
    plan = open_plan(folder / "plan.json")
    changes = {c["snapshotId"]: c for c in plan.read_list("changes")}
    held = {c["snapshotId"]: c for c in plan.read_list("held")}

    assert retention("apply", "plan.json", clock=sim.clock.now) == 3

    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    results = {x["snapshotId"]: x for x in outcome_lines(run_dir / "results.jsonl")}
    assert (changes["held"]["action"], changes["held"]["destructive"]) == ("release", False)
    assert results["held"]["outcome"] == "applied"
    assert (held["noexpiry"]["action"], held["noexpiry"]["destructive"]) == ("shorten", True)
    sent = {p["snapshotId"]: p for p in patches(sim) if p["clusterId"] == SMALL}
    assert sent["held"]["after"]["doNotDelete"] is False
    assert "noexpiry" not in sent


def test_a_reviewed_fraction_hold_is_approved_and_an_alert_hold_is_not(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first run over a long history is held by max_expire_fraction; after review,
    apply --approve CLUSTER sends that cluster's held changes (each with its full grace,
    journalled as approved) and nothing else held; an alert hold refuses approval, saying
    why, and nothing is sent."""
    configure(folder, sim.base_url)
    policy = folder / "policies" / "everything.yaml"
    policy.write_text(
        policy.read_text().replace("max_expire_fraction: 1.0", "max_expire_fraction: 0.1")
    )
    assert retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
    held = list(open_plan(folder / "plan.json").read_list("held"))
    big = [c for c in held if c["clusterName"] == "prod-big"]
    capsys.readouterr()

    refused = retention("apply", "plan.json", "--approve", "prod-small", clock=sim.clock.now)
    err = capsys.readouterr().err
    assert refused == 2
    assert "--approve prod-small: held by alert: OPEN alert BAD_CLUSTERSHOTS" in err
    assert patches(sim) == []

    metrics = folder / "apply.prom"
    code = retention(
        "apply",
        "plan.json",
        "--approve",
        "prod-big",
        "--metrics-file",
        str(metrics),
        clock=sim.clock.now,
    )

    out = capsys.readouterr().out
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    results = outcome_lines(run_dir / "results.jsonl")
    approved = [r for r in results if r["approved"]]
    sent = {p["snapshotId"]: p for p in patches(sim)}
    assert code == 3  # prod-small stays held
    assert len(big) > 100
    assert {r["snapshotId"] for r in approved} == {c["snapshotId"] for c in big}
    assert all(r["outcome"] == "applied" for r in approved)
    assert all(c["snapshotId"] in sent for c in big)
    assert all(
        datetime.fromisoformat(sent[c["snapshotId"]]["body"]["expires"])
        >= NOW + timedelta(hours=24)
        for c in big
    )
    assert not any(c["snapshotId"] in sent for c in held if c["clusterName"] == "prod-small")
    said = f"prod-big, {len(big)} held changes let through ({len(big)} applied)"
    assert f"Approved by --approve: {said}." in out
    page = (run_dir / "report.html").read_text()
    thin = f"{len(big):,}".replace(",", "\u2009")  # report.html groups digits so
    assert f"<b>prod-big</b>, {thin} held changes let through ({thin} applied)" in page
    # The apply's metrics count what was approved, and the storage the plan frees or holds.
    summary = json.loads((folder / "plan.json").read_text())["summary"]
    gauges = {
        s.name: s.value
        for family in text_string_to_metric_families(metrics.read_text())
        for s in family.samples
    }
    assert gauges["retention_changes_approved"] == len(big)
    assert gauges["retention_last_run_exit_code"] == 3
    assert gauges["retention_bytes_held"] == summary["bytesHeld"] > 0
    assert gauges["retention_bytes_given_back"] == summary["bytesGivenBack"]


def test_approving_every_held_cluster_ends_the_hold(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """When --approve-all lets every held cluster through, nothing is held any more: the
    apply exits 0, not 3, and its summary says what was approved and holds nothing (the
    plan itself still records its holds)."""
    configure(folder, sim.base_url)
    policy = folder / "policies" / "everything.yaml"
    policy.write_text(
        policy.read_text().replace("max_expire_fraction: 1.0", "max_expire_fraction: 0.1")
        + "  hold_on_alerts: []\n"
    )
    assert retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
    held = json.loads((folder / "plan.json").read_text())["summary"]["clustersHeld"]
    capsys.readouterr()

    code = retention("apply", "plan.json", "--approve-all", clock=sim.clock.now)

    out = capsys.readouterr().out
    assert held >= 1
    assert code == 0
    assert "Approved by --approve: prod-big, " in out
    assert "Held by safety gates" not in out


def test_a_plan_of_another_url_names_retention_base_url_when_it_overrides(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan made against api.base_url, applied with RETENTION_BASE_URL naming the same
    service by another address: refused (exit 2, nothing sent), the refusal saying the
    address came from the variable that overrides api.base_url."""
    configure(folder, sim.base_url)
    assert retention("plan", "--out", "plan.json", clock=sim.clock.now) == 3
    other = sim.base_url.replace("127.0.0.1", "localhost")
    monkeypatch.setenv("RETENTION_BASE_URL", other)
    capsys.readouterr()

    code = retention("apply", "plan.json", clock=sim.clock.now)

    err = capsys.readouterr().err
    assert code == 2
    assert (
        f"not {other!r} (from RETENTION_BASE_URL, set in the environment where it overrides "
        "api.base_url); plan again against this API"
    ) in err
    assert patches(sim) == []
