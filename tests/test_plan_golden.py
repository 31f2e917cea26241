"""Golden plans, one per scenario folder under tests/scenarios (named for what they show):
the simulator serves the scenario's fleet with its clock frozen, the planner plans it with
the scenario's policies, and its files must equal the expected files byte for byte.

The plan is written in format v2: plan.json is the head on one line, and
decisions.jsonl.zst holds every decision, compressed. So that a review can read them, the
golden files are not those bytes: expected.plan.json is the head pretty-printed, its
``decisions.sha256`` checked against the real decisions file and then replaced by a
placeholder (the digest of compressed bytes would only say "something changed"), and
expected.decisions.jsonl is the decisions decompressed, one line each.
`pytest --update-golden` rewrites them (review the diff before committing)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.plan.planner import PlanResult, make_plan
from retention.runfolder.planrecords import change_record
from retention.runfolder.schema import plan_json_schema
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY, make_client
from tests.support.planfiles import decision_lines

SCENARIOS = Path(__file__).parent / "scenarios"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
KEY = "golden-secret"
# What expected.plan.json says in place of the digest of the compressed decisions.
DIGEST = "<sha256 of decisions.jsonl.zst>"


def plan_scenario(name: str, out: Path) -> tuple[PlanResult, str]:
    """Plan a scenario against the simulator; return the result and the simulator's URL."""
    folder = SCENARIOS / name
    config = SimulatorConfig(
        fleet=str(folder / "fleet.yaml"),
        now=NOW,
        frozen=True,
        public_key=PUBLIC_KEY,
        private_key=KEY,
    )
    with Simulator(config) as sim, make_client(sim.base_url, private_key=KEY) as client:
        projects = [ProjectTargets(p["id"]) for p in sim.admin("fleet")["projects"]]
        scope = Scope(
            load_policies(folder / "policies"),
            projects,
            schedule="0 3 * * *",
            # The scenarios predate lease_minimum: the schedule's lease alone keeps their
            # decisions what they were written to show (test_outage_tolerance.py covers it).
            lease_minimum=timedelta(0),
            concurrency=4,
        )
        result = make_plan(client, scope, plan_path=out / "plan.json", now=NOW)
        return result, sim.base_url


def normalised(text: str, base_url: str) -> str:
    """The output with the simulator's random port and the checkout's folder replaced, so
    files compare across runs and clones."""
    return text.replace(base_url, "http://simulator/api/public/v1.0").replace(
        f"{SCENARIOS}/", "scenarios/"
    )


def golden_head(result: PlanResult, base_url: str) -> str:
    """plan.json (the head) as expected.plan.json holds it: normalised, pretty-printed, with
    its digest of the decisions file checked against that file and then replaced by DIGEST."""
    head = json.loads(normalised(result.plan.path.read_text(), base_url))
    decisions = result.plan.decisions.read_bytes()
    assert head["decisions"]["sha256"] == hashlib.sha256(decisions).hexdigest()
    head["decisions"]["sha256"] = DIGEST
    return json.dumps(head, indent=2) + "\n"


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir()))
def test_plan_equals_golden(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The plan and the decisions of a scenario equal its expected files, byte for byte."""
    result, base_url = plan_scenario(name, tmp_path)
    jsonschema.validate(json.loads(result.plan.path.read_text()), plan_json_schema())
    assert result.plan.decisions == tmp_path / "decisions.jsonl.zst"
    lines = b"".join(decision_lines(result.plan.path)).decode()
    got = {
        "expected.plan.json": golden_head(result, base_url),
        "expected.decisions.jsonl": normalised(lines, base_url),
    }
    for filename, text in got.items():
        expected = SCENARIOS / name / filename
        if request.config.getoption("--update-golden"):
            expected.write_text(text)
        assert expected.exists(), f"{expected} is missing: run pytest --update-golden"
        assert text == expected.read_text(), f"{name}/{filename} differs from the golden file"


def records_of(name: str) -> list[Any]:
    """The expected decision records of a scenario, in plan order."""
    lines = (SCENARIOS / name / "expected.decisions.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def decisions_of(name: str) -> dict[str, dict[str, object]]:
    """The expected decisions of a scenario by snapshot id."""
    return {d["snapshotId"]: d for d in records_of(name)}


def lists_of(name: str) -> dict[str, list[Any]]:
    """The expected changes of a scenario by the list a reader puts them in (changes, held,
    advisory): each record with an action and a body made a change entry, as
    retention.runfolder.planread derives them (here in the decisions' order)."""
    lists: dict[str, list[Any]] = {"changes": [], "held": [], "advisory": []}
    for r in records_of(name):
        if r["action"] == "none" or r["body"] is None:
            continue
        listed = "advisory" if r["advisory"] else "held" if r["held"] else "changes"
        lists[listed].append(change_record(r, r["grace"]))
    return lists


def test_steady_state_decisions_follow_the_table() -> None:
    """The steady-state golden file says what decide's table (retention/core/decide.py) says
    for each kind of snapshot."""
    d = decisions_of("steady_state_mixed_fleet")

    assert (d["running"]["state"], d["running"]["action"]) == ("incomplete", "none")
    assert (d["doomed"]["state"], d["doomed"]["action"]) == ("awaiting-deletion", "none")
    # protect yearly 1 holds the newest snapshot of the year; the 1st of January is kept by
    # monthly 12 until the start of its month + 12 months; the 1st of November shares
    # November's bucket with the newest, so no rule keeps it.
    assert (d["newest"]["state"], d["newest"]["body"]) == ("protected", {"doNotDelete": True})
    assert d["jan-first"]["body"] == {"expires": "2027-01-01T00:00:00Z"}
    assert d["nov-first"]["action"] == "shorten"
    assert (d["manual"]["state"], d["manual"]["action"]) == ("manual-hold", "none")
    assert d["unkept"]["body"] == {"expires": "2026-11-22T12:00:00Z"}  # now + grace 24h
    assert (d["short"]["state"], d["short"]["action"]) == ("unkept", "none")  # expiring anyway
    assert d["noexpiry"]["action"] == "shorten"
    assert (d["sh-bad"]["state"], d["sh-miss"]["state"]) == ("inconsistent", "inconsistent")
    assert (d["dev-3"]["action"], d["dev-3"]["body"]) == (
        "delete",
        {"expires": "2026-11-21T12:00:00Z"},
    )
    assert d["legacy-1"]["state"] == "unmatched"
    assert (d["cfg-1"]["action"], d["cfg-1"]["advisory"]) == ("protect", True)
    plan = lists_of("steady_state_mixed_fleet")
    assert [c["snapshotId"] for c in plan["advisory"]] == ["cfg-1"]
    assert "cfg-1" not in [c["snapshotId"] for c in plan["changes"]]
    assert all(x["action"] == "none" or x["body"] for x in d.values())


def test_first_run_is_held_by_the_fraction_and_the_alert() -> None:
    """The first run's destructive changes are held: by the fraction gate and by the alert."""
    plan = json.loads(
        (SCENARIOS / "first_run_held_by_safety_gates" / "expected.plan.json").read_text()
    )
    holds = {c["name"]: [h["kind"] for h in c["holds"]] for c in plan["clusters"]}
    lists = lists_of("first_run_held_by_safety_gates")

    assert holds["prod-history"] == ["max_expire_fraction"]
    assert holds["prod-alerted"] == ["alert"]
    assert lists["held"]
    assert all(c["action"] in ("shorten", "delete") for c in lists["held"])
    assert all(c["action"] not in ("shorten", "delete") for c in lists["changes"])


def test_min_keep_and_release_protection() -> None:
    """min_keep brings back the newest unkept snapshot; release_protection lifts holds, with
    an expiry from the keep rules when one keeps the snapshot, after grace otherwise."""
    d = decisions_of("min_keep_and_release_protection")

    assert d["s-1"]["reasons"] == [
        {
            "policy": "scratch",
            "rule": "yearly",
            "counter": 1,
            "of": 2,
            "horizon": "2028-01-01T00:00:00Z",  # the start of its year + 2 years
            "text": "yearly snapshot",
        }
    ]
    reasons: Any = d["s-2"]["reasons"]
    assert [r["rule"] for r in reasons] == ["min_keep"]
    assert reasons[0]["policy"] is None
    assert d["s-2"]["action"] == "extend"
    assert d["s-3"]["action"] == "shorten"
    assert (d["s-held-kept"]["state"], d["s-held-kept"]["body"]) == (
        "kept",
        {"doNotDelete": False, "expires": "2027-01-01T00:00:00Z"},
    )
    assert d["s-held-unkept"]["body"] == {"doNotDelete": False, "expires": "2026-11-22T00:00:00Z"}


def test_each_change_names_the_policy_behind_it() -> None:
    """An unkept snapshot's change names the cluster's policies (their verdict, not a gate);
    only a snapshot min_keep brought back is the safety gate's."""
    d = decisions_of("min_keep_and_release_protection")
    plan = lists_of("min_keep_and_release_protection")
    policy_of = {c["snapshotId"]: c["policy"] for c in plan["changes"]}

    assert (d["s-3"]["policies"], policy_of["s-3"]) == (["scratch"], "scratch")
    assert (d["s-held-unkept"]["policies"], policy_of["s-held-unkept"]) == (["scratch"], "scratch")
    assert (d["s-2"]["policies"], policy_of["s-2"]) == ([], "safety")
