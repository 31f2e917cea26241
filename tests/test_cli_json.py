"""--format json and the global options: each reporting command prints one JSON document on
stdout that a script can parse, `plan --out -` prints the plan itself, and --config,
--log-format and --debug work after the command as well as before it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from retention import cli
from retention.ops.clock import Clock, system_clock
from retention.runfolder.folder import DECISIONS
from retention.runfolder.planread import decision_lines
from retention.runfolder.schema import plan_json_schema
from retention.simulator.server import Simulator
from tests.support.jsoncommands import json_stream
from tests.support.simfleet import KEY
from tests.test_cli_plan import write_config


def run(
    capsys: pytest.CaptureFixture[str], *args: str, clock: Clock = system_clock
) -> tuple[int, str, str]:
    """Run the CLI at ``clock``'s time; its exit code, stdout and stderr."""
    code = cli.main(list(args), clock=clock)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def document(
    capsys: pytest.CaptureFixture[str], *args: str, clock: Clock = system_clock
) -> tuple[int, dict[str, Any]]:
    """Run a command with --format json at ``clock``'s time; its exit code and the one JSON
    document it printed."""
    code, out, _ = run(capsys, *args, "--format", "json", clock=clock)
    parsed = json.loads(out)  # the whole of stdout is one document
    assert isinstance(parsed, dict)
    return code, parsed


def test_plan_json_is_the_plan_head_with_paths_and_exit_code(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan --format json prints the exit code, where plan.json and decisions.jsonl went, and
    the plan without its long lists: summary, clusters, holds, warnings."""
    config = write_config(folder, sim.base_url)

    code, doc = document(capsys, "--config", str(config), "plan", clock=sim.clock.now)

    on_disk = json.loads(Path(doc["planPath"]).read_text())
    assert (doc["command"], doc["exitCode"], code) == ("plan", 0, 0)
    assert Path(doc["decisionsPath"]).is_file()
    assert doc["plan"]["summary"] == on_disk["summary"]
    assert doc["plan"]["clusters"] == on_disk["clusters"]
    assert "changes" not in doc["plan"]


def test_plan_out_dash_writes_the_plan_to_stdout_and_the_summary_to_stderr(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan --out - prints plan.json itself (valid against its schema) on stdout, keeps a
    copy with its decisions in a run folder, and says so on stderr."""
    config = write_config(folder, sim.base_url)

    code, out, err = run(capsys, "plan", "--config", str(config), "--out", "-", clock=sim.clock.now)

    plan = json.loads(out)
    jsonschema.validate(plan, plan_json_schema())
    [kept] = list((folder / "reports").glob("*/plan.json"))
    assert code == 0
    assert json.loads(kept.read_text()) == plan
    decisions = (kept.parent / DECISIONS).read_bytes()
    assert plan["decisions"]["sha256"] == hashlib.sha256(decisions).hexdigest()
    assert "Plan:" in err  # the summary, out of the pipe's way
    assert f"Saved {kept}" in err


def test_plan_out_dash_with_format_json_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two JSON documents cannot share stdout: --out - with --format json is exit 2."""
    code, out, err = run(capsys, "plan", "--out", "-", "--format", "json")

    assert code == 2
    assert out == ""
    assert "--out - already writes the plan as JSON to stdout" in err


def test_validate_json_lists_each_policy(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate --format json names each policy with its file, digest and description."""
    write_config(folder, "http://127.0.0.1:9/api/public/v1.0")

    code, doc = document(capsys, "validate")

    [policy] = doc["policies"]
    assert (code, doc["command"], doc["exitCode"]) == (0, "validate", 0)
    assert policy["name"] == "everything"
    assert policy["file"].endswith("policies/everything.yaml")
    assert len(policy["sha256"]) == 64
    assert policy["description"].startswith("everything:")


def test_config_show_json_redacts_the_private_key(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config show --format json has the effective settings and their sources, and the
    private key only as redacted."""
    write_config(folder, "http://127.0.0.1:9/api/public/v1.0")

    code, out, _ = run(capsys, "config", "show", "--format", "json")

    doc = json.loads(out)
    assert code == 0
    assert doc["config"]["api"]["base_url"] == "http://127.0.0.1:9/api/public/v1.0"
    assert doc["config"]["schedule"] == "0 3 * * *"
    assert doc["credentials"]["privateKey"] == "**********"
    assert doc["sources"]["config"] == "default ./retention.yaml"
    assert KEY not in out


def test_explain_json_has_the_decision_and_every_rule(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain --format json carries the plan's record of the snapshot and, per policy, each
    rule with whether it kept the snapshot and, if not, why."""
    config = write_config(folder, sim.base_url)
    _, plan = document(capsys, "--config", str(config), "plan", clock=sim.clock.now)
    decisions = list(decision_lines(Path(plan["decisionsPath"])))
    kept = next(json.loads(x) for x in decisions if json.loads(x)["state"] == "kept")

    code, doc = document(
        capsys,
        "explain",
        kept["snapshotId"],
        "--plan",
        plan["planPath"],
        "--config",
        str(config),
        clock=sim.clock.now,
    )

    [policy] = doc["policies"]
    assert (code, doc["command"]) == (0, "explain")
    assert doc["decision"]["snapshotId"] == kept["snapshotId"]
    assert doc["decision"]["state"] == "kept"
    assert policy["traced"] is True
    assert any(rule["kept"] for rule in policy["rules"])
    assert all(rule["side"] in ("keep", "protect") for rule in policy["rules"])
    assert all(rule["kept"] or rule["why"] for rule in policy["rules"])


def test_doctor_json_names_its_command(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor --format json: the exit code and every check, like the other commands."""
    write_config(folder, sim.base_url)

    code, doc = document(capsys, "doctor", clock=sim.clock.now)

    assert (doc["command"], doc["exitCode"]) == ("doctor", code)
    assert {c["name"] for c in doc["checks"]} >= {"configuration", "policies", "reachable"}


def test_global_options_work_after_the_command(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--config after the command is the same as before it, and the later one wins."""
    write_config(folder, "http://127.0.0.1:9/api/public/v1.0")
    (folder / "other").mkdir()
    other = write_config(folder / "other", "http://127.0.0.1:9/api/public/v1.0")
    (folder / "other" / "policies" / "everything.yaml").rename(
        folder / "other" / "policies" / "elsewhere.yaml"
    )
    text = (folder / "other" / "policies" / "elsewhere.yaml").read_text()
    (folder / "other" / "policies" / "elsewhere.yaml").write_text(
        text.replace("name: everything", "name: elsewhere")
    )

    after = run(capsys, "validate", "--config", str(other))
    before = run(capsys, "--config", str(other), "validate")
    both = run(capsys, "--config", "nowhere.yaml", "validate", "--config", str(other))

    assert after == before == both
    assert after[0] == 0
    assert "elsewhere:" in after[1]


def test_log_format_after_the_command_turns_stderr_into_json(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--log-format json after the command makes the configuration warnings JSON lines."""
    config = write_config(folder, "http://127.0.0.1:9/api/public/v1.0")
    # Every minute, and no minimum lease: a lease of about a minute is a warning.
    text = config.read_text().replace('"0 3 * * *"', '"*/1 * * * *"')
    config.write_text(text + "lease_minimum: 0h\n")

    code, _, err = run(capsys, "validate", "--log-format", "json")

    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert code == 0
    assert records
    assert any("lease of only" in r["message"] for r in records)


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_run_json_says_how_the_run_ended(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    dry_run: bool,
) -> None:
    """run --format json prints the exit code, the run folder and reports, the plan's
    summary and the PATCH outcomes (null for a dry run), and nothing else on stdout."""
    write_config(folder, sim.base_url)

    code, doc = document(capsys, "run", *(["--dry-run"] if dry_run else []), clock=sim.clock.now)

    sent = sum(n for a, n in doc["summary"]["byAction"].items() if a not in ("held", "advisory"))
    assert (doc["command"], doc["mode"], doc["exitCode"]) == (
        "run",
        "dry-run" if dry_run else "run",
        code,
    )
    assert Path(doc["runDir"]).is_dir()
    assert sorted(Path(p).name for p in doc["reports"]) == ["report.html", "report.md"]
    assert doc["failures"] == []
    if dry_run:
        assert doc["outcomes"] is None
    else:
        assert doc["outcomes"] == {"applied": sent}


def test_apply_json_names_what_was_approved(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """apply --format json after --approve says which clusters were approved and how many
    held changes were sent."""
    write_config(folder, sim.base_url, fraction=0.1)
    _, plan = document(capsys, "plan", "--out", "plan.json", clock=sim.clock.now)
    held = [c["name"] for c in plan["plan"]["clusters"] if c["holds"]]
    fraction_only = [
        c["name"]
        for c in plan["plan"]["clusters"]
        if c["holds"] and all(h["kind"] == "max_expire_fraction" for h in c["holds"])
    ]

    code, doc = document(
        capsys, "apply", "plan.json", "--approve", fraction_only[0], clock=sim.clock.now
    )

    assert held
    assert (doc["command"], doc["mode"], doc["exitCode"]) == ("apply", "apply", code)
    assert doc["approved"]["clusters"] == [fraction_only[0]]
    assert doc["approved"]["sent"] > 0
    assert doc["outcomes"]["applied"] >= doc["approved"]["sent"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["validate"], 0),
        (["config", "show"], 0),
        (["plan"], 0),
        (["run", "--dry-run"], 0),
        (["doctor"], 0),  # the simulator and the product share one clock: no skew
        (["init", "elsewhere"], 0),
        (["apply", "no-such-plan.json"], 2),
        (["explain", "5e4e593f70dfbf1e2f6e1d36"], 2),
        (["plan", "--at", "yesterday"], 2),
        (["validate", "--policies", "broken"], 2),
        (["no-such-command"], 2),
    ],
)
def test_every_line_of_both_streams_is_json_under_log_format_json(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
) -> None:
    """`retention --log-format json CMD 2>&1 | jq -c .` never fails: with json logs stdout
    defaults to --format json, and every stderr line, the fatal error included, is JSON."""
    write_config(folder, sim.base_url)
    (folder / "broken").mkdir()
    (folder / "broken" / "p.yaml").write_text("name: p\nkeep: {dayly: 3}\n")

    got, out, err = run(capsys, "--log-format", "json", *args, clock=sim.clock.now)

    values = json_stream(out + err)
    assert got == code
    assert values
    if code == 2:
        assert any(v.get("event") == "fatal" and v["exitCode"] == code for v in values)
    else:  # the command's own document says how it ended
        assert any(v.get("command") and v.get("exitCode") == code for v in values)
