"""The command line: help and version, every command documented, errors as exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import click
import pytest

from retention import __version__, cli, entry
from retention.errors import AuthenticationError, ConfigError, ResponseInfo
from retention.runfolder.planread import open_plan
from tests.support.journal import intent_lines, outcome_lines

README = Path(__file__).resolve().parent.parent / "README.md"


def all_commands() -> list[tuple[str, click.Command]]:
    """Every command and subcommand of the CLI, with its full name."""
    found: list[tuple[str, click.Command]] = []

    def walk(prefix: str, command: click.Command) -> None:
        found.append((prefix, command))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(f"{prefix} {name}".strip(), sub)

    walk("", cli.cli)
    return found


@pytest.mark.parametrize(("name", "command"), all_commands(), ids=lambda v: str(v) or "retention")
def test_every_command_has_help_text_with_an_example(name: str, command: click.Command) -> None:
    """No command ships without a help text, and each shows an example."""
    assert command.help, f"'retention {name}' has no help text"
    assert "Example" in command.help, f"'retention {name}' help has no example"


@pytest.mark.parametrize("name", [n for n, _ in all_commands() if n])
def test_every_command_is_in_the_readme(name: str) -> None:
    """The README mentions every command, so the docs cannot fall behind the CLI."""
    assert f"retention {name}" in README.read_text()


def test_python_dash_m_retention_help_and_version() -> None:
    """`python -m retention --help` and `--version` work as a fresh user would run them; the
    version says which form of the core runs (plain Python in an editable install)."""
    helped = subprocess.run(
        [sys.executable, "-m", "retention", "--help"], capture_output=True, text=True, check=False
    )
    versioned = subprocess.run(
        [sys.executable, "-m", "retention", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )

    assert helped.returncode == 0
    assert "Usage: retention" in helped.stdout
    assert "demo" in helped.stdout
    assert versioned.returncode == 0
    assert versioned.stdout.strip() == f"retention, version {__version__} (plain Python core)"


def test_unknown_command_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped command exits 2 with click's usage message."""
    assert cli.main(["frobnicate"]) == 2
    assert "No such command 'frobnicate'" in capsys.readouterr().err


def _demo_runs(folder: Path) -> tuple[Path, Path]:
    """The demo's two run folders in ``folder``: the ledger's baseline, then the run that
    caught what the demo changed outside retention."""
    runs = {
        json.loads((d / "plan.json").read_text())["ledger"]["baseline"]: d
        for d in folder.iterdir()
        if d.is_dir()
    }
    assert sorted(runs) == [False, True]
    return runs[True], runs[False]


def test_demo_runs_the_whole_job_and_writes_the_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """demo runs plan, gates, apply and reports on the simulator's demo fleet and says where
    the reports are and that nothing real was touched."""
    policies = Path(__file__).resolve().parent.parent / "policies"

    code = cli.main(["demo", "--policies", str(policies), "--report-dir", str(tmp_path)])

    out = capsys.readouterr().out
    baseline, second = _demo_runs(tmp_path)
    run_dir = baseline
    names = sorted(p.name for p in run_dir.iterdir())
    document = json.loads((run_dir / "plan.json").read_text())
    results = outcome_lines(run_dir / "results.jsonl")
    changes = list(open_plan(run_dir / "plan.json").read_list("changes"))
    assert code == 0
    assert names == [
        "approve.txt",
        "decisions.jsonl.zst",
        "plan.json",
        "report.html",
        "report.md",
        "results.jsonl",
    ]
    assert document["summary"]["clusters"] == 13  # 10 clusters and 3 legacy config servers
    assert len(results) == len(changes) > 0
    assert all(line["outcome"] == "applied" for line in results)
    # Each PATCH was journalled ahead: its intent line stands before its outcome.
    assert len(intent_lines(run_dir / "results.jsonl")) == len(results)
    assert "hold prod-billing: OPEN alert" in out
    # Each hold names the line of the policy setting behind it.
    # The fraction's share is of the snapshots it counts; it says how many of the table's
    # it left out.
    fraction = re.escape("more than max_expire_fraction 0.5; ") + (
        r"\d+ of the cluster's \d+ snapshots not counted \(incomplete or awaiting deletion\) "
    )
    setting = re.escape(f"[set at {policies}/production.yaml:24]")
    assert re.search(
        rf"hold prod-orders: \d+ of \d+ snapshots would expire \(\d+%\), {fraction}{setting}", out
    )
    assert f"[set at {policies}/production.yaml:4 (default hold_on_alerts)]" in out
    assert f"Run 1, the ledger's baseline: exit 3, run folder {baseline}" in out
    # What it printed in full is the second run, which caught what the demo changed.
    caught = json.loads((second / "plan.json").read_text())["outsideChanges"]
    assert sorted(c["kind"] for c in caught) == ["changed", "deleted-early"]
    assert (
        "Changed outside retention: 2 changes since the last run (1 expiry changed, 1 deleted "
        "early)." in out
    )
    assert re.search(r"Ledger head: [0-9a-f]{64}\n", out)
    assert "nothing real was touched" in out


def test_demo_with_missing_policies_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """demo with --policies pointing nowhere names the path, says what to do, exits 2."""
    assert cli.main(["demo", "--policies", str(tmp_path / "none")]) == 2
    assert f"no policies at {tmp_path / 'none'}; pass --policies DIR" in capsys.readouterr().err


def test_demo_anywhere_uses_the_example_policies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from a folder without policies/, demo plans with the examples shipped with
    retention (here, those of the checkout) and writes its reports under ./reports."""
    monkeypatch.chdir(tmp_path)

    code = cli.main(["demo"])

    assert code == 0, capsys.readouterr().err
    for run_dir in _demo_runs(tmp_path / "reports"):
        plan = json.loads((run_dir / "plan.json").read_text())
        assert {p["name"] for p in plan["policies"]} == {
            "compliance",
            "compliance-audit-project",
            "dev",
            "production",
        }


def _failing(error: BaseException) -> click.Command:
    @click.command("boom")
    def boom() -> None:
        """Raise on purpose.

        Example: retention boom
        """
        raise error

    return boom


@pytest.mark.parametrize(
    ("error", "code", "expected"),
    [
        (
            AuthenticationError(
                "the API refused the credentials",
                endpoint="GET /groups/{PROJECT-ID}/alerts",
                response=ResponseInfo(status=401),
            ),
            5,
            "error: GET /groups/{PROJECT-ID}/alerts: the API refused the credentials (HTTP 401)",
        ),
        (
            ConfigError("2 problems in retention.yaml", ["api.base_url: required", "x: unknown"]),
            2,
            "error: 2 problems in retention.yaml\n  - api.base_url: required\n  - x: unknown",
        ),
    ],
)
def test_retention_errors_become_their_exit_code_and_message(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: Exception,
    code: int,
    expected: str,
) -> None:
    """A RetentionError prints one clear message (and its problems) and exits with its code."""
    monkeypatch.setitem(cli.cli.commands, "boom", _failing(error))

    assert cli.main(["boom"]) == code
    err = capsys.readouterr().err
    assert err.strip() == expected
    assert "Traceback" not in err


def test_internal_error_shows_no_traceback_unless_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug prints a one-line internal error (exit 1); --debug adds the traceback."""
    monkeypatch.setitem(cli.cli.commands, "boom", _failing(KeyError("lost")))

    assert cli.main(["boom"]) == 1
    plain = capsys.readouterr().err
    assert cli.main(["--debug", "boom"]) == 1
    debug = capsys.readouterr().err

    assert "internal error: KeyError: 'lost'" in plain
    assert "Traceback" not in plain
    assert "Traceback" in debug


def test_walking_commands_restart_with_two_malloc_arenas(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan/run/apply/demo re-exec once with MALLOC_ARENA_MAX=2 (flat memory, see the
    docstring); other commands and an already set value are left alone."""
    execs: list[list[str]] = []

    def fake_execv(path: str, args: list[str]) -> None:
        execs.append(args)

    monkeypatch.setattr(os, "execv", fake_execv)
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    entry.reexec_with_arena_limit(["--help"])
    entry.reexec_with_arena_limit(["validate"])
    assert execs == []

    entry.reexec_with_arena_limit(["--config", "r.yaml", "plan", "--at", "2027-01-01T00:00:00Z"])

    assert execs == [
        [
            sys.executable,
            "-m",
            "retention",
            "--config",
            "r.yaml",
            "plan",
            "--at",
            "2027-01-01T00:00:00Z",
        ]
    ]
    assert os.environ["MALLOC_ARENA_MAX"] == "2"
    entry.reexec_with_arena_limit(["run"])  # already set now: no second exec
    assert len(execs) == 1


def test_ctrl_c_while_the_command_line_loads_is_one_word_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C while Python is still loading the command line (a second on a busy
    machine) exits 130 with "interrupted", not an import traceback."""

    class Loading(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "retention.cli", Loading("retention.cli"))
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    monkeypatch.setattr(sys, "argv", ["retention", "plan"])

    with pytest.raises(SystemExit) as info:
        entry.run()

    assert info.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"
