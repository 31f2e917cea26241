"""What the policies warn about reaches the jobs cron starts, not only `validate`: a grace
in months and a glob that matches no cluster are in the plan's warnings (the terminal,
plan.json, --format json), a run's report.html, report.md and notice, and doctor's WARN
lines; --strict makes them exit 2 (a run then sends nothing); and the did-you-mean of a
glob that misses names the real clusters closest to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.config.policyfiles import load_policies
from retention.core.model import Target
from retention.core.policy.globs import closest_names, glob_warnings, suggest
from retention.core.policy.loader import PolicySet
from retention.simulator.server import Simulator
from tests.support.notices import Receiver
from tests.support.simfleet import P

# prod manages every prod-* cluster, with a grace of 30 months meant as 30 minutes;
# small is meant for prod-small and misses it by a letter.
PROD = """\
name: prod
match: {clusters: ['prod-*']}
keep: {last: 3, daily: 7}
grace: 30m
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""
SMALL = "name: small\nmatch:\n  clusters: ['prod-smal']\nkeep: {last: 3}\n"
GRACE = "policies/prod.yaml:4: grace: '30m' is 30 months (in durations m is months)"
GLOB = (
    "policies/small.yaml:3: match.clusters[0]: 'prod-smal' matches none of the 4 clusters "
    "and config servers discovery found; did you mean 'prod-small'?"
)


def write_config(folder: Path, base_url: str, notify: str | None = None) -> Path:
    """retention.yaml for the small fleet, the two policies above, and a notice URL."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "prod.yaml").write_text(PROD)
    (folder / "policies" / "small.yaml").write_text(SMALL)
    path = folder / "retention.yaml"
    notices = f"notify:\n  urls: [{json.dumps(notify)}]\n" if notify else ""
    path.write_text(
        f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\n'
        f"policies: policies/\n{notices}"
    )
    return path


def said(lines: list[str], folder: Path) -> list[str]:
    """``lines`` with the folder's path taken out of them, as the constants above read."""
    return [line.replace(f"{folder}/", "") for line in lines]


def has(lines: list[str], start: str) -> bool:
    """Whether one of ``lines`` starts with ``start``."""
    return any(line.startswith(start) for line in lines)


def json_run(
    capsys: pytest.CaptureFixture[str], sim: Simulator, *args: str
) -> tuple[int, dict[str, Any], str]:
    """A command with --format json: its exit code, its document and its stderr."""
    code = cli.main([*args, "--format", "json"], clock=sim.clock.now)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def test_a_plan_says_the_policy_warnings_in_the_terminal_and_its_file(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`retention plan`, as cron would run it, prints the grace and glob warnings among
    its warnings, writes them into plan.json's warnings, and exits as it would without."""
    write_config(folder, sim.base_url)

    code = cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now)
    out = capsys.readouterr().out

    printed = said([line.strip() for line in out.splitlines()], folder)
    written = said(json.loads((folder / "plan.json").read_text())["warnings"], folder)
    assert code == 0
    assert has(printed, f"warning {GRACE}")
    assert f"warning {GLOB}" in printed
    assert has(written, GRACE)
    assert GLOB in written


def test_plan_json_lists_the_policy_warnings_and_strict_makes_them_exit_2(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json names the policy warnings (policyWarnings, and in the plan's
    warnings); with --strict the plan is still written and reported, and exits 2."""
    write_config(folder, sim.base_url)

    code, doc, _ = json_run(capsys, sim, "plan")
    strict, strict_doc, _ = json_run(capsys, sim, "plan", "--strict")

    warned = said(doc["policyWarnings"], folder)
    assert code == doc["exitCode"] == 0
    assert len(warned) == 2
    assert warned[0].startswith(GRACE)
    assert warned[1] == GLOB
    assert set(doc["policyWarnings"]) <= set(doc["plan"]["warnings"])
    assert strict == strict_doc["exitCode"] == 2
    assert Path(strict_doc["planPath"]).is_file()
    assert strict_doc["policyWarnings"] == doc["policyWarnings"]


def test_a_run_carries_them_into_both_reports_the_notice_and_its_json(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dry run's report.md and report.html list the policy warnings in a Warnings block,
    the notice (report.md's summary) carries them, and so does its --format json."""
    write_config(folder, sim.base_url, receiver.url)

    code, doc, _ = json_run(capsys, sim, "run", "--dry-run")

    run_dir = Path(doc["runDir"])
    markdown = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    [notice] = receiver.notices
    assert code == 0
    assert has(said(doc["warnings"], folder), GRACE)
    assert GLOB in said(doc["warnings"], folder)
    for text in (markdown, notice["message"]):
        assert "- 2 warnings:\n" in text
        # Markdown escapes the brackets (and the underscores of the folder's path).
        assert GLOB.replace("[0]", "\\[0\\]") + "\n" in text
        assert "grace: '30m' is 30 months" in text
    assert '<section id="warnings">' in html
    assert f"<li>{folder}/{GLOB}</li>".replace("'", "&#39;") in html
    assert '<a href="#warnings">Warnings</a>' in html


def test_run_strict_stops_before_sending_anything(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run with --strict whose policies warn exits 2 once its plan is written, names the
    plan and the warnings, and sends no PATCH (without --strict the same run sends some)."""
    write_config(folder, sim.base_url)

    code = cli.main(["run", "--strict", "--quiet"], clock=sim.clock.now)
    err = said(capsys.readouterr().err.splitlines(), folder)
    patches = sim.admin("patches")["patches"]
    sent = cli.main(["run", "--quiet"], clock=sim.clock.now)

    assert code == 2
    assert patches == []
    assert has(err, "error: --strict: 2 policy warnings, so this run sent nothing; its plan")
    assert f"  - {GLOB}" in err
    assert sent == 0
    assert sim.admin("patches")["patches"] != []


def test_doctor_shows_them_as_warnings_and_strict_exits_2(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor is no longer "ok" over policy warnings: a WARN policies line each (exit 0),
    and --strict exits 2 and says why; its JSON says strict."""
    write_config(folder, sim.base_url)

    code = cli.main(["doctor"], clock=sim.clock.now)
    out = said(capsys.readouterr().out.splitlines(), folder)
    strict, doc, _ = json_run(capsys, sim, "doctor", "--strict")
    cli.main(["doctor", "--strict"], clock=sim.clock.now)
    strict_out = capsys.readouterr().out

    assert code == 0
    assert has(out, f"WARN  policies: {GRACE}")
    assert f"WARN  policies: {GLOB}" in out
    assert strict == doc["exitCode"] == 2
    assert doc["strict"] is True
    assert strict_out.rstrip().endswith(
        "--strict: 2 policy warnings (WARN policies lines above): exit 2."
    )


def test_the_strict_setting_in_the_environment_is_strict(
    sim: Simulator,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RETENTION_STRICT=1, the setting a CI job or a CronJob gives once, is --strict for
    plan and doctor: their policy warnings exit 2; =0 leaves them warnings."""
    write_config(folder, sim.base_url)

    monkeypatch.setenv("RETENTION_STRICT", "1")
    plan, plan_doc, _ = json_run(capsys, sim, "plan")
    doctor, _, _ = json_run(capsys, sim, "doctor")
    monkeypatch.setenv("RETENTION_STRICT", "0")
    lenient, _, _ = json_run(capsys, sim, "doctor")

    assert (plan, plan_doc["exitCode"], doctor, lenient) == (2, 2, 2, 0)


def test_a_shards_plan_judges_the_globs_against_the_whole_fleet(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A glob that matches a cluster of another shard is no warning in this shard's plan:
    the names are those discovery found in the whole fleet."""
    write_config(folder, sim.base_url)
    (folder / "policies" / "small.yaml").write_text(SMALL.replace("prod-smal'", "prod-small'"))

    warned = []
    for shard in ("0/2", "1/2"):
        code, doc, _ = json_run(capsys, sim, "plan", "--shard", shard)
        assert code == 0
        warned += said(doc["policyWarnings"], folder)

    assert len(warned) == 2
    assert all(w.startswith(GRACE) for w in warned)


def policies(folder: Path, *texts: str) -> PolicySet:
    """Policies from YAML texts, each a file of its own in ``folder`` (p0.yaml, ...)."""
    for n, text in enumerate(texts):
        (folder / f"p{n}.yaml").write_text(text)
    return load_policies(folder)


NAMES = ["prod-billing", "prod-catalog", "prod-orders", "prod-users", "dev-sandbox"]
FLEET = [Target("proj", f"id{n}", name, "cluster") for n, name in enumerate(NAMES)]


def test_did_you_mean_names_the_glob_mended_to_real_names() -> None:
    """A swapped pair, a dropped letter, a letter too many: the suggestion is the glob
    mended (its wildcards kept) with the real names it then matches."""
    assert [s.text() for s in suggest("prdo-*", NAMES)] == [
        "'prod-*' (prod-billing, prod-catalog, prod-orders, prod-users)"
    ]
    assert [s.text() for s in suggest("prod-ordrs", NAMES)] == ["'prod-orders'"]
    assert [s.text() for s in suggest("dev-sandboxx", NAMES)] == ["'dev-sandbox'"]
    assert suggest("production-*", NAMES) == []
    # Each prod-* name is as far from it: the first three by name.
    assert closest_names("production-*", NAMES) == ["prod-billing", "prod-catalog", "prod-orders"]


def test_a_glob_warning_names_the_file_line_and_the_closest_names(tmp_path: Path) -> None:
    """Each glob of match that matches nothing gets one warning with FILE:LINE and the
    names: a misspelling its mend, another name the closest real ones; a glob that
    matches, or a policy whose projects leave no cluster, gets none."""
    found = glob_warnings(
        policies(
            tmp_path,
            "name: a\nmatch: {clusters: ['prdo-*', 'dev-*']}\nkeep: {last: 1}\n",
            "name: b\nmatch: {clusters: ['production-*']}\nkeep: {last: 1}\n",
            "name: c\nmatch: {projects: ['other'], clusters: ['x']}\nkeep: {last: 1}\n",
        ),
        FLEET,
        ["proj"],
    )

    assert said(found, tmp_path) == [
        "p0.yaml:2: match.clusters[0]: 'prdo-*' matches none of the 5 clusters and config "
        "servers discovery found; did you mean 'prod-*' (prod-billing, prod-catalog, "
        "prod-orders, prod-users)?",
        "p1.yaml:2: match.clusters[0]: 'production-*' matches none of the 5 clusters and "
        "config servers discovery found; the closest: prod-billing, prod-catalog, prod-orders",
        "p2.yaml:2: match.projects[0]: 'other' matches none of the configuration's projects (proj)",
    ]
