"""`retention forecast` end to end on the simulator: a small fleet file with one 6-hourly
cluster whose steady state is computed by hand, a base that keeps more, bad input, and the
demo fleet for the document's keys. Nothing may be sent: every test checks the PATCH log."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.forecast.forecaster import POOL_FROM
from retention.simulator.fleetfile import build_fleet
from retention.simulator.server import Simulator
from tests.support.simfleet import NOW, running

PROJECT = "5e2211c17a3e5a48f5497de3"
# keep the newest 8 and the newest of each of the last 7 days; grace is the default 24h.
POLICY = "name: small\nkeep: {last: 8, daily: 7}\n"
MORE = "name: more\nkeep: {last: 8, daily: 20}\n"


def fleet_file(path: Path) -> Path:
    """One cluster with a snapshot every 6 hours for 10 days up to NOW (12:00 UTC), each
    expiring 10 days after its creation, and nothing else."""
    rows = "".join(
        f'              - {{id: s{i:02d}, created: "now-{6 * i}h", '
        f'expires: "now+{240 - 6 * i}h"}}\n'
        for i in range(40)
    )
    path.write_text(
        f'projects:\n  - id: "{PROJECT}"\n    name: forecast\n    clusters:\n'
        f"          - name: six-hourly\n            snapshots:\n{rows}"
    )
    return path


@dataclass(frozen=True)
class Setup:
    """A simulator, a retention.yaml for it, and how to run a command against it."""

    sim: Simulator
    folder: Path

    def main(self, *argv: str) -> int:
        config = self.folder / "retention.yaml"
        return cli.main(["--config", str(config), *argv], clock=self.sim.clock.now)

    def json(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
        capsys.readouterr()
        code = self.main("forecast", *argv, "--format", "json")
        return code, json.loads(capsys.readouterr().out)


def configure(sim: Simulator, folder: Path, policy: str) -> Setup:
    """retention.yaml for every project of ``sim``, and policies/ holding ``policy``."""
    (folder / "policies").mkdir()
    (folder / "policies" / "p.yaml").write_text(policy)
    projects = "".join(f'  - project: "{p["id"]}"\n' for p in sim.admin("fleet")["projects"])
    (folder / "retention.yaml").write_text(
        f"api:\n  base_url: {sim.base_url}\n  concurrency: 2\n"
        f'targets:\n{projects}policies: policies/\nschedule: "0 3 * * *"\n'
    )
    return Setup(sim, folder)


@pytest.fixture(scope="module")
def small_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    """The small fleet file on a simulator frozen at NOW."""
    path = fleet_file(tmp_path_factory.mktemp("fleet") / "fleet.yaml")
    with running(lambda now: build_fleet(path, seed=1, now=now)) as simulator:
        yield simulator


@pytest.fixture
def small(small_sim: Simulator, folder: Path) -> Setup:
    """The small fleet with the `last 8, daily 7` policy."""
    return configure(small_sim, folder, POLICY)


def test_a_six_hourly_cluster_reaches_the_hand_computed_steady_count(
    small: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """30 days of daily steps from 12:00 UTC: after the first step the cluster holds 16
    snapshots every day, and the steady state is reached on day 1."""
    code, document = small.json(capsys, "--days", "30")

    # Each step runs at 12:00, after the service took the 18:00, 00:00, 06:00 and 12:00
    # snapshots. last 8: today 12, 06, 00; yesterday 18, 12, 06, 00; the day before 18.
    # daily 7: today 12:00 and 18:00 of each of the 6 days before. Both keep today 12:00,
    # yesterday 18:00 and the day before's 18:00, so 8 + 7 - 3 = 12 are kept. The run
    # shortens the other 4 (the oldest of the 16 after the 4 new ones) to now + 24h, and
    # the service reaps them just before the next run: 12 + 4 = 16 after every step.
    # Step 0 runs on today's 40 snapshots: 28 shortened, none gone yet.
    [cluster] = document["clusters"]
    counts = [row["count"] for row in cluster["series"]]
    assert code == document["exitCode"] == 0
    assert len(counts) == 31
    assert counts[0] == 40
    assert counts[1] == counts[2] == counts[7] == counts[30] == 16
    assert cluster["steady"]["count"] == 16
    assert cluster["steady"]["trend"] == "steady"
    assert cluster["steady"]["at"] == "2026-11-22T12:00:00Z"
    assert cluster["cadence"]["source"] == "schedule"
    assert cluster["cadence"]["intervalSeconds"] == 6 * 3600
    assert cluster["restorePoints"]["count"] == 12
    # The oldest restore point at the end is the 18:00 of 6 days before the last day.
    last = NOW + timedelta(days=30)
    oldest = (last - timedelta(days=6)).replace(hour=18)
    assert cluster["series"][-1]["oldest"] == oldest.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert document["fleet"]["steady"]["count"] == 16
    assert small.sim.admin("patches") == {"patches": []}


def test_steps_of_6_hours_take_one_snapshot_a_step(
    small: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """--step 6h over 2 days: 8 steps and 9 points, stepSeconds 21600, and at the last
    step (12:00) 16 again: the 12 kept and the 4 that the runs of the last 24 hours
    shortened, one a run, which the grace of 24h leaves on the service until then."""
    code, document = small.json(capsys, "--days", "2", "--step", "6h")

    [cluster] = document["clusters"]
    assert code == 0
    assert document["stepSeconds"] == 21600
    assert len(cluster["series"]) == 9
    assert cluster["series"][-1]["count"] == 16


def test_a_more_retentive_base_keeps_more_side_by_side(
    small: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """--base with a policy keeping 20 dailies: the base side's steady count is above the
    current one's, each cluster and the fleet carry both, and the text says the difference."""
    more = small.folder / "more"
    more.mkdir()
    (more / "p.yaml").write_text(MORE)

    code, document = small.json(capsys, "--days", "30", "--base", str(more))
    assert small.main("forecast", "--days", "30", "--base", str(more)) == 0
    text = capsys.readouterr().out

    [cluster] = document["clusters"]
    assert code == 0
    assert document["base"]["policies"] == ["more"]
    assert cluster["policies"] == ["small"]
    assert cluster["base"]["policies"] == ["more"]
    # last 8 and 20 dailies: 8 + 20 - 3 kept, and 4 shortened each day.
    assert cluster["base"]["steady"]["count"] == 29
    assert document["base"]["fleet"]["steady"]["count"] == 29
    assert cluster["steady"]["count"] == 16
    assert cluster["steady"]["trend"] == "steady"
    assert "keeps 16 instead of 29 snapshots" in text
    assert small.sim.admin("patches") == {"patches": []}


def test_the_text_opens_with_the_fleet_line(
    small: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """The terminal output starts with what was forecast, then the fleet line (today ->
    steady, the day it is reached), then the cluster's table and the assumptions."""
    capsys.readouterr()
    assert small.main("forecast", "--days", "30") == 0
    lines = capsys.readouterr().out.splitlines()

    assert lines[0].startswith("Forecast from 2026-11-21 12:00 UTC, 30 days ahead")
    assert lines[1].startswith("fleet: 40 snapshots (")
    assert lines[1].endswith(" from 2026-11-22")
    assert "-> 16 (" in lines[1]
    assert "  cadence:           schedule, every 6 h" in lines
    assert "Assumes:" in lines


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--base", "no-such-folder"), "--base no-such-folder: no such folder or file"),
        (("--base", "git:"), "give a git ref after git:"),
        (("--step", "1m"), "a step is in days (d) and hours (h)"),
        (("--step", "0h"), "a step must be at least an hour"),
        (("--days", "0"), "--days"),
    ],
)
def test_bad_usage_is_exit_2(
    small: Setup, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    """A missing base, an empty ref, a step in months or of nothing, no days: exit 2."""
    code = small.main("forecast", *args)

    assert code == 2
    assert says in capsys.readouterr().err
    assert small.sim.admin("patches") == {"patches": []}


@pytest.fixture(scope="module")
def demo() -> Iterator[Simulator]:
    """The demo fleet on a simulator frozen at NOW."""
    with running(lambda now: build_fleet("demo", seed=1, now=now)) as simulator:
        yield simulator


def test_the_json_document_has_the_documented_keys(
    demo: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the demo fleet, --format json is one document with command, exitCode,
    evaluatedAt, days, stepSeconds, assumptions, fleet and clusters, each cluster with its
    cadence, policies, series, steady state and restore points; nothing is sent."""
    policy = (Path(__file__).resolve().parent.parent / "policies" / "production.yaml").read_text()
    setup = configure(demo, folder, policy)

    code, document = setup.json(capsys, "--days", "60")

    assert code == document["exitCode"] == 0
    assert set(document) == {
        "command", "exitCode", "evaluatedAt", "whatIf", "days", "stepSeconds",
        "assumptions", "currentPolicies", "fleet", "clusters", "errors",
    }  # fmt: skip
    assert document["command"] == "forecast"
    assert document["evaluatedAt"] == "2026-11-21T12:00:00Z"
    assert (document["days"], document["stepSeconds"]) == (60, 86400)
    assert any("alert" in a for a in document["assumptions"])
    assert set(document["fleet"]) == {"series", "steady", "awaitingDeletion"}
    assert len(document["fleet"]["series"]) == 61
    assert set(document["fleet"]["series"][0]) == {"at", "count", "storageBytes"}
    assert len(document["clusters"]) >= 10
    cluster = document["clusters"][0]
    assert set(cluster) == {
        "projectId", "clusterId", "name", "kind", "cadence", "awaitingDeletion", "policies",
        "series", "steady", "restorePoints",
    }  # fmt: skip
    assert set(cluster["cadence"]) == {"source", "intervalSeconds", "sizeBytes", "growthPerDay"}
    assert set(cluster["series"][0]) == {"at", "count", "storageBytes", "oldest"}
    assert set(cluster["steady"]) == {"at", "count", "storageBytes", "trend"}
    assert set(cluster["restorePoints"]) >= {"count", "newest", "oldest", "tiers"}
    fleet_today = sum(c["series"][0]["count"] for c in document["clusters"])
    assert document["fleet"]["series"][0]["count"] == fleet_today
    assert demo.admin("patches") == {"patches": []}


def test_todays_count_says_the_snapshots_awaiting_deletion_a_plan_counts(
    demo: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the demo fleet the forecast's today leaves out the snapshots past their expiry
    and says how many (JSON, text and page): today plus those is the plan's count, for the
    fleet and for each cluster."""
    policy = (Path(__file__).resolve().parent.parent / "policies" / "production.yaml").read_text()
    setup = configure(demo, folder, policy)
    capsys.readouterr()
    setup.main("plan", "--format", "json", "--out", str(folder / "plan.json"))
    plan = json.loads(capsys.readouterr().out)["plan"]
    planned = {c["clusterId"]: c["counts"]["snapshots"] for c in plan["clusters"]}

    _, document = setup.json(capsys, "--days", "7")
    page = folder / "forecast.html"
    assert setup.main("forecast", "--days", "7", "--html", str(page)) == 0
    text = capsys.readouterr().out
    html = page.read_text()

    fleet = document["fleet"]
    awaiting = fleet["awaitingDeletion"]
    assert awaiting > 0  # the demo fleet has some: else this proves nothing
    assert fleet["series"][0]["count"] + awaiting == plan["summary"]["snapshots"]
    assert {
        c["clusterId"]: c["series"][0]["count"] + c["awaitingDeletion"]
        for c in document["clusters"]
    } == planned
    today = fleet["series"][0]["count"]
    aside = f"and {awaiting} awaiting deletion: a plan counts {today + awaiting:,}"
    assert re.search(rf"^fleet: {today:,} snapshots \([^)]+\) today \({aside}\) -> ", text, re.M)
    one = next(c for c in document["clusters"] if c["awaitingDeletion"])
    listed = planned[one["clusterId"]]
    assert f"and {one['awaitingDeletion']} awaiting deletion: a plan counts {listed}" in text
    assert f"today ({aside}), " in html
    assert f"+{one['awaitingDeletion']} awaiting deletion</span>" in html


CONFIG_SERVERS = """name: config-servers
match: {clusters: ["cfg*"], kinds: [config-server]}
keep: {daily: 7, weekly: 4}
"""


def test_a_config_servers_year_reads_as_what_its_service_keeps(
    demo: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A demo config server keeps its old snapshots (no expiry) and its service keeps a
    week of new ones: a year on, its ladder is a week of dailies and a yearly tier back to
    the old ones, not a daily tier missing 365 days, and its policies say they only advise."""
    setup = configure(demo, folder, CONFIG_SERVERS)

    _, document = setup.json(capsys, "--days", "365", "--step", "7d")
    assert setup.main("forecast", "--days", "365", "--step", "7d") == 0
    blocks = capsys.readouterr().out.split("\n\n")

    servers = [c for c in document["clusters"] if c["kind"] == "config-server"]
    assert len(servers) == 3
    for server in servers:
        points = server["restorePoints"]
        assert not points["gaps"]
        assert [(t["grain"], t["span"]) for t in points["tiers"]] == [("daily", 7), ("yearly", 2)]
        assert points["text"].startswith("daily for 7 days, yearly for 2 years; oldest 2026-11-")
    said = [b for b in blocks if b.startswith("cfg")]
    advisory = "config-servers (advisory: a config server's changes are never sent)"
    assert len(said) == 3
    assert all(f"  policies:          {advisory}\n" in b and "missing" not in b for b in said)


def test_worker_processes_forecast_what_one_process_does(
    demo: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the demo fleet (more clusters than a pool starts from), api.workers: 2 gives the
    very document api.workers: 1 does, base side included."""
    policy = (Path(__file__).resolve().parent.parent / "policies" / "production.yaml").read_text()
    setup = configure(demo, folder, policy)
    (folder / "base.yaml").write_text("name: base\nkeep: {last: 8, daily: 20}\n")
    config = folder / "retention.yaml"
    configured, documents = config.read_text(), []
    for workers in (1, 2):
        config.write_text(configured.replace("  concurrency: 2\n", f"  workers: {workers}\n"))
        code, document = setup.json(capsys, "--days", "30", "--base", str(folder / "base.yaml"))
        assert code == 0
        documents.append(document)

    one, two = documents
    assert len(one["clusters"]) >= POOL_FROM
    assert one == two
    assert {c["series"][-1]["count"] for c in one["clusters"]} != {0}


def test_html_writes_the_page_beside_the_text(
    small: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """--html PATH writes the page whole (no partial file left) with the fleet's and the
    cluster's charts, and the terminal text is printed as without it."""
    page = small.folder / "out" / "forecast.html"
    page.parent.mkdir()

    code = small.main("forecast", "--days", "30", "--html", str(page))

    assert code == 0
    assert capsys.readouterr().out.startswith("Forecast from 2026-11-21 12:00 UTC")
    html = page.read_text()
    assert html.count("<polyline") == 4  # fleet and cluster: count and storage, one side
    assert "six-hourly" in html.replace("<wbr>", "")
    assert "steady from 2026-11-22" in html
    assert sorted(p.name for p in page.parent.iterdir()) == ["forecast.html"]
    assert small.sim.admin("patches") == {"patches": []}


def test_html_to_a_path_that_cannot_be_written_is_exit_2(
    small: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """--html into a folder that does not exist: exit 2, a message naming --html and the
    path, no traceback."""
    page = small.folder / "missing" / "forecast.html"

    code = small.main("forecast", "--days", "3", "--html", str(page))

    err = capsys.readouterr().err
    assert code == 2
    assert f"--html {page}: cannot write" in err
    assert "Traceback" not in err
    assert not page.parent.exists()
