"""`retention simulator serve` as a user runs it: starts, prints what to use, answers digest
requests, stops on SIGTERM; bad arguments are exit 2 with a clear message."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests
from requests.auth import HTTPDigestAuth


def banner(proc: subprocess.Popen[str]) -> str:
    """What the simulator prints when it starts, up to its "Ctrl-C stops it." line."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C"):
            break
    return "".join(lines)


def test_serve_prints_url_and_keys_answers_and_stops(tmp_path: Path) -> None:
    """The command prints base URL, keys and a curl line, serves the demo fleet, stops cleanly."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "retention", "simulator", "serve", "--fleet", "demo",
         "--private-key", "cli-secret", "--seed", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    text = banner(proc)
    base_url = re.search(r"base URL:\s+(\S+)", text)
    curl = re.search(r"try: curl --digest -u sim-public-key:cli-secret '(\S+)'", text)
    assert base_url is not None
    assert curl is not None
    answer = requests.get(
        curl.group(1), auth=HTTPDigestAuth("sim-public-key", "cli-secret"), timeout=10
    )
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)

    cluster_id = curl.group(1).split("/clusters/")[1].split("/")[0]
    body = answer.json()
    assert answer.status_code == 200
    assert body["totalCount"] >= len(body["results"]) > 0
    assert {s["clusterId"] for s in body["results"]} == {cluster_id}
    assert "private key: cli-secret" in text
    assert "snapshots in all" in text
    assert proc.returncode == 0
    assert "simulator stopped" in out
    assert "Traceback" not in err


def serve_and_read_fleet(*args: str) -> tuple[str, dict[str, Any]]:
    """Start `retention simulator serve ARGS`, read what it prints and its admin fleet, stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "retention", "simulator", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        text = banner(proc)
        admin = re.search(r"admin:\s+(\S+)/counters", text)
        assert admin is not None, text
        fleet = requests.get(f"{admin.group(1)}/fleet", timeout=10).json()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            # Killed, not left for the next test to trip over.
            proc.kill()
            proc.communicate()
            raise
    assert proc.returncode == 0
    return text, fleet


def test_serve_twice_with_one_seed_serves_the_same_ids() -> None:
    """Two runs of `serve --seed 4`, started at different times, print and serve the same
    project ids, and the same cluster and host ids."""

    def ids(fleet: dict[str, Any]) -> list[tuple[str, list[str], list[str]]]:
        return [
            (p["id"], [c["id"] for c in p["clusters"]], [h["id"] for h in p["hosts"]])
            for p in fleet["projects"]
        ]

    text, fleet = serve_and_read_fleet("--fleet", "demo", "--seed", "4")
    time.sleep(1.1)  # the clock's second has changed: ids once began with it
    again, fleet_again = serve_and_read_fleet("--fleet", "demo", "--seed", "4")

    printed = re.findall(r"project ([0-9a-f]{24}) \(", text)
    assert len(printed) == 3
    assert re.findall(r"project ([0-9a-f]{24}) \(", again) == printed
    assert [p["id"] for p in fleet["projects"]] == printed
    assert ids(fleet_again) == ids(fleet)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `retention simulator serve ARGS` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "retention", "simulator", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bad_fault_spec_is_exit_2() -> None:
    """A malformed --faults is refused with exit 2 naming the option and the problem."""
    result = run("--faults", "503=3")

    assert result.returncode == 2
    assert "--faults" in result.stderr
    assert "between 0 and 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_fleet_file_is_exit_2(tmp_path: Path) -> None:
    """A --fleet that is no preset and no readable file is exit 2 with the path named."""
    missing = tmp_path / "nope.yaml"

    result = run("--fleet", str(missing))

    assert result.returncode == 2
    assert "nope.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_fleet_file_lists_every_problem(tmp_path: Path) -> None:
    """A fleet file with mistakes is exit 2, with each problem's field path."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "projects:\n  - name: p\n    clusters:\n      - name: c\n        colour: red\n"
        "        snapshots:\n          - created: yesterday\n"
    )

    result = run("--fleet", str(fleet))

    assert result.returncode == 2
    assert "fleet.yaml" in result.stderr
    assert "colour" in result.stderr
    assert "created" in result.stderr
