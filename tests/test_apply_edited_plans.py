"""Property: whatever a person or a bug does to a plan file between `plan` and `apply`, what
reaches the API keeps invariants 1, 2, 4 and 6 of tests/test_plan_invariants.py. Hypothesis
edits a real plan (past expiries, protect with expires, shortened kept snapshots, ids of
other clusters and of a config server, duplicated changes, releases no policy allowed,
snapshots that moved on after the plan), apply runs it against the simulator, and the
simulator's PATCH log is checked: either apply refused the plan before any request, or every
PATCH it sent is safe."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from retention.api.client import OpsManagerClient
from retention.apply.applying import SavedPlan, apply_saved
from retention.apply.executor import Journal, apply_plan
from retention.config.policyfiles import load_policies
from retention.config.scope import ProjectTargets, Scope
from retention.core.guard import Asked, Trusted, index_of
from retention.core.planfile import CHANGE, DecisionRecord, PlanDocument
from retention.core.snapshot import SnapshotPatch
from retention.core.timestamps import parse_timestamp
from retention.errors import ApiError, PlanFileError
from retention.library.stages import Quiet
from retention.plan.planner import make_plan
from retention.runfolder.planread import open_plan, read_decisions
from retention.runfolder.planrecords import change_record
from retention.simulator.server import Simulator, SimulatorConfig
from retention.simulator.store import Fleet, SimCluster, SimHost, SimProject, SimSnapshot
from tests.support.client import PUBLIC_KEY
from tests.support.examples import examples
from tests.support.planfiles import decision_lines, write_plan_files
from tests.support.simfleet import KEY, client_for

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
GRACE = timedelta(hours=24)
P = "5e2211c17a3e5a48f5497de3"
A, B = "5e4e593f70dfbf1e2f6e1d50", "5e4e593f70dfbf1e2f6e1d51"
CFG = "5e4e593f70dfbf1e2f6e1d52"
POLICY = """\
name: gfs
keep: {last: 3, daily: 4}
protect: {monthly: 1}
safety: {min_keep: 2, max_expire_fraction: 1.0}
"""


def fleet(now: datetime = NOW) -> Fleet:
    """Two replica sets with snapshots in every state, and a legacy config server."""
    project = SimProject(P, "edits")
    for cid, name in ((A, "prod-a"), (B, "prod-b")):
        cluster = SimCluster(cid, P, name)
        for i in range(14):
            created = now - timedelta(hours=11 * i + 2)
            expires: datetime | None = created + timedelta(days=(3, 40, 400)[i % 3])
            if i % 5 == 4:
                expires = None
            cluster.add(
                SimSnapshot(
                    f"{name}-{i:02d}",
                    created,
                    complete=i != 0,
                    do_not_delete=i == 6,
                    expires=None if i == 6 else expires,
                )
            )
        project.clusters[cid] = cluster
    cfg = SimHost(CFG, P, "cfg0.legacy.example.net")
    for i in range(3):
        cfg.add(SimSnapshot(f"cfg-{i}", now - timedelta(days=i + 1), expires=now + timedelta(2)))
    project.hosts = {CFG: cfg}
    return Fleet({P: project})


class Planned:
    """The simulator and one real plan of its fleet, made at NOW: its head and its decision
    records, which the examples edit."""

    def __init__(self, sim: Simulator, folder: Path) -> None:
        self.sim = sim
        (folder / "gfs.yaml").write_text(POLICY)
        with client_for(sim) as api:
            scope = Scope(
                load_policies(folder / "gfs.yaml"), [ProjectTargets(P)],
                schedule="0 3 * * *", concurrency=2,
            )  # fmt: skip
            made = make_plan(api, scope, plan_path=folder / "plan.json", now=NOW)
        plan = open_plan(made.plan.path)
        # The head with its cluster entries: what write_plan_files writes back.
        self.head: PlanDocument = {**plan.head, "clusters": list(plan.read_clusters())}
        decisions = [d for d in read_decisions(made.plan.decisions) if d is not None]
        self.records: list[DecisionRecord] = decisions
        # The records written back unedited are the plan's decisions, byte for byte: an
        # edited plan differs from the real one by its edits alone.
        same = write_plan_files(folder / "same.json", self.head, decisions)
        assert decision_lines(same) == decision_lines(made.plan.path)
        assert any(is_change(d) for d in decisions)
        self.kept = {
            d["snapshotId"] for d in decisions if d["state"] in ("kept", "protected", "manual-hold")
        }
        # Kept snapshots the plan leaves alone, expiring far enough ahead to be shortened
        # by an entry the checks cannot tell from an extend.
        self.far = [
            d for d in decisions if d["state"] == "kept" and d["action"] == "none"
            and (d["observed"]["expires"] or NOW) > NOW + timedelta(days=5)
        ]  # fmt: skip
        self.held = [d for d in decisions if d["state"] == "manual-hold"]


def is_change(record: DecisionRecord) -> bool:
    """Whether a decision record is an entry of the plan's changes (what apply sends)."""
    patches = record["action"] != "none" and record["body"] is not None
    return patches and not record["advisory"] and not record["held"]


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planned]:
    """The simulator (frozen at NOW) and its plan, shared by every example."""
    config = SimulatorConfig(public_key=PUBLIC_KEY, private_key=KEY, now=NOW, frozen=True)
    with Simulator(config, fleet_factory=lambda _now: fleet()) as sim:
        yield Planned(sim, tmp_path_factory.mktemp("edits"))


EDITS = (
    "past-expiry",
    "protect-with-expires",
    "shorten-kept",
    "other-cluster",
    "config-server",
    "duplicate",
    "release",
    "dot-dot",
    "moved-on",
    "none",
)


def edit(kind: str, records: list[Any], n: int, planned: Planned, pick: int) -> None:
    """Edit ``records`` in place: the change of record ``n`` (or, for an added change, the
    record of a snapshot the plan left alone) as ``kind`` says; a duplicate adds a record."""
    c = records[n]
    if kind == "past-expiry" and "expires" in c["body"]:
        c["body"]["expires"] = NOW - timedelta(days=2)
    elif kind == "protect-with-expires":
        c["action"], c["body"] = "protect", {"doNotDelete": True, "expires": NOW + GRACE}
    elif kind == "shorten-kept" and planned.far:
        # A change made of a kept snapshot the plan leaves alone: an "extend" to a day
        # sooner than it has (still beyond the lease, so the entry checks pass).
        d = planned.far[pick % len(planned.far)]
        has = d["observed"]["expires"]
        assert has is not None
        for r in _records_of(records, d):
            r.update(action="extend", destructive=False, held=None, advisory=False)
            r["body"] = {"expires": has - timedelta(days=1)}
    elif kind == "other-cluster":
        c["clusterId"] = B if c["clusterId"] == A else A
    elif kind == "config-server":
        c["clusterId"] = CFG
    elif kind == "duplicate":
        records.insert(n + 1, copy.deepcopy(c))
    elif kind == "release" and planned.held:
        # A change made of a hold no policy of the cluster allows lifting.
        d = planned.held[pick % len(planned.held)]
        for r in _records_of(records, d):
            r.update(action="release", destructive=True, held=None, advisory=False)
            r["body"] = {"doNotDelete": False, "expires": NOW + GRACE}
    elif kind == "dot-dot":
        c["snapshotId"] = ".."


def _records_of(records: list[Any], decision: DecisionRecord) -> list[Any]:
    """The records of ``decision``'s snapshot still in ``records`` (an earlier edit may have
    moved it, or duplicated it)."""
    key = (decision["clusterId"], decision["snapshotId"])
    return [r for r in records if (r["clusterId"], r["snapshotId"]) == key]


def write(path: Path, head: PlanDocument, records: list[Any]) -> None:
    """A v2 plan of ``head`` and ``records`` in the planner's order (project, kind,
    cluster; a cluster's records in the order they came), its digest theirs."""
    ordered = sorted(records, key=lambda r: (r["projectId"], r["kind"], r["clusterId"]))
    write_plan_files(path, head, ordered)


def when(text: str) -> datetime:
    """A timestamp of the PATCH log."""
    return parse_timestamp(text)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_edit_of_a_plan_makes_apply_break_an_invariant(
    planned: Planned, tmp_path: Path, data: st.DataObject
) -> None:
    """Edited plans are refused whole or applied safely: no PATCH with doNotDelete and
    expires, none for an awaiting, incomplete or config-server snapshot, no expiry sooner
    than send time + grace, no kept snapshot shortened, no doNotDelete lifted."""
    sim = planned.sim
    sim.admin("reset", {})
    records: list[Any] = copy.deepcopy(planned.records)
    for kind in data.draw(st.lists(st.sampled_from(EDITS), max_size=4), label="edits"):
        changes = [i for i, r in enumerate(records) if is_change(r)]
        n = data.draw(st.sampled_from(changes), label=f"{kind} of")
        pick = data.draw(st.integers(0, 100), label="pick")
        if kind == "moved-on":
            # Someone set an expiry in the past on the snapshot after the plan was made.
            c = records[n]
            with client_for(sim) as api, suppress(ApiError):  # edited ids may not exist
                cluster = c["clusterId"]
                api.patch_snapshot(P, cluster, c["snapshotId"], SnapshotPatch.expire_at(NOW))
            continue
        edit(kind, records, n, planned, pick)
    before = len(sim.admin("patches")["patches"])
    plan = tmp_path / f"edited-{len(list(tmp_path.iterdir()))}.json"
    write(plan, planned.head, records)

    with client_for(sim) as api:
        refused = _apply(api, plan, tmp_path / "reports")
        sent = [p for p in sim.admin("patches")["patches"][before:] if p["kind"] == "snapshot"]
        event("refused whole" if refused else "applied" if sent else "nothing sent")
        if refused:
            assert sent == []
            # The entry checks are the first line; the check at send time must hold alone.
            _apply_unchecked(api, plan, planned.head, tmp_path / "unchecked.jsonl")
            sent = [p for p in sim.admin("patches")["patches"][before:] if p["kind"] == "snapshot"]
    counted: dict[str, int] = {}
    for patch in sent:
        body, old, new = patch["body"], patch["before"], patch["after"]
        sid = patch["snapshotId"]
        counted[sid] = counted.get(sid, 0) + 1
        assert not (body.get("doNotDelete") is True and "expires" in body)  # 1
        assert patch["complete"]  # 2
        assert patch["clusterId"] in (A, B)  # 2: never a config server's
        assert old["doNotDelete"] or not (old["expires"] and when(old["expires"]) <= NOW)  # 2
        if "expires" in body:
            assert when(body["expires"]) >= NOW + GRACE  # 4
        if sid in planned.kept and old["expires"] and new["expires"]:
            assert when(new["expires"]) >= when(old["expires"])  # 4: kept, never shortened
        assert not (old["doNotDelete"] and not new["doNotDelete"])  # 6: release_protection off
    assert all(n == 1 for n in counted.values())


def _apply_unchecked(api: OpsManagerClient, plan: Path, head: PlanDocument, journal: Path) -> None:
    """Send an edited plan's changes through the executor without the entry checks, as a
    bug in them would: only the check before each PATCH stands between them and the API.
    The changes are made from the plan's decision records as the reader makes them."""
    records = [orjson.loads(line) for line in decision_lines(plan)]
    raw = [change_record(r, r["grace"]) for r in records if is_change(r)]
    raw.sort(key=lambda c: (c["projectId"], c["clusterId"], c["snapshotId"]))
    # Entries the model accepts are typed as a reader would give them; the others go raw.
    changes: list[Any] = [_typed(c) for c in raw]
    out = Journal(journal, lambda: NOW)
    try:
        trusted = Trusted.made(head, index_of(head["clusters"]))
        apply_plan(api, changes, trusted, out, concurrency=2)
    finally:
        out.close()


def _typed(raw: Any) -> Any:
    try:
        return CHANGE.validate_python(raw)
    except ValidationError:
        return raw


def _apply(api: OpsManagerClient, plan: Path, reports: Path) -> bool:
    """Apply ``plan``; True when apply refused it before sending anything."""
    try:
        apply_saved(
            api, SavedPlan(plan, Asked(timedelta(hours=1))), reports=reports, concurrency=2,
            clock=lambda: NOW, listener=Quiet(),
        )  # fmt: skip
    except PlanFileError:
        return True
    return False
