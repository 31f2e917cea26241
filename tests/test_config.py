"""Tests of retention.config.settings: loading retention.yaml,
environment overrides, secrets, rendering."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import yaml

from retention.api.client import OpsManagerClient
from retention.config.connect import open_client
from retention.config.loading import load_config
from retention.config.settings import (
    SECRET_HINT,
    AlertsSettings,
    ApiSettings,
    ReportsSettings,
    RetentionConfig,
    TargetSettings,
    config_json_schema,
)
from retention.config.showing import render_config
from retention.errors import EXIT_USAGE, ConfigError
from tests.support.client import fixed_clock

PUBLIC = "pub-cfg-4711"
# Distinctive, so a leak into any message, log line or rendering is found by a substring search.
PRIVATE = "cfg-priv-9d41e7-NEVER-PRINT-ME"
ENV = {"RETENTION_PUBLIC_KEY": PUBLIC, "RETENTION_PRIVATE_KEY": PRIVATE}
BASE_URL = "https://om.test:8443/api/public/v1.0"
PROJECT = "5e2211c17a3e5a48f5497de3"
MINIMAL = f"""\
api:
  base_url: {BASE_URL}
targets:
  - project: "{PROJECT}"
"""
EXAMPLE = Path(__file__).resolve().parent.parent / "retention.example.yaml"


def write(folder: Path, text: str = MINIMAL, name: str = "retention.yaml") -> Path:
    """Write a config file into folder (created if needed) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path | None, env: dict[str, str] | None = None) -> list[str]:
    """The problems of the ConfigError that loading path raises."""
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=ENV if env is None else env, clock=fixed_clock)
    assert caught.value.exit_code == EXIT_USAGE
    return caught.value.problems


def everything_said(error: ConfigError) -> str:
    """All text an error can show: its message, problems and repr."""
    return "\n".join([str(error), repr(error), *error.problems])


def test_explicit_path_wins_over_env_and_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An explicit path is used even when RETENTION_CONFIG and ./retention.yaml exist."""
    explicit = write(tmp_path / "explicit")
    named = write(tmp_path / "named", MINIMAL.replace(PROJECT, "named-project"))
    write(tmp_path / "cwd", MINIMAL.replace(PROJECT, "cwd-project"))
    monkeypatch.chdir(tmp_path / "cwd")

    loaded = load_config(explicit, env={**ENV, "RETENTION_CONFIG": str(named)}, clock=fixed_clock)

    assert loaded.path == explicit
    assert loaded.config.targets[0].project == PROJECT
    assert loaded.sources["config"] == "--config"


def test_retention_config_env_wins_over_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an explicit path, RETENTION_CONFIG names the file, not ./retention.yaml."""
    named = write(tmp_path / "named", MINIMAL.replace(PROJECT, "named-project"))
    write(tmp_path / "cwd", MINIMAL.replace(PROJECT, "cwd-project"))
    monkeypatch.chdir(tmp_path / "cwd")

    loaded = load_config(env={**ENV, "RETENTION_CONFIG": str(named)}, clock=fixed_clock)

    assert loaded.path == named
    assert loaded.config.targets[0].project == "named-project"
    assert loaded.sources["config"] == "env RETENTION_CONFIG"


def test_current_directory_retention_yaml_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a path or RETENTION_CONFIG, ./retention.yaml of the working directory is read."""
    expected = write(tmp_path / "cwd", MINIMAL.replace(PROJECT, "cwd-project"))
    monkeypatch.chdir(tmp_path / "cwd")

    loaded = load_config(env=ENV, clock=fixed_clock)

    assert loaded.path == expected
    assert loaded.config.targets[0].project == "cwd-project"
    assert loaded.sources["config"] == "default ./retention.yaml"


def test_relative_paths_resolve_against_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """policies, reports.dir and ca_bundle resolve against the file's folder, not the cwd."""
    folder = tmp_path / "etc" / "retention"
    write(folder / "certs", "PEM", name="ca.pem")
    path = write(
        folder,
        MINIMAL.replace("api:\n", "api:\n  ca_bundle: certs/ca.pem\n")
        + "policies: ../shared/policies/\nreports:\n  dir: out/reports\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    config = load_config(os.path.relpath(path), env=ENV, clock=fixed_clock).config

    assert config.api.ca_bundle == folder / "certs" / "ca.pem"
    assert config.policies == tmp_path / "etc" / "shared" / "policies"
    assert config.reports.dir == folder / "out" / "reports"


def test_default_and_listed_paths_resolve_against_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default policies/ and reports/ and a list of policy files are absolute too."""
    monkeypatch.chdir(tmp_path)
    defaulted = load_config(write(tmp_path / "a"), env=ENV, clock=fixed_clock)
    listed = load_config(
        write(tmp_path / "b", MINIMAL + "policies: [p/gold.yaml, /abs/silver.yaml]\n"),
        env=ENV,
        clock=fixed_clock,
    )

    assert defaulted.config.policies == tmp_path / "a" / "policies"
    assert defaulted.config.reports.dir == tmp_path / "a" / "reports"
    assert defaulted.config.reports.formats == ["html", "markdown"]
    assert defaulted.sources["policies"] == "default"
    assert listed.config.policies == [tmp_path / "b" / "p" / "gold.yaml", Path("/abs/silver.yaml")]


def test_base_url_env_overrides_the_file_and_is_noted(tmp_path: Path) -> None:
    """RETENTION_BASE_URL replaces api.base_url (trailing slash stripped) and is the source."""
    other = "http://127.0.0.1:8080/api/public/v1.0/"

    loaded = load_config(
        write(tmp_path), env={**ENV, "RETENTION_BASE_URL": other}, clock=fixed_clock
    )

    assert loaded.config.api.base_url == "http://127.0.0.1:8080/api/public/v1.0"
    assert loaded.sources["api.base_url"] == "env RETENTION_BASE_URL"
    assert loaded.sources["api.concurrency"] == "default"


def test_base_url_may_be_absent_from_the_file_when_the_env_gives_it(tmp_path: Path) -> None:
    """With RETENTION_BASE_URL set, a file without api: at all is complete."""
    path = write(tmp_path, f'targets:\n  - project: "{PROJECT}"\n')

    loaded = load_config(path, env={**ENV, "RETENTION_BASE_URL": BASE_URL}, clock=fixed_clock)
    missing = problems_of(path)

    assert loaded.config.api.base_url == BASE_URL
    assert missing == ["retention.yaml: api: required (or set RETENTION_BASE_URL)"]


def test_a_bad_base_url_from_the_env_is_blamed_on_the_environment(tmp_path: Path) -> None:
    """A RETENTION_BASE_URL without the API root is reported as an environment problem."""
    env = {**ENV, "RETENTION_BASE_URL": "https://om.test:8443/"}

    assert problems_of(write(tmp_path), env) == [
        "environment: RETENTION_BASE_URL: must end in the API root /api/public/v1.0"
    ]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("om.test/api/public/v1.0", "must be an http(s) URL like"),
        ("ftp://om.test/api/public/v1.0", "must be an http(s) URL like"),
        ("https://om.test:8443", "must end in the API root /api/public/v1.0"),
        ("https://om.test/api/public/v1.0?envelope=true", "must end in the API root"),
    ],
)
def test_base_url_must_be_the_http_api_root(tmp_path: Path, url: str, message: str) -> None:
    """api.base_url must be an http(s) URL whose path ends in /api/public/v1.0."""
    problems = problems_of(write(tmp_path, MINIMAL.replace(BASE_URL, url)))

    assert len(problems) == 1
    assert problems[0].startswith("retention.yaml:2: api.base_url: ")
    assert message in problems[0]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("concurrency: 0", "api.concurrency: must be between 1 and 64"),
        ("concurrency: 65", "api.concurrency: must be between 1 and 64"),
        ("concurrency: true", "api.concurrency: must be a whole number"),
        ("concurrency: 2.5", "api.concurrency: must be a whole number"),
        ("timeout_seconds: -1", "api.timeout_seconds: must be greater than 0"),
        ("timeout_seconds: .inf", "api.timeout_seconds: must be a number"),
        ("max_requests_per_second: -0.5", "api.max_requests_per_second: must be at least 0"),
        ("envelope: sometimes", "api.envelope: must be true or false"),
    ],
)
def test_api_numbers_and_switches_are_checked(tmp_path: Path, setting: str, message: str) -> None:
    """Out-of-range or mistyped api settings are refused with the allowed range or type."""
    text = MINIMAL.replace("api:\n", f"api:\n  {setting}\n")

    assert problems_of(write(tmp_path, text)) == [f"retention.yaml:2: {message}"]


def test_keys_come_from_the_environment(tmp_path: Path) -> None:
    """RETENTION_PUBLIC_KEY and RETENTION_PRIVATE_KEY make the credentials, sources noted."""
    loaded = load_config(
        write(tmp_path), env={**ENV, "RETENTION_PRIVATE_KEY": PRIVATE + "\n"}, clock=fixed_clock
    )

    assert loaded.credentials is not None
    assert loaded.credentials.public_key == PUBLIC
    assert loaded.credentials.private_key.get_secret_value() == PRIVATE
    assert loaded.sources["credentials.public_key"] == "env RETENTION_PUBLIC_KEY"
    assert loaded.sources["credentials.private_key"] == "env RETENTION_PRIVATE_KEY"
    assert loaded.warnings == []


def test_private_key_file_is_read_with_its_trailing_newline_stripped(tmp_path: Path) -> None:
    """RETENTION_PRIVATE_KEY_FILE names a file whose content (less the newline) is the key."""
    key_file = write(tmp_path / "secret", PRIVATE + "\n", name="private-key")
    key_file.chmod(0o600)
    env = {"RETENTION_PUBLIC_KEY": PUBLIC, "RETENTION_PRIVATE_KEY_FILE": str(key_file)}

    loaded = load_config(write(tmp_path), env=env, clock=fixed_clock)

    assert loaded.credentials is not None
    assert loaded.credentials.private_key.get_secret_value() == PRIVATE
    assert loaded.sources["credentials.private_key"] == (
        f"env RETENTION_PRIVATE_KEY_FILE ({key_file})"
    )
    assert loaded.warnings == []


def test_both_private_key_variables_set_is_a_problem(tmp_path: Path) -> None:
    """Setting RETENTION_PRIVATE_KEY and RETENTION_PRIVATE_KEY_FILE says which one to remove."""
    key_file = write(tmp_path / "secret", PRIVATE, name="private-key")
    env = {**ENV, "RETENTION_PRIVATE_KEY_FILE": str(key_file)}

    problems = problems_of(write(tmp_path), env)

    assert len(problems) == 1
    assert problems[0].startswith(
        "environment: both RETENTION_PRIVATE_KEY and RETENTION_PRIVATE_KEY_FILE are set:"
        " remove RETENTION_PRIVATE_KEY and keep the file"
    )


def test_a_key_file_open_to_group_or_others_warns(tmp_path: Path) -> None:
    """A key file with group or other permission bits loads, with a chmod 600 warning."""
    key_file = write(tmp_path / "secret", PRIVATE, name="private-key")
    key_file.chmod(0o644)
    env = {"RETENTION_PUBLIC_KEY": PUBLIC, "RETENTION_PRIVATE_KEY_FILE": str(key_file)}

    loaded = load_config(write(tmp_path), env=env, clock=fixed_clock)

    assert loaded.credentials is not None
    assert len(loaded.warnings) == 1
    assert f"{key_file} is open to group or others (-rw-r--r--)" in loaded.warnings[0]
    assert f"chmod 600 {key_file}" in loaded.warnings[0]
    assert PRIVATE not in loaded.warnings[0]


@pytest.mark.parametrize(("mode", "warns"), [(0o440, False), (0o400, False), (0o460, True)])
def test_kubernetes_fsgroup_key_file_is_not_a_leak(tmp_path: Path, mode: int, warns: bool) -> None:
    """Group-read only, by our own group (a Secret with defaultMode 0400 under fsGroup
    becomes 0440), does not warn; group-writable still does."""
    key_file = write(tmp_path / "secret", PRIVATE, name="private-key")
    key_file.chmod(mode)
    env = {"RETENTION_PUBLIC_KEY": PUBLIC, "RETENTION_PRIVATE_KEY_FILE": str(key_file)}

    loaded = load_config(write(tmp_path), env=env, clock=fixed_clock)

    assert loaded.credentials is not None
    assert bool(loaded.warnings) is warns


def test_a_missing_or_empty_key_file_is_a_problem(tmp_path: Path) -> None:
    """A key file that cannot be read, or holds only whitespace, is reported with its path."""
    missing = tmp_path / "nowhere" / "private-key"
    empty = write(tmp_path / "secret", "\n", name="private-key")
    env = {"RETENTION_PUBLIC_KEY": PUBLIC}

    assert problems_of(write(tmp_path), {**env, "RETENTION_PRIVATE_KEY_FILE": str(missing)}) == [
        f"environment: RETENTION_PRIVATE_KEY_FILE: cannot read {missing}: No such file or directory"
    ]
    assert problems_of(write(tmp_path), {**env, "RETENTION_PRIVATE_KEY_FILE": str(empty)}) == [
        f"environment: RETENTION_PRIVATE_KEY_FILE: {empty} is empty"
    ]


def test_missing_keys_are_problems_only_when_required(tmp_path: Path) -> None:
    """Without keys, loading fails naming the variables, unless credentials are not required."""
    path = write(tmp_path)

    problems = problems_of(path, {})
    loaded = load_config(path, env={}, require_credentials=False, clock=fixed_clock)

    assert problems == [
        "environment: RETENTION_PUBLIC_KEY: not set (the public key of the programmatic API key)",
        "environment: RETENTION_PRIVATE_KEY or RETENTION_PRIVATE_KEY_FILE: not set"
        " (the private key, or a file holding it)",
    ]
    assert loaded.credentials is None
    assert loaded.sources["credentials.private_key"] == "not set"
    with pytest.raises(ConfigError, match="no API credentials"):
        open_client(loaded, clock=fixed_clock)


@pytest.mark.parametrize(
    ("snippet", "where"),
    [
        (f"api:\n  base_url: {BASE_URL}\n  private_key: {PRIVATE}\n", "3: api.private_key"),
        (f"api:\n  base_url: {BASE_URL}\npublic_key: {PRIVATE}\n", "3: public_key"),
        (f"api:\n  base_url: {BASE_URL}\n  apiKey: {PRIVATE}\n", "3: api.apiKey"),
        (f"api:\n  base_url: {BASE_URL}\npassword: {PRIVATE}\n", "3: password"),
        (
            f"api:\n  base_url: {BASE_URL}\nprivate_key_file: /run/{PRIVATE}\n",
            "3: private_key_file",
        ),
    ],
)
def test_a_secret_in_the_file_is_refused_without_echoing_it(
    tmp_path: Path, snippet: str, where: str
) -> None:
    """A secret-looking key in the YAML is refused, naming the field and the env variables."""
    path = write(tmp_path, snippet + f'targets:\n  - project: "{PROJECT}"\n')

    with pytest.raises(ConfigError) as caught:
        load_config(path, env=ENV, clock=fixed_clock)

    assert caught.value.problems == [f"retention.yaml:{where}: {SECRET_HINT}"]
    assert "RETENTION_PRIVATE_KEY_FILE (for Kubernetes: a Secret mounted as a file)" in SECRET_HINT
    assert PRIVATE not in everything_said(caught.value)


def test_a_password_in_the_base_url_is_refused_without_echoing_it(tmp_path: Path) -> None:
    """User and password inside api.base_url are refused and never repeated."""
    url = f"https://{PUBLIC}:{PRIVATE}@om.test:8443/api/public/v1.0"

    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, MINIMAL.replace(BASE_URL, url)), env=ENV, clock=fixed_clock)

    assert caught.value.problems == [
        f"retention.yaml:2: api.base_url: must not carry a user or password: {SECRET_HINT}"
    ]
    assert PRIVATE not in everything_said(caught.value)


def test_every_problem_is_reported_at_once_with_file_line_and_field(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Several mistakes come back together in one ConfigError, each with file, line and field."""
    text = f"""\
api:
  base_url: {BASE_URL}
  concurrency: 100
  timeout_seconds: 0
  colour: blue
  verify_tls: maybe
  private_key: "{PRIVATE}"
targets:
  - project: "{PROJECT}"
  - clusters: [x]
schedule: "0 3 * *"
reports:
  formats: [html, pdf]
"""
    path = write(tmp_path, text)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(ConfigError) as caught:
        load_config(path, env={"RETENTION_PUBLIC_KEY": PUBLIC}, clock=fixed_clock)

    assert str(caught.value) == f"9 problems in {path}"
    assert caught.value.problems == [
        "retention.yaml:3: api.concurrency: must be between 1 and 64",
        "retention.yaml:4: api.timeout_seconds: must be greater than 0",
        "retention.yaml:5: api.colour: unknown field (allowed: base_url, ca_bundle, concurrency,"
        " envelope, max_requests_per_second, timeout_seconds, verify_tls, workers)",
        "retention.yaml:6: api.verify_tls: must be true or false",
        f"retention.yaml:7: api.private_key: {SECRET_HINT}",
        "retention.yaml:10: targets[1].project: required",
        "retention.yaml:11: schedule: not a valid cron expression: '0 3 * *' (e.g. \"0 3 * * *\")",
        "retention.yaml:13: reports.formats[1]: must be 'html' or 'markdown'",
        "environment: RETENTION_PRIVATE_KEY or RETENTION_PRIVATE_KEY_FILE: not set"
        " (the private key, or a file holding it)",
    ]
    assert PRIVATE not in everything_said(caught.value)
    assert PRIVATE not in caplog.text


def test_unknown_fields_are_refused_at_any_level(tmp_path: Path) -> None:
    """A key no model knows is an error naming its dotted path and line."""
    text = MINIMAL + "    colour: red\nalerts:\n  acknowledge: true\nextra: 1\n"

    assert problems_of(write(tmp_path, text)) == [
        "retention.yaml:5: targets[0].colour: unknown field (allowed: clusters, config_servers,"
        " project)",
        "retention.yaml:7: alerts.acknowledge: unknown field (allowed:"
        " acknowledge_own_audit_alerts)",
        "retention.yaml:8: extra: unknown field (allowed: alerts, api, lease_minimum, ledger,"
        " notify, policies, reports, schedule, targets)",
    ]


def test_a_valid_cron_schedule_is_kept_and_a_bad_one_refused(tmp_path: Path) -> None:
    """schedule must be a cron expression croniter accepts."""
    good = load_config(
        write(tmp_path / "a", MINIMAL + 'schedule: "30 2 * * 1-5"\n'), env=ENV, clock=fixed_clock
    )

    assert good.config.schedule == "30 2 * * 1-5"
    assert problems_of(write(tmp_path / "b", MINIMAL + 'schedule: "61 3 * * *"\n')) == [
        "retention.yaml:5: schedule: not a valid cron expression: '61 3 * * *' (e.g. \"0 3 * * *\")"
    ]


def test_a_project_listed_twice_is_refused(tmp_path: Path) -> None:
    """Two targets with the same project id are one problem naming both entries."""
    text = MINIMAL + f'  - project: "other"\n  - project: "{PROJECT}"\n    clusters: [c1]\n'

    assert problems_of(write(tmp_path, text)) == [
        f"retention.yaml:3: targets: project {PROJECT} is listed twice"
        " (targets[0] and targets[2]): give it one entry"
    ]


def test_target_ids_follow_the_plan_rule_and_unusual_ones_are_kept(tmp_path: Path) -> None:
    """A project, cluster or config-server id a plan could not carry is a problem naming its
    field and why; ids that are only unusual are kept as written."""
    text = f"""\
api:
  base_url: {BASE_URL}
targets:
  - project: "5e22/../admin"
  - project: "{PROJECT}"
    clusters: ["..", "a b", "x:y@z"]
    config_servers: ["cfg\\u0007", "ü50%"]
"""
    assert problems_of(write(tmp_path / "bad", text)) == [
        "retention.yaml:4: targets[0].project: cannot be used as an id: it holds '/', which "
        "servers and proxies may decode from its percent-encoding and take as a path "
        "separator, or refuse",
        "retention.yaml:6: targets[1].clusters[0]: cannot be used as an id: it is a dot "
        "segment, which servers resolve as a step in the path",
        "retention.yaml:7: targets[1].config_servers[0]: cannot be used as an id: it holds "
        "the control character U+0007",
    ]
    good = (
        text.replace('"5e22/../admin"', '"p1"').replace('"..", ', "").replace('"cfg\\u0007", ', "")
    )
    loaded = load_config(write(tmp_path / "good", good), env=ENV, clock=fixed_clock)
    assert loaded.config.targets[1].clusters == ["a b", "x:y@z"]
    assert loaded.config.targets[1].config_servers == ["ü50%"]


def test_targets_must_not_be_empty(tmp_path: Path) -> None:
    """A configuration without any target is refused."""
    text = f"api:\n  base_url: {BASE_URL}\ntargets: []\n"

    assert problems_of(write(tmp_path, text)) == [
        "retention.yaml:3: targets: must have at least 1 item"
    ]


def test_a_missing_ca_bundle_is_refused(tmp_path: Path) -> None:
    """api.ca_bundle must name an existing file, shown resolved against the config folder."""
    text = MINIMAL.replace("api:\n", "api:\n  ca_bundle: certs/missing.pem\n")

    assert problems_of(write(tmp_path, text)) == [
        f"retention.yaml:2: api.ca_bundle: file not found: {tmp_path / 'certs' / 'missing.pem'}"
    ]


def test_a_missing_file_is_a_problem_naming_its_source(tmp_path: Path) -> None:
    """A config file that does not exist is reported with its path, how it was chosen, and
    the command that writes one to start from."""
    missing = tmp_path / "nope.yaml"

    assert problems_of(None, {**ENV, "RETENTION_CONFIG": str(missing)}) == [
        f"nope.yaml: {missing} does not exist (from env RETENTION_CONFIG); `retention init "
        f"{tmp_path}` writes a commented one to start from, or give --config FILE"
    ]


def test_a_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    """Broken YAML is one problem with the line of the error and no snippet of the file."""
    text = MINIMAL + f"reports:\n  dir: [unclosed\n  formats: {PRIVATE}\n"

    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env=ENV, clock=fixed_clock)

    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith("retention.yaml:7: YAML syntax error: ")
    assert PRIVATE not in everything_said(caught.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "retention.yaml: empty file: expected a mapping of settings"),
        ("- a\n- b\n", "retention.yaml:1: the top level must be a mapping of settings, not a list"),
        ("hello\n", "retention.yaml:1: the top level must be a mapping of settings, not text"),
    ],
)
def test_the_top_level_must_be_a_mapping(tmp_path: Path, text: str, problem: str) -> None:
    """An empty file, a list or a scalar at the top level is refused, without quoting it."""
    assert problems_of(write(tmp_path, text)) == [problem]


def test_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    """A key given twice in one mapping is refused instead of silently replacing the first."""
    text = MINIMAL + "reports:\n  dir: a\n  dir: b\n"

    assert problems_of(write(tmp_path, text)) == [
        "retention.yaml:7: reports.dir: duplicate key (first on line 6)"
    ]


def test_render_config_redacts_the_private_key_and_notes_sources(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """config show text has every setting with its source, the public key, never the private."""
    caplog.set_level(logging.DEBUG)
    key_file = write(tmp_path / "secret", PRIVATE, name="private-key")
    key_file.chmod(0o644)
    env = {
        "RETENTION_PUBLIC_KEY": PUBLIC,
        "RETENTION_PRIVATE_KEY_FILE": str(key_file),
        "RETENTION_BASE_URL": "http://127.0.0.1:8080/api/public/v1.0",
    }
    loaded = load_config(
        write(tmp_path, MINIMAL + "schedule: '0 3 * * *'\n"), env=env, clock=fixed_clock
    )

    text = render_config(loaded)
    lines = [" ".join(line.split()) for line in text.splitlines()]

    assert PRIVATE not in text
    assert PRIVATE not in caplog.text
    assert 'base_url: "http://127.0.0.1:8080/api/public/v1.0" # env RETENTION_BASE_URL' in lines
    assert "concurrency: 8 # default" in lines
    assert 'schedule: "0 3 * * *" # file' in lines
    assert f'policies: "{tmp_path / "policies"}" # default' in lines
    assert f'- project: "{PROJECT}" # file' in lines
    assert f"# public_key: {PUBLIC} # env RETENTION_PUBLIC_KEY" in lines
    assert f"# private_key: ********** # env RETENTION_PRIVATE_KEY_FILE ({key_file})" in lines
    assert any(line.startswith("# warning: RETENTION_PRIVATE_KEY_FILE:") for line in lines)


def test_render_config_without_credentials_says_not_set(tmp_path: Path) -> None:
    """With no keys, config show says so instead of failing."""
    loaded = load_config(write(tmp_path), env={}, require_credentials=False, clock=fixed_clock)

    lines = [" ".join(line.split()) for line in render_config(loaded).splitlines()]

    assert "# public_key: not set # not set" in lines
    assert "# private_key: not set # not set" in lines


def test_render_config_output_loads_back_to_the_same_configuration(tmp_path: Path) -> None:
    """The rendered text is itself a valid retention.yaml with the same settings."""
    loaded = load_config(EXAMPLE, env=ENV, clock=fixed_clock)
    again = write(tmp_path, render_config(loaded))

    assert load_config(again, env=ENV, clock=fixed_clock).config == loaded.config


def test_repr_and_str_never_show_the_private_key(tmp_path: Path) -> None:
    """repr and str of the loaded configuration and the credentials hide the private key."""
    loaded = load_config(write(tmp_path), env=ENV, clock=fixed_clock)

    assert loaded.credentials is not None
    for text in (repr(loaded), str(loaded), repr(loaded.credentials), str(loaded.credentials)):
        assert PRIVATE not in text
    assert "**********" in repr(loaded.credentials)


def test_config_json_schema_describes_every_top_level_setting() -> None:
    """The JSON Schema names retention.yaml's sections and forbids unknown keys."""
    schema = config_json_schema()

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "retention.yaml"
    assert set(schema["properties"]) == {
        "api",
        "targets",
        "policies",
        "schedule",
        "lease_minimum",
        "reports",
        "ledger",
        "alerts",
        "notify",
    }
    assert set(schema["required"]) == {"api", "targets"}
    assert schema["additionalProperties"] is False
    concurrency = schema["$defs"]["ApiSettings"]["properties"]["concurrency"]
    assert (concurrency["minimum"], concurrency["maximum"], concurrency["default"]) == (1, 64, 8)


def test_the_example_file_loads_with_keys_in_the_environment() -> None:
    """retention.example.yaml loads, sets every setting, and no real name looks like a secret."""
    loaded = load_config(EXAMPLE, env=ENV, clock=fixed_clock)
    raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))

    assert loaded.config.api.base_url == "https://opsmanager.example.com:8443/api/public/v1.0"
    assert loaded.config.schedule == "0 3 * * *"
    assert loaded.config.policies == EXAMPLE.parent / "policies"
    assert loaded.config.targets[1].clusters == ["5e4e593f70dfbf1e2f6e1d30"]
    # notify: is there commented out: a copied example must not send notices to example.net.
    assert set(raw) == set(RetentionConfig.model_fields) - {"notify"}
    assert set(raw["api"]) == set(ApiSettings.model_fields)
    assert set(raw["targets"][1]) == set(TargetSettings.model_fields)
    assert set(raw["reports"]) == set(ReportsSettings.model_fields)
    assert set(raw["alerts"]) == set(AlertsSettings.model_fields)
    assert "default" not in {
        v for k, v in loaded.sources.items() if not k.startswith("targets.0") and k != "notify"
    }


def test_open_client_uses_the_settings_and_credentials(tmp_path: Path) -> None:
    """open_client passes base URL, timeouts, TLS, envelope and pool size to the client."""
    text = MINIMAL.replace("api:\n", "api:\n  timeout_seconds: 12.5\n  envelope: true\n")
    loaded = load_config(write(tmp_path, text), env=ENV, clock=fixed_clock)

    with open_client(loaded, clock=fixed_clock) as client:
        assert isinstance(client, OpsManagerClient)
        assert client.base_url == BASE_URL
        assert client.timeouts.read == 12.5
        assert client.tls.verify is True
        assert client.envelope is True
    with open_client(
        loaded, base_url="http://127.0.0.1:1/api/public/v1.0", clock=fixed_clock
    ) as other:
        assert other.base_url == "http://127.0.0.1:1/api/public/v1.0"


def test_config_show_names_the_ledger_the_environment_gives_without_its_password(
    tmp_path: Path,
) -> None:
    """RETENTION_LEDGER_URL is the ledger config show shows (its source the variable), with
    the password in it taken out of the shown URL and of the place's URL, kept apart for the
    connection only."""
    secret = "ledger-pw-NEVER-PRINT-3f9"
    env = {**ENV, "RETENTION_LEDGER_URL": f"postgresql://retention:{secret}@db:5432/r"}
    loaded = load_config(write(tmp_path), env=env, clock=fixed_clock)

    text = render_config(loaded)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    place = loaded.config.ledger_place(env)

    assert secret not in text
    assert 'url: "postgresql://retention@db:5432/r" # env RETENTION_LEDGER_URL' in lines
    assert place.url == "postgresql://retention@db:5432/r"
    assert place.password == secret
    assert place.engine_url().password == secret


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_a_ledger_in_memory_is_refused_naming_the_field(tmp_path: Path, url: str) -> None:
    """ledger.url naming a SQLite database in memory (which remembers nothing past the run,
    and which a plan's worker processes could not read) is a usage error on that field."""
    text = MINIMAL + f"ledger:\n  url: '{url}'\n"

    problems = problems_of(write(tmp_path, text))

    assert len(problems) == 1
    assert "ledger.url" in problems[0]
    assert "in memory remembers nothing past the run" in problems[0]
