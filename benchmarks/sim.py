"""bench-sim: how fast the simulator serves list pages. The `bench` fleet (2,000 clusters x
~300 snapshots) runs in its own process; 8 threads, each with its own keep-alive session and
digest auth, fetch every cluster's snapshot list at itemsPerPage=500 (no parsing).

    make bench-sim      # or: .venv/bin/python benchmarks/sim.py [--connections 8] [--rounds 2]

Writes benchmarks/results/sim.json. Goal: >= 200 pages of 500 snapshots per second.
"""

from __future__ import annotations

import argparse
import json
import platform
import threading
from pathlib import Path

import requests
from simproc import on_sessions, start_simulator

PRIVATE_KEY = "bench-secret"


def cluster_urls(base_url: str) -> list[str]:
    """Every snapshot-bearing cluster's list URL, from the admin fleet summary."""
    admin = base_url.split("/api/", maxsplit=1)[0] + "/__admin/fleet"
    fleet = requests.get(admin, timeout=60).json()
    return [
        f"{base_url}/groups/{p['id']}/clusters/{c['id']}/snapshots"
        for p in fleet["projects"]
        for c in p["clusters"]
        if c["snapshots"]
    ]


def fetch_all(urls: list[str], connections: int) -> tuple[float, int, int]:
    """Fetch every URL once over `connections` keep-alive sessions: (seconds, bytes, items)."""
    totals = {"bytes": 0, "items": 0}
    lock = threading.Lock()
    params: dict[str, str | int] = {"completed": "all", "itemsPerPage": 500, "pageNum": 1}

    def fetch(session: requests.Session, url: str) -> None:
        body = session.get(url, params=params, timeout=60).content
        items = body.count(b'"created":')
        with lock:
            totals["bytes"] += len(body)
            totals["items"] += items

    seconds = on_sessions(urls, fetch, concurrency=connections, private_key=PRIVATE_KEY)
    return seconds, totals["bytes"], totals["items"]


def main() -> None:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    proc, base_url = start_simulator("bench", PRIVATE_KEY)
    try:
        urls = cluster_urls(base_url)
        fetch_all(urls[:50], args.connections)  # warm up: connections and digest challenges
        rounds = [fetch_all(urls, args.connections) for _ in range(args.rounds)]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    seconds, size, items = min(rounds)
    result = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, 2 cores shared by simulator and load",
        "connections": args.connections,
        "pages": len(urls),
        "snapshots": items,
        "seconds": round(seconds, 3),
        "pages_per_second": round(len(urls) / seconds, 1),
        "snapshots_per_second": round(items / seconds),
        "pages_of_500_per_second": round(items / 500 / seconds, 1),
        "megabytes_per_second": round(size / seconds / 1e6, 1),
    }
    out = Path(__file__).parent / "results" / "sim.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"{'pages':>7}{'snapshots':>11}{'seconds':>9}{'pages/s':>9}{'500-pages/s':>13}{'MB/s':>7}"
    )
    print(
        f"{result['pages']:>7}{items:>11}{seconds:>9.2f}{result['pages_per_second']:>9}"
        f"{result['pages_of_500_per_second']:>13}{result['megabytes_per_second']:>7}"
    )
    print(f"machine: {result['machine']}; written to {out}")


if __name__ == "__main__":
    main()
