"""Logs on stderr: with --log-format json every line is a JSON object (the fatal error and the
run-finished event included), warnings come once and through logging, and retries are one
line of ours that counts instead of urllib3's Retry repr per attempt."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from urllib3.response import HTTPResponse

from retention import cli
from retention.api.client import OpsManagerClient
from retention.api.transport import RetryPolicy
from retention.errors import (
    AuthenticationError,
    ConnectError,
    PolicyError,
    ResponseInfo,
    ServerError,
    exit_meaning,
)
from retention.ops import logs
from retention.runfolder.planread import open_plan
from retention.simulator.server import Simulator
from tests.support.client import PRIVATE_KEY, PUBLIC_KEY, fixed_clock, make_client
from tests.support.digest import DigestChecker
from tests.support.fakeapi import list_page, snapshot
from tests.support.journal import outcome_lines
from tests.support.simfleet import P, running
from tests.support.wire_server import Fault, WireState, closed_port, serve

SNAPSHOT_ENDPOINT = "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}"
POLICY = "name: everything\nkeep:\n  last: 2\nsafety:\n  min_keep: 1\n  max_expire_fraction: 1.0\n"


@pytest.fixture(autouse=True)
def restore_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No log format from the environment, and the logging set-up cli.main and
    logs.configure replace is put back after each test."""
    monkeypatch.delenv(logs.LOG_FORMAT_ENV, raising=False)
    monkeypatch.delenv("RETENTION_DEBUG", raising=False)
    root, run = logging.getLogger(), logging.getLogger(logs.RUN_LOGGER)
    handlers, level, run_level = list(root.handlers), root.level, run.level
    logging.captureWarnings(False)  # an earlier test's json mode may have left it on
    yield
    logging.captureWarnings(False)
    root.handlers[:] = handlers
    root.setLevel(level)
    run.setLevel(run_level)


def json_lines(err: str) -> list[dict[str, Any]]:
    """Every non-empty stderr line, each parsed as a JSON object (fails on any other line)."""
    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert all(isinstance(r, dict) for r in records)
    return records


def failing(error: BaseException) -> click.Command:
    """A command that raises ``error``."""

    @click.command("boom")
    def boom() -> None:
        """Raise on purpose.

        Example: retention boom
        """
        raise error

    return boom


# ---- the fatal event ---------------------------------------------------------------------


def test_an_api_error_is_one_fatal_json_line_with_endpoint_and_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --log-format json, a 401 ends the command with one JSON object: the message, exit
    code 5 and its meaning, the endpoint and the status."""
    error = AuthenticationError(
        "the API refused the credentials",
        endpoint="GET /groups/{PROJECT-ID}/alerts",
        response=ResponseInfo(status=401),
    )
    monkeypatch.setitem(cli.cli.commands, "boom", failing(error))

    code = cli.main(["--log-format", "json", "boom"])

    [record] = json_lines(capsys.readouterr().err)
    assert code == 5
    assert record["event"] == "fatal"
    assert record["level"] == "error"
    assert record["message"] == (
        "GET /groups/{PROJECT-ID}/alerts: the API refused the credentials (HTTP 401)"
    )
    assert record["exitCode"] == 5
    assert record["meaning"] == exit_meaning(5)
    assert record["endpoint"] == "GET /groups/{PROJECT-ID}/alerts"
    assert record["status"] == 401
    assert record["errorType"] == "AuthenticationError"
    assert "problems" not in record


def test_a_policy_error_is_one_json_line_with_its_problems_as_an_array(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad policy, multi-line in text mode, is one JSON object whose problems are a list."""
    problems = ["bad.yaml:5: keep.daily: must be >= 0", "bad.yaml:7: grace: not a duration"]
    monkeypatch.setitem(cli.cli.commands, "boom", failing(PolicyError("2 problems", problems)))

    code = cli.main(["--log-format", "json", "boom"])

    [record] = json_lines(capsys.readouterr().err)
    assert code == 2
    assert (record["message"], record["exitCode"]) == ("2 problems", 2)
    assert record["problems"] == problems
    assert record["errorType"] == "PolicyError"


def test_a_usage_error_is_json_when_the_environment_asks_for_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """RETENTION_LOG_FORMAT=json makes even click's usage error (before any command ran) one
    JSON object, exit 2."""
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "json")

    code = cli.main(["frobnicate"])

    [record] = json_lines(capsys.readouterr().err)
    assert code == 2
    assert record["message"] == "No such command 'frobnicate'."
    assert record["exitCode"] == 2
    assert record["usage"].startswith("Usage: retention")


def test_text_mode_keeps_the_usage_message_as_it_was(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--log-format text on the command line wins over the environment's json, and prints
    click's usage text, not JSON."""
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "json")

    code = cli.main(["--log-format", "text", "frobnicate"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("Usage: retention")
    assert "Error: No such command 'frobnicate'." in err


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        ([], {}, "text"),
        ([], {"RETENTION_LOG_FORMAT": "json"}, "json"),
        ([], {"RETENTION_LOG_FORMAT": "JSON "}, "json"),
        (["--log-format", "json", "plan"], {}, "json"),
        (["plan", "--log-format=json"], {}, "json"),
        (["--log-format", "json", "plan", "--log-format", "text"], {}, "text"),
        (["--log-format", "text"], {"RETENTION_LOG_FORMAT": "json"}, "text"),
        (["explain", "--", "--log-format", "json"], {}, "text"),
    ],
)
def test_requested_format_reads_argv_then_the_environment(
    argv: list[str], environ: dict[str, str], expected: str
) -> None:
    """The last --log-format of the command line wins, then RETENTION_LOG_FORMAT."""
    assert logs.requested_format(argv, environ) == expected


def test_an_internal_error_is_json_with_a_traceback_only_with_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug is one JSON object naming the exception; --debug (or RETENTION_DEBUG=1) adds the
    traceback as a string field, still on one line."""
    monkeypatch.setitem(cli.cli.commands, "boom", failing(KeyError("lost")))

    assert cli.main(["--log-format", "json", "boom"]) == 1
    [plain] = json_lines(capsys.readouterr().err)
    assert cli.main(["--log-format", "json", "--debug", "boom"]) == 1
    [debug] = json_lines(capsys.readouterr().err)

    monkeypatch.setenv("RETENTION_DEBUG", "1")
    assert cli.main(["--log-format", "json", "boom"]) == 1
    [from_environment] = json_lines(capsys.readouterr().err)

    assert plain["message"] == "internal error: KeyError: 'lost'"
    assert plain["errorType"] == "KeyError"
    assert "traceback" not in plain
    assert "Traceback (most recent call last)" in debug["traceback"]
    assert "KeyError: 'lost'" in debug["traceback"]
    assert "Traceback (most recent call last)" in from_environment["traceback"]


def test_an_abort_is_one_json_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C inside a command (click turns it into an abort) is one JSON object and exit
    130, the shell's code for an interrupt, as docs/commands.md says."""
    monkeypatch.setitem(cli.cli.commands, "boom", failing(KeyboardInterrupt()))

    assert cli.main(["--log-format", "json", "boom"]) == 130
    [record] = json_lines(capsys.readouterr().err)
    assert (record["message"], record["exitCode"], record["errorType"]) == (
        "interrupted",
        130,
        "KeyboardInterrupt",
    )


def test_an_interrupt_outside_a_command_is_one_json_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C before click runs a command (while parsing, say) is one JSON object, exit 130."""

    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.cli, "main", interrupted)

    assert cli.main(["--log-format", "json", "plan"]) == 130
    [record] = json_lines(capsys.readouterr().err)
    assert (record["message"], record["exitCode"]) == ("interrupted", 130)
    assert record["meaning"] == "stopped by SIGINT (Ctrl-C) before the end"


def test_a_missing_configuration_is_a_json_line_from_a_real_process(tmp_path: Path) -> None:
    """`retention --log-format json plan` without a configuration, run as a user runs it:
    every stderr line is a JSON object, the last the fatal error with its problems."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RETENTION_")}

    done = subprocess.run(
        [sys.executable, "-m", "retention", "--log-format", "json", "plan"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    records = json_lines(done.stderr)
    assert done.returncode == 2
    assert [r.get("event") for r in records] == ["fatal"]
    assert records[0]["exitCode"] == 2
    assert any("retention.yaml" in p for p in records[0]["problems"])
    assert any("RETENTION_PUBLIC_KEY" in p for p in records[0]["problems"])


# ---- the run-finished event ----------------------------------------------------------------


def write_config(folder: Path, base_url: str, extra_api: str = "") -> Path:
    """retention.yaml for the small test fleet's project and one policy; reports in folder."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "everything.yaml").write_text(POLICY)
    path = folder / "retention.yaml"
    path.write_text(
        f"api:\n  base_url: {base_url}\n  concurrency: 4\n{extra_api}"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
        "reports:\n  dir: reports/\n"
    )
    return path


def test_a_run_logs_one_run_finished_event_in_json(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --dry-run` with json logs ends with one run-finished event: mode, run id, exit
    code and meaning, the plan's counts, the run folder and the duration."""
    write_config(folder, sim.base_url)

    code = cli.main(["--log-format", "json", "run", "--dry-run"], clock=sim.clock.now)

    records = json_lines(capsys.readouterr().err)
    [event] = [r for r in records if r.get("event") == "run-finished"]
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    head = open_plan(run_dir / "plan.json").head
    assert event["level"] == "info"
    assert event["logger"] == "retention.run"
    assert event["mode"] == "dry-run"
    assert event["exitCode"] == code
    assert event["meaning"] == exit_meaning(code)
    assert run_dir.name.endswith("-" + event["runId"])
    assert event["runDir"] == str(run_dir.resolve())
    assert event["counts"]["changes"] == head["summary"]["byAction"]
    assert event["counts"]["snapshots"] == head["summary"]["snapshots"] > 0
    assert event["counts"]["outcomes"] == {}
    assert sorted(Path(p).name for p in event["reports"]) == ["report.html", "report.md"]
    assert 0 <= event["durationSeconds"] < 120


def test_in_text_mode_the_run_finished_event_shows_only_with_debug(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal the summary says how the run ended: the event stays out of text logs,
    unless --debug asks for everything."""
    write_config(folder, sim.base_url)

    code = cli.main(["run", "--dry-run"], clock=sim.clock.now)
    quiet = capsys.readouterr().err
    cli.main(["--debug", "run", "--dry-run"], clock=sim.clock.now)
    debug = capsys.readouterr().err

    assert "finished: exit" not in quiet
    assert any(
        line.startswith("INFO retention.run: dry-run ")
        and line.endswith(f"finished: exit {code}, {exit_meaning(code)}")
        for line in debug.splitlines()
    )


def test_failed_changes_of_an_apply_are_json_events_before_the_run_finished(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An apply whose PATCHes fail (503 after retries): each failure shown is a change-failed
    event (at most 10), and run-finished counts the outcomes; every line is JSON."""
    with running() as simulator:
        write_config(folder, simulator.base_url)
        clock = simulator.clock.now
        assert cli.main(["plan", "--out", "plan.json"], clock=clock) == 3  # alert holds prod-small
        capsys.readouterr()

        def unavailable(self: OpsManagerClient, *_args: Any) -> Any:
            raise ServerError(
                "the API answered 503: busy",
                endpoint="PATCH /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots/{SNAPSHOT-ID}",
                response=ResponseInfo(503),
            )

        monkeypatch.setattr(OpsManagerClient, "patch_snapshot", unavailable)
        code = cli.main(["--log-format", "json", "apply", "plan.json"], clock=clock)

    records = json_lines(capsys.readouterr().err)
    failed = [r for r in records if r.get("event") == "change-failed"]
    [finished] = [r for r in records if r.get("event") == "run-finished"]
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]
    results = outcome_lines(run_dir / "results.jsonl")
    failed_ids = [x["snapshotId"] for x in results if x["outcome"] == "failed"]
    assert code == 1
    assert len(failed) == min(10, len(failed_ids)) > 0
    assert {r["snapshotId"] for r in failed} <= set(failed_ids)
    assert all((r["level"], r["outcome"], r["status"]) == ("error", "failed", 503) for r in failed)
    assert finished["mode"] == "apply"
    assert finished["exitCode"] == 1
    assert finished["counts"]["outcomes"]["failed"] == len(failed_ids)
    assert records[-1] is finished


# ---- configuration warnings ------------------------------------------------------------------


def test_configuration_warnings_are_json_objects_in_json_mode(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configuration warning (verify_tls: false) is a JSON object on stderr in json mode."""
    write_config(folder, "http://127.0.0.1:9/api/public/v1.0", "  verify_tls: false\n")

    code = cli.main(["--log-format", "json", "config", "show"])

    [record] = json_lines(capsys.readouterr().err)
    assert code == 0
    assert record["level"] == "warning"
    assert record["event"] == "config-warning"
    assert record["logger"] == "retention.config"
    assert record["message"].startswith("api.verify_tls is false")


def test_configuration_warnings_keep_their_look_in_text_mode(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In text mode a configuration warning still reads "warning: ..." on its own line."""
    write_config(folder, "http://127.0.0.1:9/api/public/v1.0", "  verify_tls: false\n")

    assert cli.main(["config", "show"]) == 0

    lines = capsys.readouterr().err.splitlines()
    assert lines == ["warning: api.verify_tls is false: TLS is not verified, answers can be forged"]


# ---- retries -----------------------------------------------------------------------------------


@pytest.fixture
def state() -> WireState:
    """The wire server's script: answers one snapshot, no faults yet."""
    return WireState(checker=DigestChecker(PUBLIC_KEY, PRIVATE_KEY), body=snapshot("s1"))


@pytest.fixture
def base_url(state: WireState) -> Iterator[str]:
    """The running wire server's base URL."""
    with serve(state) as url:
        yield url


NO_WAIT = RetryPolicy(retries=5, backoff_factor=0.0, jitter=0.0)


def test_the_first_retry_is_one_warning_line_naming_endpoint_status_and_attempt(
    state: WireState, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two 503s before the answer: one WARNING line of ours, endpoint template, status,
    attempt of attempts and the wait, saying the next retries are counted; the second
    retry is counted, not logged; nothing else on stderr."""
    state.faults = [Fault("status", 503), Fault("status", 503)]
    logs.configure(debug=False, log_format="text", clock=fixed_clock)

    with make_client(base_url, retry=NO_WAIT) as api:
        assert api.get_snapshot("p1", "c1", "s1").id == "s1"
        retries = api.stats.retries

    assert retries == 2
    assert capsys.readouterr().err.splitlines() == [
        f"WARNING retention.api: retrying {SNAPSHOT_ENDPOINT} after HTTP 503, "
        "attempt 2 of 6, in 0.0s; retries in the next 60s are counted, not logged",
    ]


def test_connection_refused_retries_are_ours_and_urllib3s_are_dropped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A wrong port: one line of ours saying "connection refused (host:port)", none of
    urllib3's "Retrying (Retry(...))" lines, and an error that says the same, how many
    tries it took and which setting to check."""
    port = closed_port()
    url = f"http://127.0.0.1:{port}/api/public/v1.0"
    logs.configure(debug=False, log_format="text", clock=fixed_clock)
    policy = RetryPolicy(retries=2, backoff_factor=0.0, jitter=0.0)

    with make_client(url, retry=policy) as api, pytest.raises(ConnectError) as info:
        api.get_snapshot("p1", "c1", "s1")

    where = f"connection refused (127.0.0.1:{port})"
    assert capsys.readouterr().err.splitlines() == [
        f"WARNING retention.api: retrying {SNAPSHOT_ENDPOINT} after {where}, "
        "attempt 2 of 3, in 0.0s; retries in the next 60s are counted, not logged",
    ]
    assert str(info.value) == (
        f"{SNAPSHOT_ENDPOINT}: cannot reach the API at {url}: {where}, after 3 tries; "
        "check api.base_url"
    )


def test_retry_events_in_json_carry_fields_and_no_secret(
    state: WireState, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In json mode a retry is an event with endpoint, path (no query), status and attempts,
    and no line holds the private key or the digest header."""
    state.body = list_page([snapshot("s1")], 1)
    state.faults = [Fault("status", 503, headers={"Retry-After": "0"})]
    logs.configure(debug=False, log_format="json", clock=fixed_clock)

    with make_client(base_url, retry=NO_WAIT) as api:
        api.list_snapshots("p1", "c1").collect()

    err = capsys.readouterr().err
    [record] = json_lines(err)
    assert record["event"] == "retry"
    assert record["endpoint"] == "GET /groups/{PROJECT-ID}/clusters/{CLUSTER-ID}/snapshots"
    assert record["path"] == "/api/public/v1.0/groups/p1/clusters/c1/snapshots"
    assert (record["status"], record["attempt"], record["attempts"]) == (503, 2, 6)
    assert record["reason"] == "HTTP 503"
    assert PRIVATE_KEY not in err
    assert "Digest" not in err
    assert "response=" not in err


def test_a_retry_outside_a_client_call_names_the_path_without_its_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without an endpoint to name, the retry line gives the URL's path, never its query."""
    retry = RetryPolicy(retries=3, backoff_factor=0.0, jitter=0.0).urllib3_retry()
    caplog.set_level(logging.WARNING, logger="retention.api")

    retry.increment(
        "GET", "/api/public/v1.0/groups/p1/clusters?pageNum=2", response=HTTPResponse(status=503)
    )

    assert [r.getMessage() for r in caplog.records] == [
        "retrying GET /api/public/v1.0/groups/p1/clusters after HTTP 503, attempt 2 of 4, "
        "in 0.0s; retries in the next 60s are counted, not logged"
    ]


def test_urllib3_retry_warnings_are_filtered_and_its_other_records_pass() -> None:
    """logs.configure drops urllib3's retry warning (and only it) on its pool logger."""
    logs.configure(debug=False, log_format="text", clock=fixed_clock)
    pool = logging.getLogger(logs.URLLIB3_POOL_LOGGER)

    def record(msg: str, **extra: Any) -> logging.LogRecord:
        made = pool.makeRecord(pool.name, logging.WARNING, __file__, 1, msg, (), None)
        made.__dict__.update(extra)
        return made

    retrying = record("Retrying (%r) after connection broken by '%r': %s")
    tagged = record("anything", **{"__urllib3-retry-warning": {"host": "h"}})
    full = record("Connection pool is full, discarding connection: %s")
    assert [pool.filter(r) for r in (retrying, tagged, full)] == [False, False, True]


def test_python_warnings_are_json_objects_in_json_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """A library's Python warning, raw text on stderr by default, is a JSON object in json
    mode (logged on py.warnings)."""
    logs.configure(debug=False, log_format="json", clock=fixed_clock)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("something a library says", UserWarning, stacklevel=1)

    [record] = json_lines(capsys.readouterr().err)
    assert (record["logger"], record["level"]) == ("py.warnings", "warning")
    assert "UserWarning: something a library says" in record["message"]


# ---- formatters and handler -------------------------------------------------------------------


def test_json_formatter_puts_fields_at_the_top_level_without_overriding_its_own() -> None:
    """A record's ``fields`` become top-level keys; time, level, logger and message stay the
    record's own."""
    logger = logging.getLogger("retention.test")
    record = logger.makeRecord(
        logger.name,
        logging.INFO,
        __file__,
        1,
        "run %s done",
        ("r1",),
        None,
        extra={"fields": {"event": "run-finished", "runId": "r1", "level": "x", "message": "y"}},
    )

    entry = json.loads(logs.JsonFormatter(fixed_clock).format(record))

    assert list(entry)[:5] == ["time", "level", "logger", "event", "message"]
    assert (entry["level"], entry["message"], entry["runId"]) == ("info", "run r1 done", "r1")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "clear", "starts"),
    [(_Terminal(), True, "\r\x1b[K"), (io.StringIO(), True, "WARNING"), (_Terminal(), False, "{")],
    ids=["text-on-a-terminal", "text-in-a-file", "json-on-a-terminal"],
)
def test_on_a_terminal_a_text_log_line_starts_on_a_clean_line(
    stream: io.StringIO, clear: bool, starts: str
) -> None:
    """A text log line on a terminal first erases a progress line left without its newline;
    in a file, and for JSON, the line is written as it is."""
    handler = logs.StderrHandler(stream, clear_line=clear)
    handler.setFormatter(logs.TextFormatter() if clear else logs.JsonFormatter(fixed_clock))
    logger = logging.getLogger("retention.test")
    record = logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "late", (), None)

    handler.emit(record)

    assert stream.getvalue().startswith(starts)
