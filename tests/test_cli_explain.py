"""`retention explain` on real plans made against the simulator (tests/support/simfleet.py): every
rule of every policy of the snapshot's cluster, keep and protect apart, kept or passed by.

prod-big has a snapshot every 6 hours, the newest (big0000) at 2026-11-21T06:00Z, 07:00 in
Berlin; the policy's days and weeks are Berlin's."""

from __future__ import annotations

from pathlib import Path

import pytest

from retention import cli
from retention.simulator.server import Simulator
from tests.support.simfleet import P

AT = "2026-11-21T12:00:00Z"
POLICY = """\
name: production
match:
  clusters: ["prod-*"]
timezone: Europe/Berlin
keep:
  last: 2
  daily: 7
  weekly: 4
  within: 2d
protect:
  yearly: 1
safety:
  min_keep: 1
  max_expire_fraction: 1.0
"""


def make_plan(folder: Path, sim: Simulator, at: str = AT) -> Path:
    """A retention.yaml and policies/production.yaml in ``folder``, and a plan made --at."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "production.yaml").write_text(POLICY)
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\npolicies: policies/\n'
    )
    plan = folder / "plan.json"
    assert cli.main(["plan", "--out", str(plan), "--at", at], clock=sim.clock.now) == 0
    return plan


def explain(snapshot_id: str, plan: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """explain's output lines for one snapshot (exit 0 asserted)."""
    capsys.readouterr()
    assert cli.main(["explain", snapshot_id, "--plan", str(plan)]) == 0
    return capsys.readouterr().out.splitlines()


def rules(lines: list[str]) -> list[str]:
    """The rule lines and the policy headers: everything from the first policy header."""
    start = next(n for n, line in enumerate(lines) if line.startswith("  policy "))
    return lines[start:]


def test_a_protected_snapshot_shows_each_rule_that_keeps_it_keep_and_protect_apart(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The newest snapshot: every keep rule and the protect rule keep it, each on its own
    line with counter and horizon; none of them is listed again under "reasons:"."""
    plan = make_plan(folder, sim)

    lines = explain("big0000", plan, capsys)

    assert "  decision:  protected; action: protect" in lines
    assert (
        "  rules as of 2026-11-21T12:00:00Z (the plan's evaluatedAt, a what-if plan (--at)):"
        in lines
    )
    assert rules(lines) == [
        f"  policy production ({folder / 'policies' / 'production.yaml'}):",
        "    keep     last #1 of 2",
        "    keep     daily #1 of 7, until 2026-11-27T23:00:00Z",
        "    keep     weekly #1 of 4, until 2026-12-13T23:00:00Z",
        "    keep     within 2d, until 2026-11-23T06:00:00Z",
        "    protect  yearly #1 of 1",
    ]
    assert "  reasons:" not in lines


def test_a_kept_snapshot_says_why_the_other_rules_passed_it_by(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second newest: last and within keep it; daily, weekly and the protect rule name
    the bucket the newest snapshot already holds."""
    plan = make_plan(folder, sim)

    lines = explain("big0001", plan, capsys)

    assert "  decision:  kept; action: none" in lines  # it expires 400 days after it was taken
    assert rules(lines)[1:] == [
        "    keep     last #2 of 2",
        "    keep     daily: passed by: day 2026-11-21 already kept by a newer snapshot (big0000)",
        "    keep     weekly: passed by: week 2026-W47 already kept by a newer snapshot (big0000)",
        "    keep     within 2d, until 2026-11-23T00:00:00Z",
        "    protect  yearly: passed by: year 2026 already kept by a newer snapshot (big0000)",
    ]


def test_an_unkept_snapshot_says_why_every_rule_passed_it_by(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """big0011 (13:00 on 2026-11-18 in Berlin): every rule says why not, and the plan's own
    reason stays under "reasons:"."""
    plan = make_plan(folder, sim)

    lines = explain("big0011", plan, capsys)

    assert "  decision:  unkept; action: shorten" in lines
    assert lines[lines.index("  reasons:") + 1] == "    - no keep rule matches"
    assert rules(lines)[1:] == [
        "    keep     last: passed by: all 2 used by newer snapshots",
        "    keep     daily: passed by: day 2026-11-18 already kept by a newer snapshot (big0010)",
        "    keep     weekly: passed by: week 2026-W47 already kept by a newer snapshot (big0000)",
        "    keep     within 2d: passed by: taken before the cut-off 2026-11-19T06:00:00Z "
        "(2d before the newest snapshot)",
        "    protect  yearly: passed by: year 2026 already kept by a newer snapshot (big0000)",
    ]


def test_a_policy_changed_since_the_plan_shows_only_what_the_plan_recorded(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once the policy file differs from the plan's (here by one comment), explain says so
    and prints the plan's own reasons for it, never rules traced from the new file."""
    plan = make_plan(folder, sim)
    path = folder / "policies" / "production.yaml"
    path.write_text(POLICY + "# edited after the plan\n")

    lines = explain("big0001", plan, capsys)

    assert rules(lines) == [
        f"  policy production ({path}): changed since the plan; what the plan recorded:",
        "    - production: within 2d, until 2026-11-23T00:00:00Z",
        "    - production: last #2 of 2 (last snapshot)",
    ]
    assert not any(line.startswith(("    keep", "    protect", "  rules")) for line in lines)


def test_a_what_if_plan_is_traced_as_of_its_evaluated_at(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """prod-small's "doomed" expired at 11:00 on 2026-11-21: in a plan --at 10:00 it is still
    counted and traced (by the wall clock it would be awaiting deletion)."""
    plan = make_plan(folder, sim, at="2026-11-21T10:00:00Z")

    lines = explain("doomed", plan, capsys)

    assert "  decision:  kept; action: extend" in lines
    assert "    keep     daily #3 of 7, until 2026-11-18T23:00:00Z" in lines
    assert not any("none apply" in line for line in lines)


def test_a_snapshot_no_rule_counts_says_so(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An incomplete snapshot gets one line saying no rule applies, and no rule lines."""
    plan = make_plan(folder, sim)

    lines = explain("running", plan, capsys)

    assert lines[-3:] == [
        "  reasons:",
        "    - still being created: not counted, not touched",
        "  rules:     none apply: a snapshot still being created is not counted",
    ]


def test_without_policies_explain_prints_what_the_plan_recorded(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read where there is no configuration and no --policies, a plan is still explained
    from its record, with one line saying why the rules are not traced."""
    plan = make_plan(folder, sim)
    (folder / "retention.yaml").unlink()

    lines = explain("big0001", plan, capsys)

    assert lines[-4:-1] == [
        "  reasons:",
        "    - production: within 2d, until 2026-11-23T00:00:00Z",
        "    - production: last #2 of 2 (last snapshot)",
    ]
    assert lines[-1].startswith("  rules:     not traced: no policies (")
    assert lines[-1].endswith("); give --policies PATH")


def test_policies_can_be_given_on_the_command_line(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--policies traces with the policies given, without a configuration."""
    plan = make_plan(folder, sim)
    (folder / "retention.yaml").unlink()
    capsys.readouterr()

    assert cli.main(["explain", "big0001", "--plan", str(plan), "--policies", "policies"]) == 0
    lines = capsys.readouterr().out.splitlines()

    assert rules(lines)[:2] == [
        "  policy production (policies/production.yaml):",
        "    keep     last #2 of 2",
    ]


def test_plan_takes_a_run_folder_as_apply_and_undo_do(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--plan RUN_FOLDER explains from the folder's plan.json, word for word as --plan
    RUN_FOLDER/plan.json does; a folder without a plan.json is exit 2 naming the file."""
    make_plan(folder, sim)
    assert cli.main(["plan", "--at", AT], clock=sim.clock.now) == 0
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    without = folder / "reports" / "elsewhere"
    without.mkdir()

    from_folder = explain("big0011", run_dir, capsys)
    from_file = explain("big0011", run_dir / "plan.json", capsys)
    code = cli.main(["explain", "big0011", "--plan", str(without)])
    err = capsys.readouterr().err

    assert from_folder == from_file
    assert "  decision:  unkept; action: shorten" in from_folder
    assert code == 2
    assert f"--plan {without} is not a run folder: it has no plan.json; give a plan file" in err
    assert "is a directory" not in err
