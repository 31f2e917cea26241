"""A wrong port: a person at a terminal hears of it in about a second (a couple of quick
retries, then exit 5 naming host:port and the setting to check); an unattended run keeps
the full retries, in case the service is restarting, but logs one line that counts them
rather than one per attempt. Attempts are counted, never timed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError

from retention import cli
from retention.api.retrying import RetryNotes, RetryPolicy
from retention.errors import EXIT_UNREACHABLE, ConnectError
from retention.ops import logs
from tests.support.client import fixed_clock, make_client
from tests.support.simfleet import P
from tests.support.wire_server import closed_port

POLICY = "name: everything\nkeep:\n  last: 2\n"
NO_WAIT = RetryPolicy(retries=5, backoff_factor=0.0, jitter=0.0)


@pytest.fixture(autouse=True)
def restore_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No log format from the environment; the logging set-up that cli.main and
    logs.configure replace is put back afterwards."""
    monkeypatch.delenv(logs.LOG_FORMAT_ENV, raising=False)
    monkeypatch.delenv("RETENTION_DEBUG", raising=False)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def wrong_port(folder: Path) -> tuple[Path, str]:
    """retention.yaml whose api.base_url names a port nothing listens on; that host:port."""
    where = f"127.0.0.1:{closed_port()}"
    (folder / "policies").mkdir()
    (folder / "policies" / "everything.yaml").write_text(POLICY)
    config = folder / "retention.yaml"
    config.write_text(
        f"api:\n  base_url: http://{where}/api/public/v1.0\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
    )
    return config, where


def warnings_in(err: str) -> list[str]:
    """The WARNING lines of a text-mode stderr."""
    return [line for line in err.splitlines() if line.startswith("WARNING")]


def retries_in(metrics: Path) -> int:
    """retention_api_retries from a metrics textfile."""
    [line] = [x for x in metrics.read_text().splitlines() if x.startswith("retention_api_retries")]
    return int(float(line.split()[-1]))


def test_a_refused_first_contact_at_a_terminal_fails_after_a_short_try(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Interactive, nothing has answered yet: two quick retries (not the policy's five),
    one warning line, and a ConnectError naming host:port and, for a client made without a
    configuration, api.base_url."""
    logs.configure(debug=False, log_format="text", clock=fixed_clock)  # on the stderr capsys reads
    port = closed_port()
    url = f"http://127.0.0.1:{port}/api/public/v1.0"

    with make_client(url, retry=NO_WAIT, interactive=True) as api:
        with pytest.raises(ConnectError) as info:
            api.get_project(P)
        retries = api.stats.retries

    message = str(info.value)
    assert retries == RetryPolicy().first_contact_retries == 2
    assert len(warnings_in(capsys.readouterr().err)) == 1
    assert f"connection refused (127.0.0.1:{port}), after 3 tries" in message
    assert message.endswith("; check api.base_url")


def test_an_unattended_client_retries_the_full_policy_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not interactive (cron, a pod): the policy's five retries, still one warning line."""
    logs.configure(debug=False, log_format="text", clock=fixed_clock)  # on the stderr capsys reads
    port = closed_port()

    with make_client(f"http://127.0.0.1:{port}/api/public/v1.0", retry=NO_WAIT) as api:
        with pytest.raises(ConnectError) as info:
            api.get_project(P)
        retries = api.stats.retries

    err = capsys.readouterr().err
    assert retries == 5
    assert len(err.splitlines()) == 1
    assert "retries in the next 60s are counted, not logged" in err
    assert "after 6 tries" in str(info.value)


def test_once_the_service_answered_a_refusal_gets_the_full_retries() -> None:
    """At a terminal too, a refused connection after the service has answered is a restart
    more likely than a typo: the policy's retries, not the short try."""
    port = closed_port()

    with make_client(
        f"http://127.0.0.1:{port}/api/public/v1.0", retry=NO_WAIT, interactive=True
    ) as api:
        api.notes.answer()
        with pytest.raises(ConnectError) as info:
            api.get_project(P)
        retries = api.stats.retries

    assert retries == 5
    assert "api.base_url" not in str(info.value)


def test_only_a_refusal_fails_fast_not_a_connect_timeout() -> None:
    """A connection that timed out may be a slow network: it is retried by the policy even
    before the first answer at a terminal; a refused one is given up after two retries."""

    def tries(error: Exception) -> int:
        retry = NO_WAIT.urllib3_retry(notes=RetryNotes(interactive=True))
        for attempt in range(1, 10):
            try:
                retry = retry.increment("GET", "/api/public/v1.0/groups/p1", error=error)
            except MaxRetryError:
                return attempt
        return 10

    refused = NewConnectionError(None, "Failed to establish a new connection: Connection refused")  # type: ignore[arg-type]
    slow = ConnectTimeoutError("connect timed out")

    assert (tries(refused), tries(slow)) == (3, 6)


def test_a_plan_at_a_terminal_exits_5_in_two_lines_naming_the_setting(
    wrong_port: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """retention plan from a terminal against a wrong port: exit 5, at most two lines on
    stderr (the first retry, the error), the error naming host:port and the file whose
    api.base_url set it (RETENTION_BASE_URL is not set, so it is not blamed)."""
    config, where = wrong_port

    code = cli.main(["--config", str(config), "plan"], interactive=True)

    err = capsys.readouterr().err
    assert code == EXIT_UNREACHABLE
    assert len(err.splitlines()) <= 2
    assert f"connection refused ({where})" in err
    assert err.rstrip().endswith(f"; check api.base_url of {config}")
    assert "RETENTION_BASE_URL" not in err


@pytest.mark.usefixtures("instant_retries")
def test_a_wrong_port_from_retention_base_url_names_the_variable(
    wrong_port: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A wrong port set through RETENTION_BASE_URL: plan's error says the variable is set
    and overrides api.base_url, so that no one edits the file in vain."""
    config, _ = wrong_port
    where = f"127.0.0.1:{closed_port()}"
    monkeypatch.setenv("RETENTION_BASE_URL", f"http://{where}/api/public/v1.0")

    code = cli.main(["--config", str(config), "plan"], interactive=True)

    err = capsys.readouterr().err
    assert code == EXIT_UNREACHABLE
    assert f"connection refused ({where})" in err
    assert err.rstrip().endswith(
        "; check RETENTION_BASE_URL, set in the environment where it overrides api.base_url"
    )


@pytest.mark.usefixtures("instant_retries")
@pytest.mark.parametrize(("interactive", "retries"), [(True, 2), (False, 5)])
def test_a_run_counts_its_retries_by_who_waits(
    wrong_port: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    interactive: bool,
    retries: int,
) -> None:
    """retention run against a wrong port exits 5 either way; its metrics count two retries
    from a terminal and the policy's five unattended, and stderr holds one warning line."""
    config, _ = wrong_port
    metrics = config.parent / "retention.prom"

    code = cli.main(
        ["--config", str(config), "run", "--metrics-file", str(metrics)], interactive=interactive
    )

    err = capsys.readouterr().err
    assert code == EXIT_UNREACHABLE
    assert retries_in(metrics) == retries
    assert len(warnings_in(err)) == 1


def test_after_a_quiet_spell_one_warning_counts_the_retries_left_out() -> None:
    """The first retry is a warning, the next ones within the quiet spell are only counted,
    and the first after it is a warning again that says how many were left out."""
    now = [0.0]
    notes = RetryNotes(quiet_seconds=60.0, clock=lambda: now[0])

    said = [notes.warn()]
    for at in (1.0, 10.0, 59.0):
        now[0] = at
        said.append(notes.warn())
    now[0] = 61.0
    said.append(notes.warn())

    assert said == [0, None, None, None, 3]
