"""The chaos suite: the whole job against a simulator that misbehaves, judged by its end
state and by the simulator's PATCH log.

Each scenario plans and applies (at most two runs) against a fleet served with 10% 503s,
5% 429s, 2% connection resets, 1% slow answers, stale nonces and pages that drift while
they are read (during the first run: what the service creates after a run has planned is
the next run's work, so the second run settles a fleet that holds still), and checks:

- the end state equals what a fault-free run reaches from the same fleet and time;
- no PATCH in the log breaks an invariant: doNotDelete true with expires (1); a change to a
  snapshot that was incomplete or already expired (2); an expiry written earlier than
  now + grace (4); a hold lifted by a policy without release_protection (6); and no
  snapshot shortened by two different decisions. (The same PATCH sent again by a
  transport retry after a timeout is counted apart: it sets the same absolute value.)
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from retention.api.client import OpsManagerClient
from retention.api.transport import RetryPolicy
from retention.api.values import Credentials, Timeouts
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.timestamps import parse_timestamp
from retention.library.changing import run_job
from retention.simulator.server import Simulator, SimulatorConfig

FAULTS = "503=0.1,429=0.05,reset=0.02,slow=0.01,stale=0.05,retry_after=0,slow_ms=300"
# Drift creates and reaps snapshots, so a drifting fleet cannot equal the clean run's end
# state: odd seeds drift hard and are judged by their fixed point (a fresh plan sends
# nothing) and the PATCH log; even seeds must also equal the clean run exactly.
# A snapshot the service creates after a run has planned is the next run's work, so drift
# strikes during the first run only; the second run, under every other fault, must settle.
DRIFT_FAULTS = FAULTS + ",drift=0.3"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
GRACE = timedelta(hours=24)
FLEET = """\
projects:
  - id: "5e2211c17a3e5a48f5497de3"
    name: chaos
    clusters:
      - {name: prod-a, generate: {six_hourly_days: 140}}  # two pages: drift can strike
      - {name: prod-b, generate: {six_hourly_days: 25}}
      - {name: prod-c, type: SHARDED_REPLICA_SET, generate: {six_hourly_days: 30}}
"""
POLICY = """\
name: chaos
keep: {last: 3, daily: 7, weekly: 3}
protect: {monthly: 1}
grace: 24h
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""
KEY = "chaos-secret"
PATIENT = RetryPolicy(retries=10, backoff_factor=0.0, jitter=0.0, max_total_seconds=60)


@dataclass
class Scenario:
    """One chaos scenario's outcome."""

    seed: int
    drift: bool
    runs: int
    converged: bool
    faults: dict[str, int]
    violations: list[str] = field(default_factory=list)
    retransmitted: int = 0


def _simulator(folder: Path, seed: int, faults: str | None) -> Simulator:
    config = SimulatorConfig(
        fleet=str(folder / "fleet.yaml"), seed=seed, now=NOW, frozen=True, faults=faults,
        public_key="chaos", private_key=KEY,
    )  # fmt: skip
    return Simulator(config)


def _state(client: OpsManagerClient, project: str, clusters: list[str]) -> dict[str, Any]:
    return {
        s.id: (s.do_not_delete, s.expires)
        for cid in clusters
        for s in client.list_snapshots(project, cid)
    }


def _job(
    sim: Simulator, folder: Path, *, runs: int, settle: str | None = None
) -> tuple[dict[str, Any], int, dict[str, int]]:
    """Run the job until a run ends clean (at most ``runs`` runs); with ``settle``, the
    fleet keeps moving through the first run, and a second one always follows under the
    ``settle`` faults (the fleet holding still)."""
    credentials = Credentials("chaos", SecretStr(KEY))
    timeouts = Timeouts(connect=2, read=0.25)  # slow answers time out and are retried
    with OpsManagerClient(
        sim.base_url, credentials, retry=PATIENT, timeouts=timeouts, clock=sim.clock.now
    ) as client:
        fleet = sim.admin("fleet")["projects"][0]
        clusters = [c["id"] for c in fleet["clusters"] if c["snapshots"]]
        done = 0
        injected: Counter[str] = Counter()
        for attempt in range(1, runs + 1):
            done = attempt
            scope = Scope(
                load_policies(folder / "policies"), [ProjectTargets(fleet["id"])], concurrency=3
            )
            result = run_job(
                client, scope, reports=folder / "reports", dry_run=False, clock=lambda: NOW
            )  # fmt: skip
            if settle is not None and attempt == 1:
                injected.update(sim.admin("counters")["faultsInjected"])
                sim.admin("faults", {"spec": settle, "seed": sim.config.seed})  # counts anew
                continue
            if not result.failed:  # everything walked and every PATCH answered
                break
        injected.update(sim.admin("counters")["faultsInjected"])
        sim.admin("faults", {"spec": ""})  # judge the end state without faults
        scope = Scope(
            load_policies(folder / "policies"), [ProjectTargets(fleet["id"])], concurrency=3
        )
        check = run_job(
            client, scope, reports=folder / "reports", dry_run=True, clock=lambda: NOW
        )  # fmt: skip
        left = check.change_count
        injected["left_to_send"] = left
        return _state(client, fleet["id"], clusters), done, dict(injected)


def violations(log: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Invariant violations witnessed by the simulator's PATCH log, and how many PATCHes
    were the same body sent again (transport retries)."""
    found: list[str] = []
    shortened: dict[str, set[str]] = {}
    seen: Counter[tuple[str, str]] = Counter()
    for entry in log:
        if entry.get("kind") != "snapshot":
            continue
        sid, body, before = entry["snapshotId"], entry["body"] or {}, entry["before"]
        at = parse_timestamp(entry["at"])
        if body.get("doNotDelete") is True and "expires" in body:
            found.append(f"{sid}: invariant 1: doNotDelete true with expires")
        expired = before.get("expires") and parse_timestamp(before["expires"]) <= at
        if not entry.get("complete", True) or (expired and not before.get("doNotDelete")):
            found.append(f"{sid}: invariant 2: PATCH of an incomplete or expired snapshot")
        if "expires" in body and body["expires"] and parse_timestamp(body["expires"]) < at + GRACE:
            found.append(f"{sid}: invariant 4: expiry written before now + grace")
        if body.get("doNotDelete") is False and before.get("doNotDelete"):
            found.append(f"{sid}: invariant 6: hold lifted without release_protection")
        seen[(sid, json.dumps(body, sort_keys=True))] += 1
        new_expiry = body.get("expires")
        if entry["status"] == 200 and new_expiry and parse_timestamp(new_expiry) <= at + GRACE:
            shortened.setdefault(sid, set()).add(new_expiry)
    found += [
        f"{sid}: shortened by {len(v)} decisions" for sid, v in shortened.items() if len(v) > 1
    ]
    return found, sum(n - 1 for n in seen.values())


def run_chaos(scenarios: int, *, first_seed: int = 1) -> list[Scenario]:
    """Run the scenarios (seeds first_seed, first_seed+1, ...) and return their outcomes."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "fleet.yaml").write_text(FLEET)
        (folder / "policies").mkdir()
        (folder / "policies" / "chaos.yaml").write_text(POLICY)
        for seed in range(first_seed, first_seed + scenarios):
            with _simulator(folder, seed, None) as clean_sim:
                clean, _, _ = _job(clean_sim, folder, runs=1)
            drift = seed % 2 == 1
            with _simulator(folder, seed, DRIFT_FAULTS if drift else FAULTS) as sim:
                chaotic, runs, injected = _job(
                    sim, folder, runs=2, settle=FAULTS if drift else None
                )
                found, again = violations(sim.admin("patches")["patches"])
            settled = injected.pop("left_to_send") == 0
            converged = settled and (drift or chaotic == clean)
            results.append(Scenario(seed, drift, runs, converged, injected, found, again))
    return results
