"""How fast list pages parse: the walk's msgspec decoder (the fields a plan reads, what
`retention plan` uses), pydantic's TypeAdapter.validate_json of the full model on the raw
bytes, and json.loads followed by model construction. Prints a table and writes
benchmarks/results/parse.json.

    make bench            # or: .venv/bin/python benchmarks/parse.py
"""

from __future__ import annotations

import json
import platform
import timeit
from pathlib import Path
from typing import Any

from machine import describe

from retention.api.models import SNAPSHOT_PAGE, ListPage, Snapshot
from retention.api.walked import WALK_DECODER

ITEMS_PER_PAGE = 500
REPEAT = 5


def part(i: int, rs: str) -> dict[str, Any]:
    """A realistic snapshot part."""
    return {
        "clusterId": f"5e4e593f70dfbf1e2f6e{i:04d}",
        "completedTime": "2026-11-01T06:04:11Z",
        "compressionSetting": "GZIP",
        "dataSizeBytes": 123456789 + i,
        "encryptionEnabled": False,
        "fcv": "7.0",
        "fileSizeBytes": 223456789,
        "machineId": f"{rs}-1.example.com:27017",
        "mongodVersion": "7.0.12",
        "replicaSetName": rs,
        "replicaState": "SECONDARY",
        "storageSizeBytes": 98765432,
        "typeName": "REPLICA_SET",
    }


def snapshot(i: int, sharded: bool) -> dict[str, Any]:
    """A cluster snapshot as the API sends it (three parts and shard fields when sharded)."""
    day, hour = divmod(i * 6, 24)
    body: dict[str, Any] = {
        "id": f"5e4e593f70dfbf1e2f{i:06d}",
        "groupId": "5e2211c17a3e5a48f5497de3",
        "clusterId": "5e4e593f70dfbf1e2f6e1d30",
        "clusterName": "prod-cluster",
        "complete": True,
        "created": {
            "date": f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{hour:02d}:00:00Z",
            "increment": 1,
        },
        "doNotDelete": False,
        "expires": "2027-01-01T00:00:00Z",
        "lastOplogAppliedTimestamp": {"date": "2026-11-01T05:59:58Z", "increment": 4},
        "links": [{"href": f"https://om.example/api/public/v1.0/x/{i}", "rel": "self"}],
        "namespaceFilterList": {"filterList": [], "filterType": "denylist"},
        "parts": [part(i, f"rs{n}") for n in range(3 if sharded else 1)],
    }
    if sharded:
        body["isPossiblyInconsistent"] = False
        body["missingShards"] = []
    return body


def page(sharded: bool) -> bytes:
    """One full list page of 500 snapshots, as raw bytes."""
    items = [snapshot(i, sharded) for i in range(ITEMS_PER_PAGE)]
    return json.dumps({"results": items, "links": [], "totalCount": 10_000}).encode()


def via_loads(raw: bytes) -> ListPage[Snapshot]:
    """The slower path: the json module, then pydantic on Python objects."""
    return SNAPSHOT_PAGE.validate_python(json.loads(raw))


def via_loads_per_item(raw: bytes) -> list[Snapshot]:
    """The naive path: json.loads, then one model_validate per item."""
    return [Snapshot.model_validate(item) for item in json.loads(raw)["results"]]


def best(fn: Any, raw: bytes, number: int) -> float:
    """Best seconds per call over REPEAT rounds of ``number`` calls."""
    return min(timeit.repeat(lambda: fn(raw), number=number, repeat=REPEAT)) / number


def main() -> None:
    """Measure both page shapes and print a table."""
    results: dict[str, Any] = {
        "machine": describe(platform.system()),
        "items_per_page": ITEMS_PER_PAGE,
        "cases": [],
    }
    print(
        f"{'page':<22}{'KB':>7}{'walk (msgspec)':>16}{'validate_json':>16}{'loads+adapter':>16}"
        f"{'loads+per-item':>16}"
    )
    for label, sharded in (("replica set (1 part)", False), ("sharded (3 parts)", True)):
        raw = page(sharded)
        assert SNAPSHOT_PAGE.validate_json(raw) == via_loads(raw)
        walked = WALK_DECODER.validate_json(raw).results
        assert [w.id for w in walked] == [s.id for s in via_loads(raw).results]
        walk = best(WALK_DECODER.validate_json, raw, 20)
        fast = best(SNAPSHOT_PAGE.validate_json, raw, 20)
        loads = best(via_loads, raw, 20)
        per_item = best(via_loads_per_item, raw, 20)
        results["cases"].append(
            {
                "page": label,
                "bytes": len(raw),
                "walk_decoder_ms": round(walk * 1000, 2),
                "validate_json_ms": round(fast * 1000, 2),
                "loads_then_adapter_ms": round(loads * 1000, 2),
                "loads_then_model_per_item_ms": round(per_item * 1000, 2),
                "snapshots_per_second_validate_json": round(ITEMS_PER_PAGE / fast),
                "speedup_vs_loads_per_item": round(per_item / fast, 2),
                "snapshots_per_second_walk_decoder": round(ITEMS_PER_PAGE / walk),
            }
        )
        print(
            f"{label:<22}{len(raw) // 1024:>7}{walk * 1000:>13.2f} ms{fast * 1000:>13.2f} ms"
            f"{loads * 1000:>13.2f} ms{per_item * 1000:>13.2f} ms   (walk: "
            f"{ITEMS_PER_PAGE / walk:,.0f} snapshots/s)"
        )
    out = Path(__file__).parent / "results" / "parse.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"machine: {results['machine']}; written to {out}")


if __name__ == "__main__":
    main()
