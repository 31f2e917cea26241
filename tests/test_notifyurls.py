"""Notification URLs from RETENTION_NOTIFY_URLS or notify.urls_file (a mounted Secret): the
format, which source wins, problems that name the variable or the file and its line (exit 2,
nothing sent), and a URL's secret in no output whichever way it came."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retention import cli
from retention.config.loading import load_config
from retention.config.notify import NotifySettings, NotifyUrl
from retention.config.notifyurls import Entry, split_urls
from retention.config.showing import render_config
from retention.errors import EXIT_USAGE, ConfigError
from retention.simulator.server import Simulator
from tests.support.client import fixed_clock
from tests.support.notices import TOKEN, Receiver
from tests.support.simfleet import P
from tests.support.wire_server import closed_port
from tests.test_notify import REDACTED, dead_url, write_config

KEYS = {"RETENTION_PUBLIC_KEY": "p", "RETENTION_PRIVATE_KEY": "k"}
BASE = "https://om.test/api/public/v1.0"
HEAD = f'api:\n  base_url: {BASE}\ntargets:\n  - project: "p"\n'


def config(folder: Path, notify: str = "") -> Path:
    """retention.yaml in ``folder`` with the given notify: block (none when empty)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "retention.yaml"
    path.write_text(HEAD + notify, encoding="utf-8")
    return path


def secret_file(path: Path, text: str) -> Path:
    """A file of URLs as a Secret mount has it: readable by its owner only."""
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def problems(path: Path, env: dict[str, str]) -> list[str]:
    """The problems loading ``path`` with ``env`` raises (exit 2)."""
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={**KEYS, **env}, clock=fixed_clock)
    assert caught.value.exit_code == EXIT_USAGE
    said = "\n".join([str(caught.value), repr(caught.value), *caught.value.problems])
    assert TOKEN not in said
    return caught.value.problems


def test_the_format_splits_on_lines_spaces_and_commas_before_a_url() -> None:
    """URLs are split on line breaks, spaces and commas that end a URL; a comma inside a
    URL's parameters and a # inside a URL stay; comment lines (# first) and blank lines are
    left out."""
    text = (
        "# the team's channels\n"
        "\n"
        "slack://T0/B0/x/#ops,json://h/a\n"
        "  mailto://u:p@mail.example?to=a@example.net,b@example.net , jsons://h/b,\n"
        "\tjson://h/c json://h/d\n"
        "    # indented: a comment too\n"
    )

    assert split_urls(text) == [
        Entry(3, 1, "slack://T0/B0/x/#ops"),
        Entry(3, 2, "json://h/a"),
        Entry(4, 1, "mailto://u:p@mail.example?to=a@example.net,b@example.net"),
        Entry(4, 2, "jsons://h/b"),
        Entry(5, 1, "json://h/c"),
        Entry(5, 2, "json://h/d"),
    ]


def test_the_environment_alone_turns_notices_on(tmp_path: Path) -> None:
    """RETENTION_NOTIFY_URLS without notify: in retention.yaml sends to its URLs, in order,
    on every kind of ending; config show names the variable and shows the URLs redacted."""
    urls = f"json://127.0.0.1/{TOKEN}, slack://T0/B0/{TOKEN.replace('-', '')}\njsons://h/x"

    loaded = load_config(
        config(tmp_path), env={**KEYS, "RETENTION_NOTIFY_URLS": urls}, clock=fixed_clock
    )

    notify = loaded.config.notify
    assert notify is not None
    assert [(place, str(url)) for place, url in notify.destinations()] == [
        ("RETENTION_NOTIFY_URLS[0]", REDACTED),
        ("RETENTION_NOTIFY_URLS[1]", "slack://**********"),
        ("RETENTION_NOTIFY_URLS[2]", "jsons://**********"),
    ]
    assert notify.urls is not None
    assert notify.urls[0].get_secret_value() == f"json://127.0.0.1/{TOKEN}"
    assert notify.on == ["changes", "holds", "failure", "stale-backups"]
    assert loaded.sources["notify.urls"] == "env RETENTION_NOTIFY_URLS"
    assert loaded.warnings == []
    shown = [" ".join(line.split()) for line in render_config(loaded).splitlines()]
    assert (
        'urls: ["json://**********", "slack://**********", "jsons://**********"] '
        "# env RETENTION_NOTIFY_URLS"
    ) in shown
    assert TOKEN not in "\n".join(shown) + repr(loaded)


def test_a_blank_variable_counts_as_not_set(tmp_path: Path) -> None:
    """RETENTION_NOTIFY_URLS set to spaces (a Secret key left empty) is not set: no notices."""
    loaded = load_config(
        config(tmp_path), env={**KEYS, "RETENTION_NOTIFY_URLS": " \n "}, clock=fixed_clock
    )

    assert loaded.config.notify is None


def test_urls_file_is_read_relative_to_retention_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """notify.urls_file resolves against retention.yaml's folder (not the working one), its
    comments and blank lines are left out, each URL keeps its FILE:LINE, and `on` stays."""
    folder = tmp_path / "etc"
    path = config(folder, "notify:\n  urls_file: secret/notify-urls\n  on: [failure]\n")
    (folder / "secret").mkdir()
    urls = secret_file(
        folder / "secret" / "notify-urls",
        f"# Slack and the webhook\n\njson://127.0.0.1/{TOKEN}\n  workflows://h/{TOKEN}/x/y\n",
    )
    monkeypatch.chdir(tmp_path)

    loaded = load_config(path, env=KEYS, clock=fixed_clock)

    notify = loaded.config.notify
    assert notify is not None
    assert notify.urls_file == urls
    assert [(place, str(url)) for place, url in notify.destinations()] == [
        (f"{urls}:3", REDACTED),
        (f"{urls}:4", "workflows://**********"),
    ]
    assert notify.on == ["failure"]
    assert loaded.sources["notify.urls"] == f"notify.urls_file ({urls})"
    assert loaded.warnings == []
    assert json.loads(json.dumps(loaded.config.model_dump(mode="json")))["notify"] == {
        "urls": [REDACTED, "workflows://**********"],
        "urls_file": str(urls),
        "on": ["failure"],
    }


@pytest.mark.parametrize(
    ("env", "winner"),
    [
        ({"RETENTION_NOTIFY_URLS": "json://env.example/e"}, "RETENTION_NOTIFY_URLS[0]"),
        ({}, "{file}:1"),
    ],
    ids=["environment-wins", "file-wins-over-urls"],
)
def test_the_first_source_given_replaces_the_others_with_a_warning(
    tmp_path: Path, env: dict[str, str], winner: str
) -> None:
    """RETENTION_NOTIFY_URLS replaces notify.urls_file, which replaces notify.urls: the
    notices go to the winner's URLs only, and one warning names every place URLs were given."""
    urls = secret_file(tmp_path / "urls", "json://file.example/f\n")
    path = config(tmp_path, 'notify:\n  urls: ["json://yaml.example/y"]\n  urls_file: urls\n')

    loaded = load_config(path, env={**KEYS, **env}, clock=fixed_clock)

    assert loaded.config.notify is not None
    [(place, url)] = loaded.config.notify.destinations()
    assert place == winner.format(file=urls)
    assert url.get_secret_value().split("//")[1].split(".")[0] == ("env" if env else "file")
    given = "RETENTION_NOTIFY_URLS and notify.urls_file and notify.urls"
    first = "RETENTION_NOTIFY_URLS" if env else "notify.urls_file"
    assert loaded.warnings == [
        f"notification URLs are given in {given if env else given.split(' and ', 1)[1]}: "
        f"the notices go to those of {first} only (it replaces the others: "
        "RETENTION_NOTIFY_URLS wins over notify.urls_file, which wins over notify.urls); "
        "remove the ones not meant"
    ]


def test_the_file_is_not_read_when_the_environment_wins(tmp_path: Path) -> None:
    """With RETENTION_NOTIFY_URLS set, notify.urls_file is not read (a missing one is no
    problem), and config show says so beside it."""
    path = config(tmp_path, "notify:\n  urls_file: missing\n")

    loaded = load_config(
        path, env={**KEYS, "RETENTION_NOTIFY_URLS": "json://h/x"}, clock=fixed_clock
    )

    assert loaded.sources["notify.urls_file"] == "file (not read: RETENTION_NOTIFY_URLS is set)"
    assert len(loaded.warnings) == 1


def test_a_bad_url_in_the_file_names_the_file_and_its_line(tmp_path: Path) -> None:
    """Each unusable URL of notify.urls_file is a problem at urls_file's line in
    retention.yaml naming the file, the URL's line (and its place when a line has two), and
    at most its scheme."""
    urls = secret_file(
        tmp_path / "urls",
        f"json://127.0.0.1/{TOKEN}\n# ok above\nnope://{TOKEN}\njson://h/a {TOKEN}-no-scheme\n",
    )
    path = config(tmp_path, "notify:\n  on: [holds]\n  urls_file: urls\n")

    assert problems(path, {}) == [
        f"retention.yaml:7: notify.urls_file: {urls}:3: nope:// is not a service apprise "
        "knows (slack://, workflows:// for Teams, mailto://, json:// and about 180 more)",
        f"retention.yaml:7: notify.urls_file: {urls}:4, URL 2: not an Apprise URL: write "
        "SERVICE://..., e.g. json://alerts.example.net/retention",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read {file}: No such file or directory"),
        ("# nothing but a comment\n\n", "{file} holds no URL: write one a line (blank lines "
         "and lines starting with # are left out)"),
        (b"json://h/\xff\n", "{file} is not UTF-8 text"),
        (b"x" * (64 * 1024 + 1), "{file} is larger than 64 KiB: not a file of URLs"),
    ],
    ids=["missing", "no-url", "not-utf8", "too-large"],
)  # fmt: skip
def test_a_urls_file_that_cannot_be_used_is_a_configuration_error(
    tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    """A missing, empty, binary or oversized urls_file is one problem at its line (exit 2)."""
    urls = tmp_path / "notify-urls"
    if isinstance(content, str):
        urls.write_text(content)
    elif content is not None:
        urls.write_bytes(content)
    path = config(tmp_path, "notify:\n  urls_file: notify-urls\n")

    expected = f"retention.yaml:6: notify.urls_file: {message.format(file=urls)}"
    assert problems(path, {}) == [expected]


def test_a_bad_url_in_the_environment_names_the_variable_its_index_and_line(
    tmp_path: Path,
) -> None:
    """Each unusable URL of RETENTION_NOTIFY_URLS is a problem naming the variable, the URL's
    index and (for a value of several lines) its line, reported with the file's problems."""
    value = f"json://127.0.0.1/{TOKEN}\n# second line\njson://h/a, nope://{TOKEN}\n"
    path = config(tmp_path, "alerts:\n  colour: red\n")

    assert problems(path, {"RETENTION_NOTIFY_URLS": value}) == [
        "retention.yaml:6: alerts.colour: unknown field (allowed: acknowledge_own_audit_alerts)",
        "environment: RETENTION_NOTIFY_URLS[2] (line 3): nope:// is not a service apprise "
        "knows (slack://, workflows:// for Teams, mailto://, json:// and about 180 more)",
    ]


def test_notify_without_any_url_is_a_configuration_error(tmp_path: Path) -> None:
    """notify: with only `on`, and no URLs in the environment, names the three ways to give
    them."""
    path = config(tmp_path, "notify:\n  on: [failure]\n")

    assert problems(path, {}) == [
        "retention.yaml:5: notify: no URL to send notices to: set urls, or urls_file (a file "
        "of URLs, e.g. a mounted Secret), or the environment variable RETENTION_NOTIFY_URLS"
    ]


def test_a_urls_file_others_can_read_is_warned_about(tmp_path: Path) -> None:
    """A urls_file readable by group or others loads, with a warning saying how to close it."""
    urls = tmp_path / "urls"
    urls.write_text("json://h/x\n")
    urls.chmod(0o644)

    loaded = load_config(
        config(tmp_path, "notify:\n  urls_file: urls\n"), env=KEYS, clock=fixed_clock
    )

    assert loaded.warnings == [
        f"notify.urls_file: {urls} is open to group or others (-rw-r--r--): chmod 600 "
        f"{urls} (Kubernetes: defaultMode: 0400 on the Secret volume)"
    ]


def test_a_bad_source_stops_every_command_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`retention run` with a bad URL in the urls_file exits 2 with the problem on stderr,
    no traceback, and sends nothing: the API's port is closed, so a request would be exit 5."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RETENTION_NOTIFY_URLS", raising=False)
    urls = secret_file(tmp_path / "urls", f"json://h/ok\nnope://{TOKEN}\n")
    path = tmp_path / "retention.yaml"
    base = f"http://127.0.0.1:{closed_port()}/api/public/v1.0"
    path.write_text(f'api:\n  base_url: {base}\ntargets:\n  - project: "p"\n'
                    "notify:\n  urls_file: urls\n")  # fmt: skip

    code = cli.main(["--config", str(path), "run"])

    out, err = capsys.readouterr()
    assert code == EXIT_USAGE
    assert f"retention.yaml:6: notify.urls_file: {urls}:2: nope:// is not a service" in err
    assert "Traceback" not in err
    assert TOKEN not in out + err


def test_destinations_name_retention_yaml_places_by_default() -> None:
    """URLs written in retention.yaml are named notify.urls[N]; with_urls keeps the places
    it is given and refuses a list without a place for each URL."""
    settings = NotifySettings.model_validate({"urls": ["json://h/a", "json://h/b"]})

    assert [place for place, _ in settings.destinations()] == ["notify.urls[0]", "notify.urls[1]"]
    moved = settings.with_urls([NotifyUrl("json://h/c")], ["RETENTION_NOTIFY_URLS[0]"])
    assert [(p, u.get_secret_value()) for p, u in moved.destinations()] == [
        ("RETENTION_NOTIFY_URLS[0]", "json://h/c")
    ]
    with pytest.raises(ValueError, match="one place for each URL"):
        settings.with_urls([NotifyUrl("json://h/c")], [])


def test_urls_from_the_file_and_the_environment_reach_the_service_and_nothing_else(
    sim: Simulator,
    folder: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run with URLs from RETENTION_NOTIFY_URLS names each delivery by the variable's
    index; one with URLs from notify.urls_file sends its notice there and names it by
    FILE:LINE. Neither the terminal, the JSON logs, config show, doctor nor any file of the
    run holds the secret."""
    write_config(folder, sim.base_url, [dead_url()])  # for its policy
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\n'
        "notify:\n  urls_file: urls\n"
    )
    urls = secret_file(folder / "urls", f"# the receiver\n{receiver.url}\n")
    monkeypatch.setenv("RETENTION_NOTIFY_URLS", f"{dead_url()} {receiver.url}")
    outputs = []
    for args in (["config", "show"], ["config", "show", "--format", "json"], ["doctor"]):
        cli.main(args, clock=sim.clock.now)
        outputs += list(capsys.readouterr())

    dry = cli.main(["run", "--format", "json", "--dry-run"], clock=sim.clock.now)
    out, err = capsys.readouterr()
    outputs += [out, err]
    monkeypatch.delenv("RETENTION_NOTIFY_URLS")
    code = cli.main(
        ["--log-format", "json", "--debug", "run", "--format", "json"], clock=sim.clock.now
    )
    out2, err2 = capsys.readouterr()
    outputs += [out2, err2]

    assert (dry, code) == (0, 0)
    assert [(n["url"], n["setting"], n["sent"]) for n in json.loads(out)["notices"]] == [
        (REDACTED, "RETENTION_NOTIFY_URLS[0]", False),
        (REDACTED, "RETENTION_NOTIFY_URLS[1]", True),
    ]
    assert f"could not send the notice to {REDACTED} (RETENTION_NOTIFY_URLS[0])" in err
    assert json.loads(out2)["notices"] == [
        {"url": REDACTED, "setting": f"{urls}:2", "sent": True, "error": None}
    ]
    assert receiver.paths == [f"/hooks/{TOKEN}"] * 2  # the secret did reach the service
    assert (
        "ok    notices: on changes, holds, failure, stale-backups, from env "
        f"RETENTION_NOTIFY_URLS: {REDACTED} (RETENTION_NOTIFY_URLS[0]); "
        f"{REDACTED} (RETENTION_NOTIFY_URLS[1])"
    ) in outputs[4]
    assert [text for text in outputs if TOKEN in text] == []
    files = [p for p in folder.rglob("*") if p.is_file() and p.parent.name != "policies"]
    assert [p.name for p in files if TOKEN in p.read_text(errors="replace")] == ["urls"]


def test_the_scaffolds_urls_file_line_works_once_uncommented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`retention init` writes a retention.yaml whose notify block, uncommented with its
    urls_file line instead of urls, reads the URLs from the file beside it."""
    assert cli.main(["init", str(tmp_path)]) == 0
    capsys.readouterr()
    lines = (tmp_path / "retention.yaml").read_text(encoding="utf-8").splitlines()
    block = []
    for line in lines[lines.index("# notify:") :]:
        if not line.startswith("#"):
            break
        if not line.startswith("#   urls:"):
            block.append(line.removeprefix("# ").replace("# urls_file:", "urls_file:"))
    (tmp_path / "retention.yaml").write_text("\n".join([*lines, *block]) + "\n")
    urls = secret_file(tmp_path / "notify-urls", f"json://127.0.0.1/{TOKEN}\n")

    loaded = load_config(tmp_path / "retention.yaml", env=KEYS, clock=fixed_clock)

    assert loaded.config.notify is not None
    assert [(p, str(u)) for p, u in loaded.config.notify.destinations()] == [
        (f"{urls}:1", REDACTED)
    ]
    assert loaded.warnings == []
