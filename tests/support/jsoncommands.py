"""The commands that take ``--format json``, found in the click command tree (so a new one is
found without being listed), and how a test invokes each: at least one invocation that
succeeds and one that fails with exit 2.

An invocation list is kept per command name; a command found in the tree with no entry here
fails the test that runs them, which names it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from retention.cli import cli
from retention.simulator.server import Simulator
from tests.support.planfiles import decision_lines
from tests.support.simfleet import P


def json_commands(group: click.Group = cli, prefix: str = "") -> list[str]:
    """The full name ("config show") of every command under ``group`` with a ``--format``
    option offering json, sorted."""
    found: list[str] = []
    for name, command in group.commands.items():
        full = f"{prefix}{name}"
        if isinstance(command, click.Group):
            found += json_commands(command, f"{full} ")
        elif any(_offers_json(param) for param in command.params):
            found.append(full)
    return sorted(found)


def _offers_json(param: click.Parameter) -> bool:
    return (
        isinstance(param, click.Option)
        and "--format" in param.opts
        and isinstance(param.type, click.Choice)
        and "json" in param.type.choices
    )


@dataclass(frozen=True)
class Invocation:
    """Arguments to run a command with (``--format json`` is added), the exit code it is
    meant to end with, and whether it serves until stopped (then it runs in a process of its
    own, stopped by SIGTERM once its document is out)."""

    argv: list[str]
    code: int
    serves: bool = False


@dataclass(frozen=True)
class Stage:
    """What the invocations may use: the simulator, the user's folder, its retention.yaml."""

    sim: Simulator
    folder: Path
    config: Path
    main: Callable[[list[str]], int]


def _explain(stage: Stage) -> list[Invocation]:
    stage.main(["plan", "--out", "plan.json"])
    line = decision_lines(stage.folder / "plan.json")[0]
    snapshot = json.loads(line)["snapshotId"]
    return [
        Invocation(["explain", snapshot, "--plan", "plan.json"], 0),
        Invocation(["explain", "5e4e593f70dfbf1e2f6e1d36", "--plan", "plan.json"], 2),
    ]


def _apply(stage: Stage) -> list[Invocation]:
    stage.main(["plan", "--out", "plan.json"])
    return [Invocation(["apply", "plan.json"], 0), Invocation(["apply", "no-such-plan.json"], 2)]


def _undo(stage: Stage) -> list[Invocation]:
    stage.main(["run"])
    [run_dir] = (stage.folder / "reports").glob("*/results.jsonl")
    return [
        Invocation(["undo", str(run_dir.parent), "--dry-run"], 0),
        Invocation(["undo", "not-a-run-folder"], 2),
    ]


def _ledger_verify(stage: Stage) -> list[Invocation]:
    stage.main(["plan"])  # a ledger to verify
    return [
        Invocation(["ledger", "verify"], 0),
        Invocation(["ledger", "verify", "--config", "no-such.yaml"], 2),
    ]


def _ledger_ack(stage: Stage) -> list[Invocation]:
    stage.main(["plan"])  # a ledger that knows the clusters
    return [
        Invocation(["ledger", "ack", "*"], 0),
        Invocation(["ledger", "ack", "no-such-cluster"], 2),
    ]


def _evidence(stage: Stage) -> list[Invocation]:
    stage.main(["plan"])  # a ledger with a run of the simulator's day
    day = stage.sim.clock.now().date().isoformat()
    # --format json is the evidence's file format here; --out - writes it to stdout.
    return [
        Invocation(["evidence", "--from", day, "--to", day, "--out", "-"], 0),
        Invocation(["evidence", "--from", day, "--to", "2099-01-01", "--out", "-"], 2),
    ]


def _broken_policies(stage: Stage) -> Path:
    """A policy folder with a misspelt key, for invocations that must end with exit 2."""
    broken = stage.folder / "broken"
    broken.mkdir(exist_ok=True)
    (broken / "p.yaml").write_text("name: p\nkeep: {dayly: 3}\n")
    return broken


def _doctor(stage: Stage) -> list[Invocation]:
    bad = stage.folder / "bad.yaml"
    broken = _broken_policies(stage)
    text = stage.config.read_text().replace("policies: policies/", f"policies: {broken}")
    bad.write_text(text)
    # A configuration problem is one of doctor's checks: it still reports, with exit 2.
    return [Invocation(["doctor"], 0), Invocation(["doctor", "--config", str(bad)], 2)]


def _warned_config(stage: Stage) -> Path:
    """A configuration whose one policy has a warning (a grace in months), for --strict."""
    warned = stage.folder / "warned"
    warned.mkdir(exist_ok=True)
    (warned / "p.yaml").write_text(POLICY + "grace: 30m\n")
    config = stage.folder / "warned.yaml"
    config.write_text(
        stage.config.read_text().replace("policies: policies/", f"policies: {warned}")
    )
    return config


def _outside(stage: Stage) -> list[Invocation]:
    words = ["simulator", "outside", "terminate", "--url", stage.sim.base_url, "--cluster"]
    return [Invocation([*words, "prod-small"], 0), Invocation([*words, "prod-nothing"], 2)]


INVOCATIONS: dict[str, Callable[[Stage], list[Invocation]]] = {
    "init": lambda _stage: [
        Invocation(["init", "starter"], 0),
        Invocation(["init", "starter"], 2),  # nothing is overwritten
    ],
    "validate": lambda stage: [
        Invocation(["validate"], 0),
        Invocation(["validate", "--policies", str(_broken_policies(stage))], 2),
    ],
    "config show": lambda _stage: [
        Invocation(["config", "show"], 0),
        Invocation(["config", "show", "--config", "no-such.yaml"], 2),
    ],
    "doctor": _doctor,
    "clusters": lambda _stage: [
        Invocation(["clusters"], 0),
        Invocation(["clusters", "--config", "no-such.yaml"], 2),
    ],
    "plan": lambda stage: [
        Invocation(["plan"], 0),
        Invocation(["plan", "--at", "yesterday"], 2),
        # The plan is written and reported; its policy warning is the exit code.
        Invocation(["plan", "--strict", "--config", str(_warned_config(stage))], 2),
    ],
    "explain": _explain,
    "diff": lambda _stage: [
        Invocation(["diff", "--base", "policies"], 0),
        Invocation(["diff", "--base", "no-such-folder"], 2),
    ],
    "forecast": lambda _stage: [
        Invocation(["forecast", "--days", "7"], 0),
        Invocation(["forecast", "--base", "no-such-folder"], 2),
    ],
    "run": lambda stage: [
        Invocation(["run", "--dry-run"], 0),
        Invocation(["run", "--dry-run", "--config", "no-such.yaml"], 2),
    ],
    "apply": _apply,
    "undo": _undo,
    "prune": lambda _stage: [
        Invocation(["prune", "--keep", "7d"], 0),
        Invocation(["prune", "--keep", "a week"], 2),
    ],
    "ledger verify": _ledger_verify,
    "ledger ack": _ledger_ack,
    "evidence": _evidence,
    "demo": lambda stage: [
        Invocation(["demo", "--report-dir", str(stage.folder / "demo")], 0),
        Invocation(["demo", "--policies", "no-such-folder"], 2),
    ],
    "simulator outside": _outside,
    "simulator serve": lambda _stage: [
        Invocation(["simulator", "serve", "--fleet", "demo", "--port", "0"], 0, serves=True),
        Invocation(["simulator", "serve", "--fleet", "no-such-fleet.yaml"], 2, serves=True),
    ],
}


def invocations(command: str, stage: Stage) -> list[Invocation]:
    """How to run ``command``; AssertionError naming it when this module has no entry."""
    assert command in INVOCATIONS, (
        f"`retention {command}` takes --format json: add how to invoke it to "
        "tests/support/jsoncommands.py INVOCATIONS"
    )
    return INVOCATIONS[command](stage)


POLICY = """\
name: everything
keep:
  last: 3
  daily: 7
safety:
  min_keep: 2
  max_expire_fraction: 1.0
"""


def stage_for(sim: Simulator, folder: Path, main: Callable[[list[str]], int]) -> Stage:
    """The user's folder set up against ``sim``: retention.yaml with its one project, and
    one policy that lets the run change snapshots without a safety gate holding them."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "everything.yaml").write_text(POLICY)
    config = folder / "retention.yaml"
    config.write_text(
        f"api:\n  base_url: {sim.base_url}\n  concurrency: 4\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
    )
    return Stage(sim, folder, config, main)


def serve_once(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run a serving command in a process of its own; once it has printed its document (or
    ended) stop it with SIGTERM. Its exit status, stdout and stderr."""
    with subprocess.Popen(
        [sys.executable, "-m", "retention", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            out = "".join(_until_document(proc))
            proc.send_signal(signal.SIGTERM)
            rest, err = proc.communicate(timeout=60)
        except BaseException:
            proc.kill()
            raise
    return proc.returncode, out + rest, err


def _until_document(proc: subprocess.Popen[str]) -> Iterator[str]:
    """The lines of ``proc``'s stdout up to the end of its first JSON document (or its end)."""
    assert proc.stdout is not None
    text = ""
    for line in proc.stdout:
        text += line
        yield line
        if _is_json(text):
            return


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def json_stream(text: str) -> list[Any]:
    """Every JSON value in ``text``, in order; AssertionError at the first thing that is not
    one (what `jq -c .` would choke on)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"not JSON at {at}: {text[at : at + 80]!r}") from exc
        values.append(value)
