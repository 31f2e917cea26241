"""Notices (`notify:` in retention.yaml): real runs against the simulator send them to a local
JSON webhook receiver, `on` picks which endings are told, a receiver that is down costs
nothing but a warning and a metric, and no output ever holds a notification URL's secret."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import apprise
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from retention import cli
from retention.config.loading import load_config
from retention.config.notify import NotifySettings
from retention.config.showing import render_config
from retention.errors import ConfigError
from retention.notices import send as notify
from retention.ops.clock import Clock, system_clock
from retention.simulator.server import Simulator
from tests.support.client import fixed_clock
from tests.support.notices import TOKEN, Receiver
from tests.support.simfleet import P
from tests.support.wire_server import closed_port

REDACTED = "json://**********"
EXAMPLE = Path(__file__).resolve().parent.parent / "retention.example.yaml"
POLICY = "name: p\nkeep: {{last: 3, daily: 3}}\nsafety: {{max_expire_fraction: {fraction}}}\n"


def dead_url() -> str:
    """A JSON webhook URL (with the secret) on a port nothing listens on, short timeouts."""
    return f"json://127.0.0.1:{closed_port()}/hooks/{TOKEN}?cto=1&rto=1"


def write_config(
    folder: Path, base_url: str, urls: list[str], *, on: str | None = None, fraction: float = 1.0
) -> Path:
    """retention.yaml for the small fleet with notify: urls (and on), and one policy."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text(POLICY.format(fraction=fraction))
    path = folder / "retention.yaml"
    path.write_text(
        f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\n'
        f"notify:\n  urls: {json.dumps(urls)}\n" + (f"  on: {on}\n" if on else "")
    )
    return path


def run(
    capsys: pytest.CaptureFixture[str], *args: str, clock: Clock = system_clock
) -> tuple[int, dict[str, Any], str]:
    """A command with --format json at ``clock``'s time: its exit code, its document and its
    stderr."""
    code = cli.main([*args, "--format", "json"], clock=clock)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def metrics(path: Path) -> dict[str, float]:
    """The unlabelled samples of a metrics textfile, by name."""
    return {
        s.name: s.value
        for family in text_string_to_metric_families(path.read_text())
        for s in family.samples
        if not s.labels
    }


def plan_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """The summary of the plan.json in the run folder a run document names."""
    summary: dict[str, Any] = json.loads((Path(doc["runDir"]) / "plan.json").read_text())["summary"]
    return summary


def test_a_run_sends_a_notice_that_arrives_with_the_summary(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that applies changes sends one notice: the exit code in the title, report.md's
    summary (what expires from when, what is held, what failed) and the run folder."""
    write_config(folder, sim.base_url, [receiver.url])

    code, doc, _ = run(capsys, "run", "--quiet", "--metrics-file", "m.prom", clock=sim.clock.now)

    summary = plan_summary(doc)
    expiring = summary["byAction"].get("shorten", 0) + summary["byAction"].get("delete", 0)
    [notice] = receiver.notices
    message = notice["message"]
    assert code == 0
    assert receiver.paths == [f"/hooks/{TOKEN}"]
    assert notice["title"] == f"retention run {doc['runId']}: exit 0, done"
    assert notice["type"] == "success"
    assert message.startswith(f"**retention run {doc['runId']}: exit 0, done.**")
    assert expiring > 0
    assert (
        f"- Deletion: {expiring} snapshots may be deleted by the service from "
        f"{summary['expiresFrom']} on" in message
    )
    assert "clusters with changes, 0 held, 0 with errors." in message
    assert "failed 0, held 0." in message
    assert "###" not in message
    assert message.endswith(f"\n\nRun folder: `{doc['runDir']}`")
    assert doc["notices"] == [
        {"url": REDACTED, "setting": "notify.urls[0]", "sent": True, "error": None}
    ]
    got = metrics(folder / "m.prom")
    assert (got["retention_notices_sent"], got["retention_notices_failed"]) == (1, 0)


def test_a_held_run_notices_what_is_held(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """With on: [holds], a run whose changes a safety gate held (exit 3) sends a warning
    that counts the held changes and clusters and gives the command that approves them."""
    write_config(folder, sim.base_url, [receiver.url], on="[holds]", fraction=0.01)

    code, doc, _ = run(capsys, "run", "--quiet", clock=sim.clock.now)

    summary = plan_summary(doc)
    [notice] = receiver.notices
    assert code == 3
    assert notice["title"] == (
        f"retention run {doc['runId']}: exit 3, "
        "held by a safety gate: destructive changes need a human"
    )
    assert notice["type"] == "warning"
    assert summary["clustersHeld"] == 1
    assert f"{summary['byAction']['held']} held, " in notice["message"]
    assert "clusters with changes, 1 held, 0 with errors." in notice["message"]
    [run_dir] = (folder / "reports").glob("*/")
    assert f"`retention apply {run_dir / 'plan.json'} --approve prod-big`" in notice["message"]


def test_on_holds_sends_nothing_for_a_run_that_holds_nothing(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """With on: [holds] (YAML's `on` read as the word, not as true), a run that applies
    changes and holds nothing sends no notice and counts none."""
    write_config(folder, sim.base_url, [receiver.url], on="[holds]")

    code, doc, _ = run(capsys, "run", "--quiet", "--metrics-file", "m.prom", clock=sim.clock.now)

    got = metrics(folder / "m.prom")
    assert code == 0
    assert doc["outcomes"]["applied"] > 0
    assert receiver.notices == []
    assert doc["notices"] == []
    assert (got["retention_notices_sent"], got["retention_notices_failed"]) == (0, 0)


def test_a_dry_run_notices_the_changes_it_plans(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """With on: [changes], a dry run whose plan has changes to send notices them (as
    information: nothing was changed)."""
    write_config(folder, sim.base_url, [receiver.url], on="[changes]")

    code, doc, _ = run(capsys, "run", "--dry-run", "--quiet", clock=sim.clock.now)

    [notice] = receiver.notices
    assert code == 0
    assert notice["title"] == f"retention dry-run {doc['runId']}: exit 0, done"
    assert notice["type"] == "info"
    assert "**dry run: nothing was changed.**" in notice["message"]


def test_an_apply_notices_the_changes_it_applied(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """An apply that sends the held changes of a reviewed plan notices it, with the apply's
    own run folder."""
    write_config(folder, sim.base_url, [receiver.url], on="[changes]", fraction=0.01)
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 3
    capsys.readouterr()

    code, doc, _ = run(
        capsys, "apply", "plan.json", "--approve-all", "--quiet", clock=sim.clock.now
    )

    [notice] = receiver.notices
    assert code == 0
    assert doc["outcomes"]["applied"] > 0
    assert notice["title"] == f"retention apply {doc['runId']}: exit 0, done"
    assert notice["message"].endswith(f"Run folder: `{doc['runDir']}`")


def test_a_dead_receiver_leaves_the_exit_code_and_is_logged_and_counted(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notice that cannot be sent changes nothing of the run's ending: the same exit
    code, one warning naming the URL redacted, and retention_notices_failed 1."""
    write_config(folder, sim.base_url, [dead_url()])

    code, doc, err = run(capsys, "run", "--quiet", "--metrics-file", "m.prom", clock=sim.clock.now)

    warnings = [line for line in err.splitlines() if "notice" in line]
    got = metrics(folder / "m.prom")
    assert code == 0
    assert doc["exitCode"] == 0
    assert warnings == [
        f"warning: could not send the notice to {REDACTED} (notify.urls[0]): not delivered: "
        "the service could not be reached or refused the notice"
    ]
    assert doc["notices"] == [
        {
            "url": REDACTED,
            "setting": "notify.urls[0]",
            "sent": False,
            "error": "not delivered: the service could not be reached or refused the notice",
        }
    ]
    assert (got["retention_notices_sent"], got["retention_notices_failed"]) == (0, 1)
    assert got["retention_last_run_exit_code"] == 0


def test_a_run_that_cannot_reach_the_api_sends_a_failure_notice(
    sim: Simulator,
    folder: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that stops with exit 5 (the keys refused) once retention.yaml is loaded sends a
    failure notice with the error, and the metrics count it."""
    write_config(folder, sim.base_url, [receiver.url], on="[failure]")
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "wrong")

    code, doc, _ = run(capsys, "run", "--quiet", "--metrics-file", "m.prom", clock=sim.clock.now)

    [notice] = receiver.notices
    got = metrics(folder / "m.prom")
    assert (code, doc) == (5, {})
    assert notice["title"] == (
        "retention run: exit 5, API unreachable or authentication failed: nothing was sent"
    )
    assert notice["type"] == "failure"
    assert "the API refused the credentials" in notice["message"]
    assert (got["retention_notices_sent"], got["retention_notices_failed"]) == (1, 0)


def test_no_output_holds_the_secret_of_a_notification_url(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """The secret in a notification URL reaches the service and nothing else: not stdout or
    stderr (text and JSON logs, with --debug), config show (YAML and JSON), the run
    folder's files (reports, results, plan) or the metrics textfile."""
    write_config(folder, sim.base_url, [receiver.url, dead_url()], fraction=0.01)
    outputs = []
    codes = []
    for args in (
        ["--debug", "run", "--metrics-file", "m.prom"],
        ["--log-format", "json", "--debug", "run", "--format", "json", "--metrics-file", "m.prom"],
        ["config", "show"],
        ["config", "show", "--format", "json"],
    ):
        codes.append(cli.main(args, clock=sim.clock.now))
        out, err = capsys.readouterr()
        outputs += [out, err]
    files = [p for p in folder.rglob("*") if p.is_file() and p.parent.name != "policies"]
    names = {p.name for p in files}

    assert codes == [3, 3, 0, 0]  # both runs hold changes back (exit 3)
    assert receiver.paths == [f"/hooks/{TOKEN}"] * 2  # the secret did reach the service
    assert {"report.html", "report.md", "results.jsonl", "plan.json", "m.prom"} <= names
    assert [p.name for p in files if TOKEN in p.read_text(errors="replace")] == ["retention.yaml"]
    assert [text for text in outputs if TOKEN in text] == []
    assert f'  urls: ["{REDACTED}", "{REDACTED}"]' in outputs[4]
    assert json.loads(outputs[6])["config"]["notify"]["urls"] == [REDACTED, REDACTED]
    assert f"could not send the notice to {REDACTED} (notify.urls[1])" in outputs[1]
    assert '"event": "notice-failed"' in outputs[3]


def test_a_bad_notification_url_is_a_config_error_that_does_not_echo_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each URL apprise cannot use is a problem naming its field and at most its scheme;
    neither the problems nor any log line quote the URL."""
    caplog.set_level(logging.DEBUG)
    urls = ["json://", f"nope://{TOKEN}/x", f"{TOKEN}-no-scheme", f"json://127.0.0.1/{TOKEN}"]
    path = write_config(tmp_path, "https://om.test/api/public/v1.0", urls, on="[holds, daily]")

    with pytest.raises(ConfigError) as caught:
        load_config(
            path, env={"RETENTION_PUBLIC_KEY": "p", "RETENTION_PRIVATE_KEY": "k"}, clock=fixed_clock
        )

    said = "\n".join([str(caught.value), repr(caught.value), *caught.value.problems])
    assert caught.value.problems == [
        "retention.yaml:6: notify.urls[0]: not a valid json:// URL: apprise cannot use it; "
        "check its parts against apprise's page for json://",
        "retention.yaml:6: notify.urls[1]: nope:// is not a service apprise knows (slack://, "
        "workflows:// for Teams, mailto://, json:// and about 180 more)",
        "retention.yaml:6: notify.urls[2]: not an Apprise URL: write SERVICE://..., "
        "e.g. json://alerts.example.net/retention",
        "retention.yaml:7: notify.on[1]: must be 'changes', 'holds', 'failure' or 'stale-backups'",
    ]
    assert TOKEN not in said
    assert TOKEN not in caplog.text


def test_a_notice_apprise_raises_on_is_one_failed_delivery(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception inside apprise is a failed delivery, logged once (redacted, without the
    exception's text) and never raised."""

    def explode(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError(f"could not reach {TOKEN}")

    monkeypatch.setattr(apprise.Apprise, "notify", explode)
    notice = notify.Notice("title", "body", "info")

    deliveries = notify.send([("notify.urls[0]", SecretStr(f"json://127.0.0.1:9/{TOKEN}"))], notice)

    assert deliveries == [
        notify.Delivery("notify.urls[0]", REDACTED, False, "apprise failed: RuntimeError")
    ]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"could not send the notice to {REDACTED} (notify.urls[0]): apprise failed: RuntimeError"
    ]
    assert TOKEN not in caplog.text


def test_notify_on_defaults_to_every_kind_and_a_url_shows_only_its_scheme(
    tmp_path: Path,
) -> None:
    """Without on, every kind of ending is notified; a URL's str, repr and config show hold
    only its scheme; and `on` read by PyYAML (as the key true) is still `on`."""
    secret = TOKEN.replace("-", "")  # a Slack token has letters and digits only
    path = write_config(tmp_path, "https://om.test/api/public/v1.0", [f"slack://T0/B0/{secret}"])
    loaded = load_config(
        path, env={"RETENTION_PUBLIC_KEY": "p", "RETENTION_PRIVATE_KEY": "k"}, clock=fixed_clock
    )

    settings = loaded.config.notify
    shown = [" ".join(line.split()) for line in render_config(loaded).splitlines()]
    assert settings is not None
    assert settings.urls is not None
    assert settings.on == ["changes", "holds", "failure", "stale-backups"]
    assert (str(settings.urls[0]), repr(settings.urls[0])) == (
        "slack://**********",
        "NotifyUrl('slack://**********')",
    )
    assert 'urls: ["slack://**********"] # file' in shown
    assert 'on: ["changes", "holds", "failure", "stale-backups"] # default' in shown
    assert secret not in "\n".join(shown) + repr(loaded)
    again = yaml.safe_load(f"urls: [json://127.0.0.1/{TOKEN}]\non: [failure]\n")
    assert NotifySettings.model_validate(again).on == ["failure"]


def test_the_example_notify_block_loads_once_uncommented(tmp_path: Path) -> None:
    """retention.example.yaml's commented notify: block is a valid setting when a user
    takes the comment marks off."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    start = lines.index("# notify:")
    block = []
    for line in lines[start:]:
        if not line.startswith("#"):
            break
        block.append(line.removeprefix("# ").removeprefix("#"))
    (tmp_path / "notify.yaml").write_text("\n".join(block) + "\n")

    data = yaml.safe_load((tmp_path / "notify.yaml").read_text())
    settings = NotifySettings.model_validate(data["notify"])

    assert [str(url) for _, url in settings.destinations()] == ["slack://**********", REDACTED]
    assert settings.on == ["changes", "holds", "failure", "stale-backups"]
