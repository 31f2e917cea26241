"""`retention apply` of a plan the service already holds, against the simulator: a second
apply of the same plan records every change as ``unchanged`` and sends nothing, and a
change whose snapshot truly moved on is ``stale``, said in the API's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.core.snapshot import SnapshotPatch
from retention.simulator.server import Simulator
from tests.support.journal import outcome_lines
from tests.support.simfleet import SMALL, P, client_for, shorten_small_in


def apply_json(plan: str, sim: Simulator, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``retention apply PLAN --format json`` at the simulator's time: its document."""
    code = cli.main(["apply", plan, "--format", "json"], clock=sim.clock.now)
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert document["exitCode"] == code
    return document


def patches(sim: Simulator) -> list[dict[str, Any]]:
    """The snapshot PATCHes the simulator received."""
    return [p for p in sim.admin("patches")["patches"] if p["kind"] == "snapshot"]


def test_a_second_apply_of_the_same_plan_is_unchanged_and_sends_nothing(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Applied again, a plan the service already holds sends no PATCH: every change is
    journalled and counted ``unchanged`` (not stale) with why, none is a failure, and
    apply exits 0."""
    shorten_small_in(folder, sim.base_url, "short")
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 0
    capsys.readouterr()
    first = apply_json("plan.json", sim, capsys)
    sent = len(patches(sim))

    second = apply_json("plan.json", sim, capsys)

    assert first["outcomes"] == {"applied": sent}
    assert sent > 0
    assert second["exitCode"] == 0
    assert second["outcomes"] == {"unchanged": sent}
    assert second["failures"] == []
    assert len(patches(sim)) == sent
    lines = outcome_lines(Path(second["runDir"]) / "results.jsonl")
    assert [x["outcome"] for x in lines] == ["unchanged"] * sent
    assert {x["body"] for x in lines} == {None}
    assert all("already" in x["error"] for x in lines)


def test_a_second_apply_says_unchanged_on_the_terminal(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text summary of the second apply counts the changes as unchanged and says that
    the service already held them, with exit 0."""
    shorten_small_in(folder, sim.base_url, "short")
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 0
    assert cli.main(["apply", "plan.json"], clock=sim.clock.now) == 0
    capsys.readouterr()

    code = cli.main(["apply", "plan.json"], clock=sim.clock.now)

    out = capsys.readouterr().out
    assert code == 0
    assert "Outcomes: unchanged 3." in out
    assert "the service already held what 3 of these changes write" in out
    assert "stale" not in out


def test_a_stale_change_says_the_state_in_the_apis_words(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A snapshot protected by someone between plan and apply is stale: its journal line
    says what the plan saw and what the service holds now as JSON, never in Python's
    spelling (no {'...'}, True, False or None)."""
    shorten_small_in(folder, sim.base_url, "short")
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 0
    capsys.readouterr()
    with client_for(sim) as api:
        api.patch_snapshot(P, SMALL, "noexpiry", SnapshotPatch.protect())

    document = apply_json("plan.json", sim, capsys)

    [line] = [
        x
        for x in outcome_lines(Path(document["runDir"]) / "results.jsonl")
        if x["snapshotId"] == "noexpiry"
    ]
    assert line["outcome"] == "stale"
    assert line["error"] == (
        'state changed since the plan: it was {"doNotDelete": false, "expires": null}, '
        'now {"doNotDelete": true, "expires": null}'
    )
    for python in ("{'", "True", "False", "None"):
        assert python not in line["error"]
