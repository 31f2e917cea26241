"""The exit code a --format json document states is the one the command returns: every
command that takes --format json (found in the command tree) is run against the simulator,
once to succeed and once to fail, and the document's exitCode is compared with the status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retention import cli
from retention.simulator.server import Simulator
from tests.support.jsoncommands import (
    Invocation,
    invocations,
    json_commands,
    json_stream,
    serve_once,
    stage_for,
)


def test_the_commands_found_are_those_the_documentation_lists() -> None:
    """The discovery finds commands by their --format option: the ones docs/commands.md
    documents with --format json, and not schema, which prints a schema only."""
    found = json_commands()

    assert "schema" not in found
    assert {"plan", "explain", "demo", "simulator serve", "config show"} <= set(found)


@pytest.mark.parametrize("command", json_commands())
def test_exit_code_in_the_json_document_is_the_exit_status(
    command: str, sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """For each invocation the JSON names its command and states the status the command
    returns; one that fails before it can report leaves stdout empty and its fatal JSON
    line (--log-format json) states the status."""

    def main(argv: list[str]) -> int:
        code = cli.main(argv, clock=sim.clock.now)
        capsys.readouterr()
        return code

    stage = stage_for(sim, folder, main)
    ran = [_run(invocation, folder, capsys, sim) for invocation in invocations(command, stage)]

    assert {code for code, _ in ran} >= {0, 2}
    for code, values in ran:
        stated = [v["exitCode"] for v in values if isinstance(v, dict) and "exitCode" in v]
        documents = [v for v in values if isinstance(v, dict) and "command" in v]
        assert stated, f"{command}: no exitCode in {values}"
        assert set(stated) == {code}, f"{command}: exitCode {stated}, status {code}"
        assert all(d["command"] == command for d in documents)


def _run(
    invocation: Invocation, folder: Path, capsys: pytest.CaptureFixture[str], sim: Simulator
) -> tuple[int, list[object]]:
    """Run ``invocation`` with --format json (and json logs when it is meant to fail, so the
    error states its code too); its status and every JSON value printed. The status must be
    the one the invocation is meant to end with."""
    logs = ["--log-format", "json"] if invocation.code else []
    argv = [*logs, *invocation.argv, "--format", "json"]
    if invocation.serves:
        code, out, err = serve_once(argv, folder)
    else:
        code = cli.main(argv, clock=sim.clock.now)
        captured = capsys.readouterr()
        out, err = captured.out, captured.err
    assert code == invocation.code, f"{invocation.argv}: exit {code}\n{out}\n{err}"
    values = json_stream(out)
    assert len(values) <= 1, "stdout holds one document at most"
    if invocation.code:
        values += json_stream(err)
    else:
        assert json.loads(out)  # a command that succeeds reports
    return code, values
