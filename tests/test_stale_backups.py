"""Backups that stopped, end to end against the simulator: a cluster whose snapshots stopped
three days ago is named by the terminal summary, `--format json`, report.md and report.html,
the `stale-backups` notice, the metrics and `retention doctor`; a cluster taking snapshots
as usual is named by none of them, and `expect.newest_within` moves the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from retention import cli
from retention.report.summary import StaleCluster, stale_text
from retention.simulator.fleetfile import load_fleet_file
from retention.simulator.server import Simulator
from tests.support.notices import Receiver
from tests.support.reportpage import ReportPage, bullets, section
from tests.support.simfleet import P, running

OK = "      - {name: prod-ok, generate: {six_hourly_days: 2}}\n"
STOPPED = "      - {name: prod-stopped, generate: {six_hourly_days: 2, stopped_days_ago: 3}}\n"
# The simulator's now is 2026-11-21T12:00:00Z. Its 6-hourly snapshots live 2 days and its
# 00:00 ones 7, so a cluster stopped 3 days ago has daily snapshots left, the newest of
# 2026-11-18 00:00: 3 days 12 h old, against twice its daily cadence and an hour.
WORDS = "newest restorable snapshot 3 days 12 h old; expected within 2 days 1 h (twice its cadence)"


@contextmanager
def fleet(folder: Path, *clusters: str) -> Iterator[Simulator]:
    """The simulator serving one project of ``clusters`` (fleet-file lines)."""
    path = folder / "fleet.yaml"
    path.write_text(
        f'projects:\n  - id: "{P}"\n    name: test-project\n    clusters:\n' + "".join(clusters)
    )
    with running(lambda now: load_fleet_file(path, seed=7, now=now)) as sim:
        yield sim


def configure(folder: Path, sim: Simulator, receiver: Receiver, expect: str = "") -> None:
    """retention.yaml with notices on stale-backups only, and one policy that lets every
    change through (so no hold is what the notice is about)."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text(
        "name: p\nkeep: {last: 3, daily: 7}\nsafety: {max_expire_fraction: 1.0}\n" + expect
    )
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\n'
        f'notify:\n  urls: ["{receiver.url}"]\n  on: [stale-backups]\n'
    )


def command(capsys: pytest.CaptureFixture[str], sim: Simulator, *args: str) -> tuple[int, str]:
    """A command at the simulator's time: its exit code and stdout."""
    code = cli.main(list(args), clock=sim.clock.now)
    return code, capsys.readouterr().out


def ages(path: Path) -> dict[str, float]:
    """retention_newest_restorable_age_seconds of the metrics textfile, by cluster label."""
    return {
        s.labels["cluster"]: s.value
        for family in text_string_to_metric_families(path.read_text())
        for s in family.samples
        if s.name == "retention_newest_restorable_age_seconds" and s.labels["project"] == P
    }


def gauge(path: Path, name: str) -> float:
    """The one sample of an unlabelled gauge of the metrics textfile."""
    families = text_string_to_metric_families(path.read_text())
    [value] = [s.value for f in families for s in f.samples if s.name == name]
    return value


def run_json(capsys: pytest.CaptureFixture[str], sim: Simulator) -> dict[str, Any]:
    """`retention run --format json` with a metrics file: its document."""
    code, out = command(
        capsys, sim, "run", "--quiet", "--metrics-file", "m.prom", "--format", "json"
    )
    assert code == 0
    document: dict[str, Any] = json.loads(out)
    return document


def test_a_cluster_whose_backups_stopped_is_named_everywhere(
    folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped three days ago: the plan's warning line and staleBackups, the run's notice
    (a warning), report.md's bullet and section, report.html's banner and section, the
    age metric and doctor's warning all name prod-stopped with its age, and never prod-ok."""
    with fleet(folder, OK, STOPPED) as sim:
        configure(folder, sim, receiver)
        _, text = command(capsys, sim, "plan")
        _, out = command(capsys, sim, "plan", "--format", "json")
        run = run_json(capsys, sim)
        doctor_code, doctor = command(capsys, sim, "doctor")

    stale = {
        "projectId": P,
        "clusterId": run["staleBackups"][0]["clusterId"],
        "name": "prod-stopped",
        "newest": "2026-11-18T00:00:00Z",
        "ageSeconds": 3 * 86400 + 12 * 3600,
        "withinSeconds": 49 * 3600,
        "expectedFrom": "cadence",
        "text": WORDS,
    }
    assert f"Warning: 1 cluster whose backups stopped: prod-stopped ({WORDS})." in text.splitlines()
    assert json.loads(out)["staleBackups"] == [stale]
    assert run["staleBackups"] == [stale]
    assert run["summary"]["clustersStale"] == 1
    [notice] = receiver.notices
    assert notice["type"] == "warning"
    assert notice["title"] == f"retention run {run['runId']}: exit 0, done"
    assert bullets(notice["message"], "- Backups that stopped") == [
        "- Backups that stopped: 1 cluster whose newest restorable snapshot is older than "
        "expected:",
        f"  - prod-stopped: {WORDS}",
    ]
    report = (Path(run["runDir"]) / "report.md").read_text()
    assert f"  - prod-stopped: {WORDS}" in report
    assert section(report, "Backups that stopped").splitlines()[2:4] == [
        "|---|---|---|---:|---|",
        "| prod-stopped | test-project | 2026-11-18 00:00 | 3 days 12 h | 2 days 1 h (twice its "
        "cadence) |",
    ]
    page = ReportPage.of(Path(run["runDir"]) / "report.html")
    assert "The backups of 1 cluster stopped" in page.text_of("stale-banner")
    assert page.rows["stale-backups"][1][:4] == [
        "prod-stopped",
        "2026-11-18 00:00",
        "3 days 12 h",
        "2 days 1 h (twice its cadence)",
    ]
    assert ages(folder / "m.prom")["prod-stopped"] == 3 * 86400 + 12 * 3600
    assert ages(folder / "m.prom")["prod-ok"] < 13 * 3600
    assert gauge(folder / "m.prom", "retention_clusters_stale") == 1
    assert doctor_code == 0
    [line] = [line for line in doctor.splitlines() if "backups:" in line]
    assert line.startswith("WARN  backups: the newest plan (")
    assert line.endswith(f"): 1 cluster whose backups stopped: prod-stopped ({WORDS})")
    assert "prod-ok (newest" not in text + doctor
    assert "prod-ok: newest" not in report + notice["message"]
    assert [row[0] for row in page.rows["stale-backups"][1:]] == ["prod-stopped"]


def test_a_cluster_taking_snapshots_as_usual_is_named_nowhere(
    folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 6-hourly cluster: no warning, an empty staleBackups, no stale-backups notice, no
    section in either report, its age metric a few hours, and doctor passes its backups."""
    with fleet(folder, OK) as sim:
        configure(folder, sim, receiver)
        _, text = command(capsys, sim, "plan")
        run = run_json(capsys, sim)
        _, doctor = command(capsys, sim, "doctor")

    folder_of_run = Path(run["runDir"])
    assert "whose backups stopped" not in text
    assert run["staleBackups"] == []
    assert run["summary"]["clustersStale"] == 0
    assert receiver.notices == []
    assert run["notices"] == []
    assert "Backups that stopped" not in (folder_of_run / "report.md").read_text()
    assert "stale-backups" not in ReportPage.of(folder_of_run / "report.html").by_id
    assert ages(folder / "m.prom")["prod-ok"] < 13 * 3600
    assert gauge(folder / "m.prom", "retention_clusters_stale") == 0
    assert "ok    backups: the newest plan (" in doctor
    assert "1 cluster checked, none stopped" in doctor


def test_newest_within_of_the_policy_overrides_the_cadence(
    folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """expect: {newest_within: 10d} makes the cluster stopped three days ago not stale:
    expected within 10 days, from the policy, and nothing warns."""
    with fleet(folder, STOPPED) as sim:
        configure(folder, sim, receiver, expect="expect: {newest_within: 10d}\n")
        _, out = command(capsys, sim, "plan", "--format", "json")

    document = json.loads(out)
    [cluster] = document["plan"]["clusters"]
    assert document["staleBackups"] == []
    assert cluster["newestRestorable"]["withinSeconds"] == 10 * 86400
    assert cluster["newestRestorable"]["expectedFrom"] == "policy"
    assert cluster["newestRestorable"]["stale"] is False
    assert document["plan"]["summary"]["clustersStale"] == 0


def test_doctor_before_any_plan_says_the_backups_are_not_checked_yet(
    folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a plan in reports.dir the doctor does not walk snapshots: backups pass as
    not checked yet."""
    with fleet(folder, STOPPED) as sim:
        configure(folder, sim, receiver)
        code, doctor = command(capsys, sim, "doctor")

    assert code == 0
    assert f"ok    backups: not checked: no plan in {folder / 'reports'} yet" in doctor.splitlines()


def test_the_warning_names_ten_clusters_then_counts_the_rest() -> None:
    """Twelve clusters whose backups stopped: the line names the first ten in plan order,
    each with its age, and counts the other two."""
    stale = [
        StaleCluster(
            f"rs-{i:02d}",
            P,
            f"c{i}",
            None,
            None,
            None,
            36 * 3600,
            "default",
            "no restorable snapshot",
        )
        for i in range(12)
    ]

    text = stale_text(stale)

    assert text.startswith("12 clusters whose backups stopped: rs-00 (no restorable snapshot), ")
    assert text.endswith("rs-09 (no restorable snapshot), and 2 more")
    assert "rs-10" not in text
