"""`retention undo` on the command line: what a person in a hurry and a script each read,
the run folder and reports it writes, its metrics, and the exit code of a refusal."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.ops.clock import Clock
from retention.simulator.server import Simulator
from tests.support.simfleet import NOW, clock_at, shorten_small_in


def bad_run(capsys: pytest.CaptureFixture[str], clock: Clock) -> str:
    """Run the bad policy for real, at ``clock``'s time; the run folder."""
    assert cli.main(["run", "--format", "json"], clock=clock) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert document["outcomes"] == {"applied": 3}
    return str(document["runDir"])


def test_undo_json_says_what_was_put_back_and_where_the_reports_are(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """undo --format json prints one document: exit 0, the counts, each snapshot's before,
    written and current state, and a run folder with undo.json and both reports."""
    shorten_small_in(folder, sim.base_url, "typo")
    run_dir = bad_run(capsys, sim.clock.now)

    code = cli.main(["undo", run_dir, "--format", "json"], clock=sim.clock.now)
    document = json.loads(capsys.readouterr().out)

    assert code == document["exitCode"] == 0
    assert (document["command"], document["undoOf"], document["dryRun"]) == ("undo", run_dir, False)
    assert document["counts"] == {"restored": 2}
    items = {item["snapshotId"]: item for item in document["items"]}
    assert items["noexpiry"]["before"] == {"doNotDelete": False, "expires": None}
    assert items["noexpiry"]["current"] == {"doNotDelete": False, "expires": None}
    assert items["noexpiry"]["sent"] == [{"doNotDelete": True}, {"doNotDelete": False}]
    assert items["held"]["current"] == {"doNotDelete": True, "expires": None}
    folder_of_undo = Path(document["runDir"])
    assert sorted(p.name for p in folder_of_undo.iterdir()) == [
        "report.html",
        "report.md",
        "results.jsonl",
        "undo.json",
    ]
    markdown = (folder_of_undo / "report.md").read_text()
    assert "Undo of" in markdown
    assert "| prod-small | noexpiry | expires " in markdown


def test_undo_tells_a_person_what_it_would_do_and_refuses_an_undo_of_an_undo(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text summary counts what would be put back; undoing the undo's own folder is
    exit 2 with the reason on stderr, and sends nothing."""
    shorten_small_in(folder, sim.base_url, "typo")
    run_dir = bad_run(capsys, sim.clock.now)

    dry = cli.main(["undo", run_dir, "--dry-run"], clock=sim.clock.now)
    dry_out = capsys.readouterr().out
    assert cli.main(["undo", run_dir, "--format", "json"], clock=sim.clock.now) == 0
    undo_dir = json.loads(capsys.readouterr().out)["runDir"]
    patches = len(sim.admin("patches")["patches"])
    refused = cli.main(["undo", undo_dir], clock=sim.clock.now)
    err = capsys.readouterr().err

    assert dry == 0
    assert "would put back 2 of 2 snapshots that run shortened" in dry_out
    assert refused == 2
    assert "is an undo: an undo is not undone" in err
    assert len(sim.admin("patches")["patches"]) == patches


def test_undo_writes_its_outcomes_and_exit_code_as_metrics(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--metrics-file gets the exit code and the outcomes by kind, like run and apply."""
    shorten_small_in(folder, sim.base_url, "typo")
    run_dir = bad_run(capsys, sim.clock.now)
    metrics = folder / "undo.prom"

    assert cli.main(["undo", run_dir, "--metrics-file", str(metrics)], clock=sim.clock.now) == 0

    text = metrics.read_text()
    assert "retention_last_run_exit_code 0.0" in text
    assert 'retention_outcomes{outcome="restored"} 2.0' in text


def run_folders(folder: Path) -> set[Path]:
    """The run folders under the working folder's reports/."""
    return {path for path in (folder / "reports").iterdir() if path.is_dir()}


def test_undo_of_a_plans_folder_names_the_apply_of_that_plan(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Undo of the folder `retention plan` wrote, after an apply of that plan shortened
    snapshots from a folder of its own, is exit 2: it says the folder is a plan, not an
    apply, and gives the command that undoes the apply; nothing is sent."""
    shorten_small_in(folder, sim.base_url, "typo")
    assert cli.main(["plan"], clock=sim.clock.now) == 0
    [plan_dir] = run_folders(folder)
    capsys.readouterr()
    assert cli.main(["apply", str(plan_dir), "--format", "json"], clock=sim.clock.now) == 0
    apply_dir = json.loads(capsys.readouterr().out)["runDir"]
    sent = len(sim.admin("patches")["patches"])

    code = cli.main(["undo", str(plan_dir)], clock=sim.clock.now)

    err = capsys.readouterr().err
    assert code == 2
    assert (
        f"{plan_dir} is a plan (`retention plan`, or a dry run without reports), not an apply"
        in err
    )
    assert f"\n  retention undo {apply_dir}" in err
    assert "nothing to undo: that run applied no destructive change" not in err
    assert len(sim.admin("patches")["patches"]) == sent
    assert run_folders(folder) == {plan_dir, Path(apply_dir)}


def test_undo_of_a_dry_run_or_a_plan_nobody_applied_says_so(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dry run's folder and a plan's folder whose plan no apply used are exit 2: undo says
    which it is and that no run folder applied its plan."""
    shorten_small_in(folder, sim.base_url, "typo")
    assert cli.main(["run", "--dry-run"], clock=sim.clock.now) == 0
    [dry_dir] = run_folders(folder)
    assert cli.main(["plan"], clock=sim.clock.now) == 0
    [plan_dir] = run_folders(folder) - {dry_dir}
    capsys.readouterr()

    dry = cli.main(["undo", str(dry_dir)], clock=sim.clock.now)
    dry_err = capsys.readouterr().err
    plan = cli.main(["undo", str(plan_dir)], clock=sim.clock.now)
    plan_err = capsys.readouterr().err

    assert (dry, plan) == (2, 2)
    assert f"{dry_dir} is a dry run (`retention run --dry-run`), not an apply" in dry_err
    assert (
        f"{plan_dir} is a plan (`retention plan`, or a dry run without reports), not an apply"
        in plan_err
    )
    for err in (dry_err, plan_err):
        assert f"No run folder in {folder / 'reports'} applied this plan" in err
    assert sim.admin("patches")["patches"] == []


def test_undo_of_an_apply_that_found_everything_done_has_nothing_to_undo(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real apply whose changes were all unchanged (its plan applied before) is a run
    folder: undo of it says there is nothing to undo and exits 0."""
    shorten_small_in(folder, sim.base_url, "typo")
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 0
    assert cli.main(["apply", "plan.json"], clock=sim.clock.now) == 0
    capsys.readouterr()
    assert cli.main(["apply", "plan.json", "--format", "json"], clock=sim.clock.now) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["outcomes"] == {"unchanged": 3}

    code = cli.main(["undo", again["runDir"]], clock=sim.clock.now)

    assert code == 0
    assert "nothing to undo: that run applied no destructive change" in capsys.readouterr().out


def test_an_undo_of_a_run_undone_already_says_so(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Undoing a run a second time puts nothing back and says which undo took it back and
    when, at the terminal, in report.md and in --format json (undoneBefore); exit 0."""
    shorten_small_in(folder, sim.base_url, "typo")
    run_dir = bad_run(capsys, sim.clock.now)
    assert cli.main(["undo", run_dir, "--format", "json"], clock=sim.clock.now) == 0
    first = json.loads(capsys.readouterr().out)
    patches = len(sim.admin("patches")["patches"])

    # Each undo a minute after the one before, as a person would run them (the simulator's
    # own clock stands still).
    code = cli.main(["undo", run_dir], clock=clock_at(NOW + timedelta(minutes=1)))
    out = capsys.readouterr().out
    dry = ["undo", run_dir, "--dry-run", "--format", "json"]
    assert cli.main(dry, clock=clock_at(NOW + timedelta(minutes=2))) == 0
    third = json.loads(capsys.readouterr().out)

    said = f"already undone by {first['runDir']} at {NOW:%Y-%m-%dT%H:%M:%SZ}"
    assert code == 0
    assert (
        f"  {said}: all 2 snapshots that run shortened are as before it; nothing to put back"
        in out.splitlines()
    )
    assert "put back 0 of" not in out
    assert len(sim.admin("patches")["patches"]) == patches
    [report] = [Path(line.split()[-1]) for line in out.splitlines() if "report.md" in line]
    [line] = [x for x in report.read_text().splitlines() if x.startswith("- Already undone by ")]
    assert Path(first["runDir"]).name in line
    assert line.endswith("every snapshot that run shortened is as before it, nothing to put back.")
    assert 'id="already-undone">Already undone by' in report.with_suffix(".html").read_text()
    assert third["counts"] == {"unchanged": 2}
    assert [undo["runDir"] for undo in third["undoneBefore"]] == [
        first["runDir"],
        str(report.parent),
    ]
    assert [undo["restored"] for undo in third["undoneBefore"]] == [2, 0]


def test_undo_report_md_counts_each_cluster_instead_of_listing_every_snapshot(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An undo of a run that shortened more than a thousand snapshots of two clusters:
    report.md is a table of counts per cluster and a total, with no snapshot rows and no
    'And N more' (report.html and undo.json list the snapshots)."""
    shorten_small_in(folder, sim.base_url, "typo")
    policy = folder / "policies" / "typo.yaml"
    policy.write_text(policy.read_text().replace("[prod-small]", "[prod-*]"))
    run_dir = bad_run_of_every_cluster(capsys, sim.clock.now)

    assert cli.main(["undo", run_dir, "--format", "json"], clock=sim.clock.now) == 0
    document = json.loads(capsys.readouterr().out)

    per_cluster: dict[str, int] = {}
    for item in document["items"]:
        per_cluster[item["clusterName"]] = per_cluster.get(item["clusterName"], 0) + 1
    total = len(document["items"])
    assert document["counts"] == {"restored": total}
    assert sorted(per_cluster) == ["prod-big", "prod-small"]
    assert total > 1000
    markdown = Path(document["runDir"], "report.md").read_text()
    table = [line for line in markdown.splitlines() if line.startswith("|")]
    assert table == [
        "| Cluster | restored | Snapshots |",
        "|---|---:|---:|",
        *(f"| {name} | {n} | {n} |" for name, n in sorted(per_cluster.items())),
        f"| **2 clusters** | **{total}** | **{total}** |",
    ]
    assert "more: see undo.json" not in markdown
    assert f"{total} snapshots, counted by cluster above" in markdown


def bad_run_of_every_cluster(capsys: pytest.CaptureFixture[str], clock: Clock) -> str:
    """Run the bad policy for real on every cluster, at ``clock``'s time; the run folder."""
    assert cli.main(["run", "--format", "json"], clock=clock) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert set(document["outcomes"]) == {"applied"}
    return str(document["runDir"])
