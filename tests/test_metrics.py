"""Run metrics for batch monitoring: the node-exporter textfile after a run, the last
success surviving a failed run, the shard label, and the Pushgateway."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from retention import cli
from retention.ops.metrics import RunMetrics, push, write_textfile
from retention.simulator.server import Simulator
from tests.support.client import PUBLIC_KEY
from tests.support.simfleet import KEY, P, running


def samples(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a textfile, by name and sorted labels."""
    out = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[Simulator]:
    """The small fleet, and its keys in the environment."""
    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
    with running() as simulator:
        yield simulator


def config(folder: Path, base_url: str) -> Path:
    """retention.yaml and a policy that changes things."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text(
        "name: p\nkeep: {last: 3, daily: 3}\nsafety: {max_expire_fraction: 1.0}\n"
    )
    path = folder / "retention.yaml"
    path.write_text(f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\n')
    return path


def test_run_writes_its_metrics(sim: Simulator, tmp_path: Path) -> None:
    """After a run the textfile holds the exit code, timestamps, counts and API requests."""
    metrics = tmp_path / "retention.prom"

    code = cli.main(
        [
            "--config",
            str(config(tmp_path, sim.base_url)),
            "run",
            "--quiet",
            "--metrics-file",
            str(metrics),
        ],
        clock=sim.clock.now,
    )

    got = samples(metrics)
    assert code == 0
    assert got[("retention_last_run_exit_code", ())] == 0
    assert got[("retention_snapshots_seen", ())] == 1234 + 5 + 2 + 3
    assert (
        got[("retention_last_success_timestamp_seconds", ())]
        == got[("retention_last_run_finish_timestamp_seconds", ())]
    )
    applied = got[("retention_outcomes", (("outcome", "applied"),))]
    sent = sum(
        v
        for (name, labels), v in got.items()
        if name == "retention_changes" and labels[0][1] not in ("held", "advisory")
    )
    assert applied == sent > 0
    assert got[("retention_changes", (("action", "advisory"),))] == 3
    assert got[("retention_api_requests", ())] > 3
    [plan] = (tmp_path / "reports").glob("*/plan.json")
    summary = json.loads(plan.read_text())["summary"]
    assert got[("retention_bytes_given_back", ())] == summary["bytesGivenBack"] > 0
    assert got[("retention_changes_approved", ())] == 0


def test_last_success_survives_a_failed_run(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed run (exit 5) records its exit code but keeps the previous success time."""
    metrics = tmp_path / "retention.prom"
    path = config(tmp_path, sim.base_url)
    cli.main(
        ["--config", str(path), "run", "--quiet", "--metrics-file", str(metrics)],
        clock=sim.clock.now,
    )
    success = samples(metrics)[("retention_last_success_timestamp_seconds", ())]
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "wrong")

    code = cli.main(
        ["--config", str(path), "run", "--quiet", "--metrics-file", str(metrics)],
        clock=sim.clock.now,
    )

    got = samples(metrics)
    assert code == 5
    assert got[("retention_last_run_exit_code", ())] == 5
    assert got[("retention_last_success_timestamp_seconds", ())] == success


def test_shard_label(tmp_path: Path) -> None:
    """A shard's metrics carry its label."""
    now = datetime(2026, 11, 21, tzinfo=UTC)
    write_textfile(tmp_path / "m.prom", RunMetrics(now, now + timedelta(seconds=5), 0, shard="1/4"))

    got = samples(tmp_path / "m.prom")

    assert got[("retention_last_run_duration_seconds", (("shard", "1/4"),))] == 5


def test_pushgateway_receives_the_metrics() -> None:
    """--pushgateway POSTs the metrics to /metrics/job/retention (with the shard grouping)."""
    received: list[tuple[str, str, bytes]] = []

    class Gateway(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.command, self.path, body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        now = datetime(2026, 11, 21, tzinfo=UTC)
        push(f"http://127.0.0.1:{server.server_address[1]}", RunMetrics(now, now, 3, shard="2/4"))
    finally:
        server.shutdown()
        server.server_close()

    [(method, path, body)] = received
    assert method == "POST"
    assert path == "/metrics/job/retention/shard/2-of-4"
    assert b"retention_last_run_exit_code" in body
    assert b"retention_last_success_timestamp_seconds" in body  # exit 3 counts as success


def test_a_policy_that_matches_nothing_is_a_warning_in_the_plan_summary_and_metrics(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A glob that misses ("production-*" for "prod-*") leaves the clusters unmanaged: the
    plan names the unused policy, the summary warns about it and the unmanaged clusters,
    and the metrics count both."""
    path = config(tmp_path, sim.base_url)
    (tmp_path / "policies" / "p.yaml").write_text(
        "name: production\nmatch: {clusters: ['production-*']}\nkeep: {last: 3}\n"
    )
    metrics = tmp_path / "retention.prom"

    code = cli.main(
        ["--config", str(path), "run", "--dry-run", "--metrics-file", str(metrics)],
        clock=sim.clock.now,
    )

    out = capsys.readouterr().out
    got = samples(metrics)
    [plan] = (tmp_path / "reports").glob("*/plan.json")
    document = json.loads(plan.read_text())
    assert code == 0
    assert document["unusedPolicies"] == ["production"]
    assert document["summary"]["clustersUnmanaged"] == 4  # 3 clusters, 1 config server
    assert "warning policy 'production' matches no cluster or config server" in out
    assert "warning 4 unmanaged (no policy matches, never changed): " in out
    assert got[("retention_policies_unused", ())] == 1
    assert got[("retention_clusters_unmanaged", ())] == 4


def test_an_internal_error_still_writes_exit_code_1(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that dies of a bug writes exit code 1, so the gauge does not keep showing the
    previous run's success."""
    metrics = tmp_path / "retention.prom"
    path = config(tmp_path, sim.base_url)
    cli.main(
        ["--config", str(path), "run", "--quiet", "--metrics-file", str(metrics)],
        clock=sim.clock.now,
    )

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("retention.library.changing.run_job", broken)
    code = cli.main(
        ["--config", str(path), "run", "--quiet", "--metrics-file", str(metrics)],
        clock=sim.clock.now,
    )

    assert code == 1
    assert samples(metrics)[("retention_last_run_exit_code", ())] == 1
