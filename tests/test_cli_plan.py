"""The planning commands end to end, as an operator runs them: retention.yaml, keys in the
environment, the simulator as the API. Exit codes as docs/commands.md lists them."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import jsonschema
import pytest
import responses

from retention import cli
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.plan.planner import make_plan
from retention.report.lines import summary_lines
from retention.runfolder.planread import decision_lines
from retention.runfolder.schema import plan_json_schema
from retention.simulator.server import Simulator
from tests.support.client import PUBLIC_KEY, make_client
from tests.support.digest import DigestChecker
from tests.support.fakeapi import FakeApi, list_page, paged, snapshot
from tests.support.reportpage import ReportPage
from tests.support.simfleet import BIG, KEY, NOW, SMALL, P
from tests.support.wire_server import closed_port

POLICY = """\
name: everything
keep:
  last: 3
  daily: 7
safety:
  min_keep: 2
  max_expire_fraction: {fraction}
"""


def write_config(folder: Path, base_url: str, fraction: float = 1.0) -> Path:
    """A retention.yaml with one target project and one policy, relative paths."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "everything.yaml").write_text(POLICY.format(fraction=fraction))
    path = folder / "retention.yaml"
    path.write_text(
        f"api:\n  base_url: {base_url}\n  concurrency: 4\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
    )
    return path


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's keys in the environment, nothing else of ours."""
    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)


@pytest.mark.usefixtures("keys")
def test_plan_writes_plan_and_decisions_and_summary(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan writes a valid plan.json and decisions.jsonl.zst (a record per snapshot, the
    plan's digest and count) in reports/ and prints the summary."""
    config = write_config(tmp_path, sim.base_url)

    code = cli.main(
        ["--config", str(config), "plan", "--at", "2026-11-21T12:00:00Z"], clock=sim.clock.now
    )

    out = capsys.readouterr().out
    [plan_path] = (tmp_path / "reports").glob("*/plan.json")
    document = json.loads(plan_path.read_text())
    jsonschema.validate(document, plan_json_schema())
    written = plan_path.with_name("decisions.jsonl.zst").read_bytes()
    decisions = list(decision_lines(plan_path.with_name("decisions.jsonl.zst")))
    assert code == 0
    assert document["format"] == "retention-plan/v2"
    assert document["evaluatedAt"] == "2026-11-21T12:00:00Z"
    assert document["summary"]["snapshots"] == len(decisions) == 1234 + 5 + 2 + 3
    assert document["decisions"] == {
        "sha256": hashlib.sha256(written).hexdigest(),
        "records": len(decisions),
    }
    assert "Plan: " in out
    assert "prod-big" in out
    assert f"Saved {plan_path}" in out
    assert sim.admin("patches") == {"patches": []}  # a plan changes nothing


@pytest.mark.usefixtures("keys")
def test_plan_held_by_the_fraction_gate_is_exit_3(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan that would expire more than max_expire_fraction of a cluster exits 3, and the
    summary prints the whole command, with the plan's real path, that sends what that gate
    holds after review; pasted as printed, it sends the held changes and exits 0."""
    config = write_config(tmp_path, sim.base_url, fraction=0.1)
    plan = tmp_path / "p.json"

    code = cli.main(["--config", str(config), "plan", "--out", str(plan)], clock=sim.clock.now)

    out = capsys.readouterr().out
    assert code == 3
    assert "more than max_expire_fraction 0.1" in out
    printed = [
        line.strip() for line in out.splitlines() if line.strip().startswith("retention apply")
    ]
    assert printed == [f"retention apply {plan} --approve prod-big"]
    words = shlex.split(printed[0])[1:]
    assert cli.main(["--config", str(config), *words, "--quiet"], clock=sim.clock.now) == 0
    assert "Approved by --approve: prod-big" in capsys.readouterr().out


@pytest.mark.usefixtures("keys")
def test_explain_prints_every_reason(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain finds a snapshot in the plan's decisions and prints its decision and the
    rules that keep it (each once: as a rule line, not again among the reasons)."""
    config = write_config(tmp_path, sim.base_url)
    plan_path = tmp_path / "p.json"
    cli.main(
        ["--config", str(config), "plan", "--out", str(plan_path), "--at", "2026-11-21T12:00:00Z"],
        clock=sim.clock.now,
    )
    capsys.readouterr()

    assert (
        cli.main(
            ["--config", str(config), "explain", "fresh", "--plan", str(plan_path)],
            clock=sim.clock.now,
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        cli.main(
            ["--config", str(config), "explain", "nope", "--plan", str(plan_path)],
            clock=sim.clock.now,
        )
        == 2
    )
    err = capsys.readouterr().err

    assert "snapshot fresh of cluster prod-small" in out
    assert "decision:  kept" in out
    assert "\n    keep     last #1 of 3\n" in out
    assert "\n    keep     daily #1 of 7, until 2026-11-28T00:00:00Z\n" in out
    assert "(last snapshot)" not in out
    assert "snapshot nope is not in" in err


@pytest.mark.usefixtures("keys")
def test_wrong_key_is_exit_5_and_never_printed(
    sim: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keys the API refuses stop the run with exit 5, naming what failed, without the key."""
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "a-wrong-secret-value")
    config = write_config(tmp_path, sim.base_url)

    code = cli.main(
        ["--config", str(config), "plan", "--out", str(tmp_path / "p.json")], clock=sim.clock.now
    )

    err = capsys.readouterr().err
    assert code == 5
    assert "refused the credentials" in err
    assert "a-wrong-secret-value" not in err


@pytest.mark.usefixtures("keys")
@pytest.mark.usefixtures("instant_retries")
def test_unreachable_api_is_exit_5(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No server at the base URL: exit 5 with 'cannot reach the API'."""
    config = write_config(tmp_path, f"http://127.0.0.1:{closed_port()}/api/public/v1.0")

    code = cli.main(["--config", str(config), "plan", "--out", str(tmp_path / "p.json")])

    assert code == 5
    assert "cannot reach the API" in capsys.readouterr().err


@pytest.mark.usefixtures("keys")
def test_bad_policy_is_exit_2_and_nothing_is_sent(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy mistake is exit 2 with file, line and field, and no request reaches the API."""
    config = write_config(tmp_path, sim.base_url)
    (tmp_path / "policies" / "broken.yaml").write_text("name: broken\nkeep:\n  dayly: 7\n")

    code = cli.main(["--config", str(config), "plan"], clock=sim.clock.now)

    err = capsys.readouterr().err
    assert code == 2
    assert "broken.yaml:3: keep.dayly: unknown field; did you mean 'daily'?" in err
    assert sim.admin("counters")["requests"] == 0


def test_validate_lists_policies_or_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate prints each valid policy's summary, or exits 2 with every problem."""
    good = tmp_path / "good"
    good.mkdir()
    (good / "p.yaml").write_text(POLICY.format(fraction=0.5))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.yaml").write_text("name: a\nkeep: {daily: -2}\n")
    (bad / "b.yaml").write_text("name: b\ntimezone: Europe/Berln\nkeep: {last: 1}\n")

    assert cli.main(["validate", "--policies", str(good)]) == 0
    out = capsys.readouterr().out
    assert cli.main(["validate", "--policies", str(bad)]) == 2
    err = capsys.readouterr().err

    assert "1 policy is valid" in out
    assert "everything: " in out
    assert "a.yaml:2: keep.daily: must be -1 (unlimited) or a number >= 0" in err
    assert (
        "b.yaml:2: timezone: unknown time zone 'Europe/Berln'; did you mean 'Europe/Berlin'?" in err
    )


@pytest.mark.parametrize(
    ("kind", "title"), [("policy", "retention policy"), ("plan", "retention plan")]
)
def test_schema_prints_json_schemas(
    kind: str, title: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """schema policy|plan prints a JSON Schema document."""
    assert cli.main(["schema", kind]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["$schema"].startswith("https://json-schema.org/")
    assert title in document["title"].lower()


@pytest.mark.usefixtures("keys")
def test_config_show_redacts_the_private_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config show prints settings and sources, never the private key."""
    config = write_config(tmp_path, "http://127.0.0.1:9/api/public/v1.0")

    assert cli.main(["--config", str(config), "config", "show"]) == 0
    out = capsys.readouterr().out

    assert KEY not in out
    assert "**********" in out
    assert "concurrency: 4" in out


def test_malformed_answer_for_one_cluster_skips_only_that_cluster(tmp_path: Path) -> None:
    """A cluster whose snapshot list is HTML gets an error and no change; the others go on."""
    listed = [{"id": BIG, "clusterName": "prod-big"}, {"id": SMALL, "clusterName": "prod-small"}]
    good = [
        snapshot(s, at, clusterName="prod-small", expires="2026-12-30T00:00:00Z")
        for s, at in (("a", "2026-11-21T06:00:00Z"), ("b", "2026-11-10T06:00:00Z"))
    ]
    html = (200, {"Content-Type": "text/html"}, "<html>")
    (tmp_path / "p.yaml").write_text(POLICY.format(fraction=1.0))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        fake = FakeApi(DigestChecker(PUBLIC_KEY, KEY))
        fake.install(rsps)
        fake.route("GET", f"/groups/{P}/clusters", paged(listed))
        fake.answer("GET", f"/groups/{P}/hosts", list_page([], 0))
        fake.answer("GET", f"/groups/{P}/alerts", list_page([], 0))
        fake.script("GET", f"/groups/{P}/clusters/{BIG}/snapshots", [html])
        fake.route("GET", f"/groups/{P}/clusters/{SMALL}/snapshots", paged(good))
        with make_client(private_key=KEY) as client:
            scope = Scope(load_policies(tmp_path / "p.yaml"), [ProjectTargets(P)], concurrency=2)
            result = make_plan(client, scope, plan_path=tmp_path / "out" / "plan.json", now=NOW)

    entries = list(result.plan.read_clusters())
    clusters = {c["name"]: c for c in entries}
    assert "expected JSON but got text/html" in clusters["prod-big"]["errors"][0]
    assert clusters["prod-big"]["counts"] == {"snapshots": 0}
    assert clusters["prod-small"]["errors"] == []
    assert clusters["prod-small"]["counts"]["snapshots"] == 2
    assert [e.split(":")[0] for e in result.errors] == [f"cluster {BIG}"]
    # A cluster's error is the cluster's: not also among the plan's own (the schema says
    # those are outside any one cluster), and the summary prints it once.
    assert result.plan.head["errors"] == []
    lines = summary_lines(result.plan.head, entries, plan_path=result.plan.path)
    printed = [line for line in lines if line.startswith("  error")]
    assert printed == [f"  error prod-big: {clusters['prod-big']['errors'][0]}"]


@pytest.mark.usefixtures("keys")
def test_log_format_json_writes_one_json_object_per_line(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--log-format json turns log lines (here: the warnings about verify_tls: false) into
    JSON objects on stderr, one per line; the config-server deprecation is not one of them
    (it is a notice of the plan)."""
    config = write_config(tmp_path, sim.base_url)
    config.write_text(config.read_text().replace("api:\n", "api:\n  verify_tls: false\n"))

    code = cli.main(
        [
            "--log-format",
            "json",
            "--config",
            str(config),
            "plan",
            "--out",
            str(tmp_path / "p.json"),
        ],
        clock=sim.clock.now,
    )

    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    assert code == 0
    assert records
    assert {"time", "level", "logger", "message"} <= set(records[0])
    assert any(r["level"] == "warning" and "verify_tls" in r["message"] for r in records)
    assert not any("deprecated" in r["message"] for r in records)


@pytest.mark.usefixtures("keys")
def test_plan_writes_its_reports_titled_as_a_plan_that_sent_nothing(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan writes report.html and report.md into its run folder, each saying it is a plan
    that sent nothing and how to apply it; --out FILE writes none unless --report, which
    writes NAME.report.html and NAME.report.md beside the file."""
    config = write_config(tmp_path, sim.base_url)
    base = ["--config", str(config), "plan"]

    assert cli.main(base, clock=sim.clock.now) == 0
    [run_dir] = (tmp_path / "reports").glob("*/")
    out = capsys.readouterr().out
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    markdown = (run_dir / "report.md").read_text(encoding="utf-8")
    assert f"  report.html: {run_dir / 'report.html'}" in out.splitlines()
    assert markdown.startswith(f"**retention plan {run_dir.name.rpartition('-')[2]}: exit 0")
    assert "**plan: nothing was sent.**" in markdown.splitlines()[0]
    assert f"retention apply {run_dir / 'plan.json'}" in ReportPage.of(
        run_dir / "report.html"
    ).text_of("dry-run")
    assert "dry run: nothing was changed" not in html
    assert not (run_dir / "results.jsonl").exists()

    assert cli.main([*base, "--out", str(tmp_path / "a.json")], clock=sim.clock.now) == 0
    assert not list(tmp_path.glob("a.report.*"))
    assert (
        cli.main([*base, "--out", str(tmp_path / "b.json"), "--report"], clock=sim.clock.now) == 0
    )
    assert sorted(p.name for p in tmp_path.glob("b.report.*")) == ["b.report.html", "b.report.md"]
    assert "**retention plan b: exit 0" in (tmp_path / "b.report.md").read_text(encoding="utf-8")
