"""A protect rule moves on to each newer snapshot as it is taken (``yearly: 1`` protects the
newest of the year, so every day another one), and with release_protection off the snapshot
it leaves keeps its doNotDelete for good: validate warns with the file and line, and a
forecast shows the trail it leaves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retention.config.policyfiles import load_policies
from retention.core.cadence import Cadence, NewExpiry
from retention.core.forecast import forecast_cluster
from retention.core.model import SnapshotView, Target
from retention.core.policy.loader import protect_trail_warnings
from retention.core.policy.spec import KeepSpec
from tests.support.planning import loaded_policy, validate_file

POLICIES = """\
- name: moving
  keep:
    last: 3
  protect:
    yearly: 1
- name: released
  keep:
    last: 3
  protect:
    yearly: 1
  release_protection: true
- name: by-id
  keep:
    last: 3
  protect:
    ids: [s0]
- name: two
  keep:
    last: 3
  protect:
    daily: 2
    within: 3d
"""

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
D = timedelta(days=1)
TARGET = Target("5e2211c17a3e5a48f5497de3", "5e4e593f70dfbf1e2f6e1d30", "trail")


def test_moving_protect_rules_without_release_are_warned_about(tmp_path: Path) -> None:
    """The policies whose protect rules move while release_protection is false are named
    at their protect line, each rule named; ids alone and a release do not warn."""
    path = tmp_path / "p.yaml"
    path.write_text(POLICIES)

    warnings = protect_trail_warnings(load_policies(path))

    assert [w.split(": protect: ")[0] for w in warnings] == [f"{path}:4", f"{path}:20"]
    assert "protect: yearly moves on to each newer snapshot" in warnings[0]
    assert "protect: daily and within move on" in warnings[1]
    assert all("release_protection: true" in w and "by ids" in w for w in warnings)


def test_validate_prints_the_warning_and_exits_0(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate says it on stderr and in its JSON document's warnings, and the exit code
    stays 0: the policy is valid, only costly."""
    code, err, json_code, document = validate_file(folder, POLICIES, capsys)

    where = f"{Path('policies') / 'p.yaml'}:4: protect: yearly moves on"
    assert (code, json_code) == (0, 0)
    assert f"warning: {where}" in err
    assert len([w for w in document["warnings"] if "moves on" in w or "move on" in w]) == 2


def counts(days: int, *, release_protection: bool) -> list[int]:
    """A snapshot a day (s0 today, s1 and s2 before, each expiring 2 days after it is
    taken) under keep last 3 and protect yearly 1, run forward ``days`` days with a lease
    of a day and a grace of 24 hours: the snapshots on the service after each step."""
    snapshots = [
        SnapshotView(f"s{i}", NOW - D * i, True, False, NOW - D * i + 2 * D, True, None)
        for i in range(3)
    ]
    policy = loaded_policy(
        "moving",
        KeepSpec(last=3),
        KeepSpec(yearly=1),
        release_protection=release_protection,
        max_expire_fraction=1.0,
    )
    cadence = Cadence("observed", D, NOW + D, expiry=NewExpiry(2 * D))
    result = forecast_cluster(
        TARGET, snapshots, [policy], cadence, start=NOW, steps=days, step=D, lease_for=D
    )
    return [step.count for step in result.steps]


def test_the_trail_the_warning_speaks_of() -> None:
    """s2 expires at once and s1 a day later (the lease kept it to there). Without
    release_protection every snapshot the yearly rule protected stays: from day 1 each day
    adds one (s0 and the ten taken: 11 after ten days). With it, the snapshot the rule
    leaves is released with the lease's expiry and the count settles at the three newest."""
    assert counts(10, release_protection=False) == [2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert counts(10, release_protection=True) == [2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3]
