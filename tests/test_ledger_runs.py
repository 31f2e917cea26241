"""The ledger through the command line, against the simulator over HTTP and a real
database (SQLite, and PostgreSQL with its password from the environment): changes made
outside retention caught once each, our own never, the hold, and a ledger that cannot be
used stopping a run before anything is sent."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.config.ledgerplace import ENV_LEDGER_PASSWORD, ENV_LEDGER_URL
from retention.ledger import chain
from retention.plan import planner
from retention.simulator.server import Simulator
from tests.support.ledgers import ledger_place_for
from tests.support.simfleet import BIG, CFG, NOW, SHARDED, SHORTEN_SMALL, SMALL, P, outside_change

HOLD_SMALL = SHORTEN_SMALL.replace(
    "hold_on_alerts: []", "hold_on_alerts: [], hold_on_outside_change: true"
)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The ledger the commands use: the default SQLite file in reports/, or a fresh
    PostgreSQL database named by RETENTION_LEDGER_URL, its password in
    RETENTION_LEDGER_PASSWORD, as a CronJob's Secret gives them."""
    if request.param == "postgresql":
        place = ledger_place_for(request, "postgresql")
        monkeypatch.setenv(ENV_LEDGER_URL, place.url)
        monkeypatch.setenv(ENV_LEDGER_PASSWORD, place.password or "")
    return str(request.param)


def configure(folder: Path, base_url: str, policy: str = SHORTEN_SMALL) -> None:
    """retention.yaml and the policy that always changes prod-small."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "small.yaml").write_text("name: small\n" + policy)
    (folder / "retention.yaml").write_text(
        f"api:\n  base_url: {base_url}\n  concurrency: 4\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nreports:\n  dir: reports/\n'
    )


def command(capsys: pytest.CaptureFixture[str], sim: Simulator, *args: str) -> tuple[int, Any]:
    """Run the command line at the simulator's time with --format json: exit code, JSON."""
    code = cli.main([*args, "--format", "json"], clock=sim.clock.now)
    out = capsys.readouterr().out
    return code, json.loads(out)


def outside(document: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """A plan document's outside changes as (kind, cluster id, snapshot id), sorted."""
    return sorted(
        (c["kind"], c["clusterId"], c["snapshotId"]) for c in document["plan"]["outsideChanges"]
    )


def test_each_outside_change_is_caught_once_and_our_own_changes_never(
    backend: str, sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A baseline plan, a run that sends changes, a plan that finds none of them outside;
    then an expiry, a doNotDelete, a deletion and a terminated backup made as someone else,
    each caught by the next plan with its audit alert, and by none after it; the chain
    verifies and its head is the last plan's."""
    configure(folder, sim.base_url)
    _, first = command(capsys, sim, "plan")
    assert first["plan"]["ledger"] == {"baseline": True}
    assert first["plan"]["outsideChanges"] == []

    ran = cli.main(["run"], clock=sim.clock.now)
    capsys.readouterr()
    assert ran == 0
    assert sim.admin("patches")["patches"], "the run sent changes of its own"
    _, after_ours = command(capsys, sim, "plan")
    assert after_ours["plan"]["ledger"] == {"baseline": False}
    assert outside(after_ours) == []

    outside_change(
        sim, "expires", cluster_id=BIG, snapshot_id="big0001", expires=NOW + timedelta(days=3)
    )
    outside_change(sim, "doNotDelete", cluster_id=BIG, snapshot_id="big0002", do_not_delete=True)
    outside_change(sim, "delete", cluster_id=BIG, snapshot_id="big0003")
    outside_change(sim, "terminate", cluster_id=SHARDED)
    _, caught = command(capsys, sim, "plan")
    _, again = command(capsys, sim, "plan")

    assert outside(caught) == [
        ("changed", BIG, "big0001"),
        ("changed", BIG, "big0002"),
        ("deleted-early", BIG, "big0003"),
        ("gone", SHARDED, None),
    ]
    assert all(c["alertId"] for c in caught["plan"]["outsideChanges"])
    gone = next(c for c in caught["plan"]["outsideChanges"] if c["kind"] == "gone")
    assert gone["restorePoints"] == 2
    assert outside(again) == []

    code, verified = command(capsys, sim, "ledger", "verify")
    assert code == 0
    assert verified["verified"] is True
    assert verified["records"] == 5
    assert verified["shards"] == [{"shard": "", "records": 5, "head": again["ledgerHead"]}]


def test_hold_on_outside_change_holds_the_cluster_until_a_person_acknowledges_it(
    backend: str, sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With safety.hold_on_outside_change, a cluster changed outside retention has its
    destructive changes held (exit 3, a hold of kind outside naming the setting) by the
    plan that finds the change and by every plan after it, until `ledger ack` records who
    looked; then it is free, and a new change holds it again."""
    configure(folder, sim.base_url, HOLD_SMALL)
    assert command(capsys, sim, "plan")[0] == 0

    outside_change(
        sim, "expires", cluster_id=SMALL, snapshot_id="fresh", expires=NOW + timedelta(days=1)
    )
    code, held = command(capsys, sim, "plan")
    still_code, still = command(capsys, sim, "plan")
    acked_code, acked = command(
        capsys, sim, "--actor", "alice", "ledger", "ack", "prod-sm*", "--note", "INC-7"
    )
    free_code, free = command(capsys, sim, "plan")

    small = next(c for c in held["plan"]["clusters"] if c["clusterId"] == SMALL)
    assert code == 3
    assert [h["kind"] for h in small["holds"]] == ["outside"]
    assert small["holds"][0]["setting"].endswith("small.yaml:5")
    assert "1 change made outside retention" in small["holds"][0]["reason"]
    assert "retention ledger ack prod-small" in small["holds"][0]["reason"]
    small = next(c for c in still["plan"]["clusters"] if c["clusterId"] == SMALL)
    assert still_code == 3
    assert outside(still) == []
    assert [h["kind"] for h in small["holds"]] == ["outside"]
    assert "not acknowledged" in small["holds"][0]["reason"]
    assert acked_code == 0
    assert [(a["clusterName"], a["since"]) for a in acked["acknowledged"]] == [
        ("prod-small", held["plan"]["createdAt"])
    ]
    assert free_code == 0
    small = next(c for c in free["plan"]["clusters"] if c["clusterId"] == SMALL)
    assert small["holds"] == []

    outside_change(sim, "delete", cluster_id=SMALL, snapshot_id="fresh")
    assert command(capsys, sim, "plan")[0] == 3
    code, verified = command(capsys, sim, "ledger", "verify")
    assert (code, verified["records"]) == (0, 6)


def test_deciders_on_worker_processes_catch_and_hold_as_one_process_does(
    backend: str,
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the clusters decided on two worker processes (each reading the ledger on a
    connection of its own), changes made outside retention are caught with their audit
    alerts, the changed cluster is held, and the next plan still holds it (what nobody
    acknowledged reaches the workers); the chain verifies."""
    monkeypatch.setattr(planner, "POOL_FROM", 1)  # the pool for four clusters
    configure(folder, sim.base_url, HOLD_SMALL)
    config = folder / "retention.yaml"
    config.write_text(
        config.read_text().replace("concurrency: 4\n", "concurrency: 4\n  workers: 2\n")
    )
    assert command(capsys, sim, "plan")[0] == 0

    outside_change(
        sim, "expires", cluster_id=SMALL, snapshot_id="fresh", expires=NOW + timedelta(days=1)
    )
    outside_change(sim, "delete", cluster_id=BIG, snapshot_id="big0003")
    code, caught = command(capsys, sim, "plan")
    still_code, still = command(capsys, sim, "plan")

    assert code == 3
    assert outside(caught) == [("changed", SMALL, "fresh"), ("deleted-early", BIG, "big0003")]
    assert all(c["alertId"] for c in caught["plan"]["outsideChanges"])
    held = {c["clusterId"]: [h["kind"] for h in c["holds"]] for c in caught["plan"]["clusters"]}
    assert held[SMALL] == ["outside"]
    assert still_code == 3
    assert outside(still) == []
    small = next(c for c in still["plan"]["clusters"] if c["clusterId"] == SMALL)
    assert "not acknowledged" in small["holds"][0]["reason"]
    code, verified = command(capsys, sim, "ledger", "verify")
    assert (code, verified["records"]) == (0, 3)


def test_ledger_ack_of_a_cluster_the_ledger_does_not_know_is_exit_2_and_records_nothing(
    backend: str, sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ledger ack names the pattern that matches no cluster the ledger knows (exit 2); an
    ack of a known cluster with nothing to acknowledge says so and exits 0."""
    configure(folder, sim.base_url, HOLD_SMALL)
    assert command(capsys, sim, "plan")[0] == 0

    code = cli.main(["ledger", "ack", "prod-nope"], clock=sim.clock.now)
    err = capsys.readouterr().err
    quiet, document = command(capsys, sim, "ledger", "ack", "prod-small")

    assert code == 2
    assert "no cluster the ledger knows is named 'prod-nope'" in err
    assert "prod-small" in err
    assert quiet == 0
    assert document["acknowledged"] == []
    assert document["nothingToAcknowledge"] == ["prod-small"]


def test_an_undo_puts_back_what_the_ledger_then_takes_for_ours(
    backend: str, sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What an undo restores is recorded as ours: the plan after it finds nothing outside."""
    configure(folder, sim.base_url)
    assert cli.main(["run"], clock=sim.clock.now) == 0
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    capsys.readouterr()

    undone = cli.main(["undo", str(run_dir)], clock=sim.clock.now)
    capsys.readouterr()
    _, after = command(capsys, sim, "plan")

    assert undone == 0
    assert outside(after) == []


def test_a_config_server_deleted_early_is_caught(
    backend: str, sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A legacy config server's snapshot deleted before its expiry is caught like a cluster's."""
    configure(folder, sim.base_url)
    command(capsys, sim, "plan")

    outside_change(sim, "delete", cluster_id=CFG, snapshot_id="cfg0")
    _, caught = command(capsys, sim, "plan")

    assert outside(caught) == [("deleted-early", CFG, "cfg0")]


def test_a_newer_ledger_stops_a_run_before_anything_is_sent(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ledger written by a newer retention: the run exits 2 naming it, and sends nothing."""
    configure(folder, sim.base_url)
    assert cli.main(["plan"], clock=sim.clock.now) == 0
    with sqlite3.connect(folder / "reports" / "ledger.db") as db:
        db.execute("UPDATE alembic_version SET version_num = '0099'")
    capsys.readouterr()

    code = cli.main(["run"], clock=sim.clock.now)

    err = capsys.readouterr().err
    assert code == 2
    assert "schema revision 0099, newer than retention" in err
    assert sim.admin("patches")["patches"] == []


def test_an_unreachable_ledger_stops_a_run_and_a_plan_warns_and_goes_on(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PostgreSQL ledger that does not answer: run exits 1 before any PATCH, the message
    names the server and never the password; a plan warns that it is not recorded and is
    written all the same."""
    configure(folder, sim.base_url)
    monkeypatch.setenv(ENV_LEDGER_URL, "postgresql://retention:pw-in-url@127.0.0.1:9/ledger")
    monkeypatch.setenv(ENV_LEDGER_PASSWORD, "s3cret-pw")

    ran = cli.main(["run"], clock=sim.clock.now)
    run_err = capsys.readouterr().err
    planned = cli.main(["plan"], clock=sim.clock.now)
    plan_out, plan_err = capsys.readouterr()

    assert ran == 1
    assert "127.0.0.1:9" in run_err
    assert sim.admin("patches")["patches"] == []
    assert planned == 0
    assert "this job is not recorded" in plan_err
    for said in (run_err, plan_out, plan_err):
        assert "s3cret-pw" not in said
        assert "pw-in-url" not in said


def test_explain_names_the_outside_change_of_a_snapshot_and_of_one_deleted(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain of a snapshot changed outside retention says so in its lines and its JSON;
    explain of one deleted early says it went before the plan, and how."""
    configure(folder, sim.base_url)
    command(capsys, sim, "plan")
    outside_change(
        sim, "expires", cluster_id=BIG, snapshot_id="big0001", expires=NOW + timedelta(days=3)
    )
    outside_change(sim, "delete", cluster_id=BIG, snapshot_id="big0003")
    command(capsys, sim, "plan")

    assert cli.main(["explain", "big0001"], clock=sim.clock.now) == 0
    lines = capsys.readouterr().out
    code, document = command(capsys, sim, "explain", "big0001")
    deleted = cli.main(["explain", "big0003"], clock=sim.clock.now)
    err = capsys.readouterr().err

    assert "  outside:   snapshot big0001 of prod-big: expires " in lines
    assert "changed outside retention" in lines
    assert code == 0
    assert [c["kind"] for c in document["outsideChanges"]] == ["changed"]
    assert deleted == 2
    assert "it went before this plan, snapshot big0003 of prod-big: deleted before its time" in err


def test_verify_of_a_ledger_that_is_not_there_is_exit_2_and_makes_none(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ledger verify where no ledger was ever written (a wrong path) says so, exit 2, and
    leaves no empty ledger behind that would verify."""
    configure(folder, sim.base_url)

    code = cli.main(["ledger", "verify"], clock=sim.clock.now)

    assert code == 2
    assert "no ledger there" in capsys.readouterr().err
    assert not (folder / "reports" / "ledger.db").exists()


@pytest.mark.usefixtures("backend")
def test_an_apply_resumed_after_an_earlier_one_leaves_no_change_taken_for_outside(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An apply an hour after its plan writes each shortened expiry re-anchored to its
    own time; applying its run folder again finds every change already there
    (unchanged), and the ledger keeps what the service holds, not the plan's value: the
    next plan finds no change made outside retention."""
    configure(folder, sim.base_url)
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 0
    sim.clock.advance(3600)
    assert cli.main(["apply", "plan.json"], clock=sim.clock.now) == 0
    [applied] = [p for p in (folder / "reports").iterdir() if p.is_dir()]
    capsys.readouterr()
    code, again = command(capsys, sim, "apply", str(applied))
    _, plan = command(capsys, sim, "plan")

    assert code == 0
    assert again["outcomes"]["unchanged"] > 0
    assert again["outcomes"].get("applied", 0) == 0
    assert outside(plan) == []


@pytest.mark.usefixtures("ctrl_c")
def test_verify_hears_a_stop_between_records(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while ledger verify hashes the records (a year's chain takes seconds): it
    stops before the next record, exit 130, instead of saying "stopping" and going on."""
    configure(folder, sim.base_url)
    for _ in range(2):
        assert cli.main(["plan"], clock=sim.clock.now) == 0
    hashed = chain.content_sha256
    signalled: list[int] = []

    def interrupted(conn: Any, run: Any) -> str:
        if not signalled:  # once: a second Ctrl-C exits at once, by design
            signalled.append(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return hashed(conn, run)

    monkeypatch.setattr(chain, "content_sha256", interrupted)
    capsys.readouterr()
    code = cli.main(["ledger", "verify"], clock=sim.clock.now)

    assert code == 130
    assert "SIGINT: stopped before verifying the next record" in capsys.readouterr().err


def test_a_run_keeps_what_evidence_needs_its_policy_text_what_was_expected_and_why(
    sim: Simulator, folder: Path
) -> None:
    """A run records its policy file's text under the sha256 of its bytes, each cluster's
    policies and freshness check, and for each change it sends the snapshot's fields it was
    planned from, the policy that decided it and why."""
    configure(folder, sim.base_url)
    assert cli.main(["run"], clock=sim.clock.now) == 0
    text = (folder / "policies" / "small.yaml").read_bytes()

    with sqlite3.connect(folder / "reports" / "ledger.db") as db:
        kept = db.execute("SELECT sha256, path, text FROM ledger_policies").fetchall()
        expected = dict(
            db.execute("SELECT name, expected FROM ledger_cluster_runs WHERE kind = 'cluster'")
        )
        intents = db.execute(
            "SELECT before, after, detail FROM ledger_events WHERE kind = 'intent'"
        ).fetchall()

    assert kept == [
        (hashlib.sha256(text).hexdigest(), str(folder / "policies" / "small.yaml"), text.decode())
    ]
    small = json.loads(expected["prod-small"])
    assert small["policies"] == ["small"]
    assert small["withinSeconds"] > 0
    assert small["stale"] is False
    assert intents, "the run sent changes"
    for before, after, detail in intents:
        said = json.loads(detail)
        assert said["policy"] == "small"
        assert said["why"]
        assert json.loads(before) != json.loads(after)
