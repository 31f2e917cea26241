"""Fault injection: under every fault kind our client ends with the same answers as without
faults, or (for drift) notices that the list changed under it."""

from __future__ import annotations

import time

import pytest

from retention.api.transport import RetryPolicy
from retention.api.values import Timeouts
from retention.core.snapshot import SnapshotPatch
from retention.errors import InconsistentListError
from retention.simulator.faults import FaultInjector, FaultSpec, FaultSpecError
from tests.support.simfleet import BIG, NOW, SMALL, P, client_for, running

PATIENT = RetryPolicy(retries=8, backoff_factor=0.0, jitter=0.0, max_total_seconds=60)


def workload(
    sim_options: dict[str, object], **client_options: object
) -> tuple[list[str], dict[str, int]]:
    """Walk two clusters, read and patch one snapshot; return what was seen and faults injected."""
    with running(**sim_options) as sim, client_for(sim, retry=PATIENT, **client_options) as api:
        seen = [s.id for s in api.list_snapshots(P, BIG)]
        seen += [s.id for s in api.list_snapshots(P, SMALL)]
        for _ in range(10):
            seen.append(api.get_snapshot(P, SMALL, "fresh").id)
        patched = api.patch_snapshot(
            P, SMALL, "noexpiry", SnapshotPatch.expire_at(NOW.replace(year=2027))
        )
        seen.append(f"{patched.id}:{patched.expires}")
        injected = sim.admin("counters")["faultsInjected"]
    return seen, injected


@pytest.fixture(scope="module")
def clean_run() -> list[str]:
    """The workload's answers without faults."""
    return workload({})[0]


@pytest.mark.parametrize(
    ("spec", "kind", "client_options"),
    [
        ("503=0.3", "503", {}),
        ("429=0.3,retry_after=0", "429", {}),
        ("reset=0.3", "reset", {}),
        ("slow=0.3,slow_ms=400", "slow", {"timeouts": Timeouts(connect=2, read=0.15)}),
        ("stale=0.3", "stale", {}),
    ],
)
def test_client_gets_correct_results_under_faults(
    clean_run: list[str], spec: str, kind: str, client_options: dict[str, object]
) -> None:
    """With a fault kind injected at 30%, the answers equal the fault-free run's."""
    seen, injected = workload({"faults": spec, "seed": 11}, **client_options)

    assert seen == clean_run
    assert injected.get(kind, 0) > 0


def test_drift_between_pages_is_detected() -> None:
    """A snapshot created or reaped between pages makes the walk raise InconsistentListError."""
    with running(faults="drift=1", seed=3) as sim, client_for(sim) as api:
        with pytest.raises(InconsistentListError, match="totalCount changed during the walk"):
            api.list_snapshots(P, BIG).collect()
        injected = sim.admin("counters")["faultsInjected"]

    assert injected["drift"] >= 1


def test_latency_is_added_to_every_answer() -> None:
    """--latency-ms delays answers: 5 calls at 60 ms take at least 0.3 s."""
    with running(latency_ms=60) as sim, client_for(sim) as api:
        api.get_agent_links(P)
        started = time.monotonic()
        for _ in range(5):
            api.get_agent_links(P)
        elapsed = time.monotonic() - started

    assert elapsed >= 0.3


def test_faults_can_be_changed_at_runtime() -> None:
    """POST /__admin/faults replaces the fault spec; an empty spec turns faults off."""
    with running() as sim:
        assert sim.admin("faults", {"spec": "503=0.5,reset=0.1"}) == {"faults": "503=0.5,reset=0.1"}
        assert sim.admin("faults", {"spec": ""}) == {"faults": "none"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("503", "not name=value"),
        ("503=2", "between 0 and 1"),
        ("503=lots", "not a number"),
        ("teapot=0.1", "unknown fault 'teapot'"),
        ("slow_ms=fast", "whole number"),
    ],
)
def test_bad_fault_specs_are_refused(text: str, message: str) -> None:
    """A malformed fault spec names what is wrong with it."""
    with pytest.raises(FaultSpecError, match=message):
        FaultSpec.parse(text)


def test_fault_draws_are_repeatable_for_a_seed() -> None:
    """The same seed draws the same faults in the same order."""
    spec = FaultSpec.parse("503=0.3,reset=0.2,slow=0.1")
    a, b, other = (FaultInjector(spec, seed=s) for s in (5, 5, 6))

    draws = [a.request_fault() for _ in range(200)]

    assert draws == [b.request_fault() for _ in range(200)]
    assert draws != [other.request_fault() for _ in range(200)]
    assert {"503", "reset", "slow", None} == set(draws)
