"""What the real service sends, end to end: discovery of sharded deployments by typeName,
restic's 9999y keep-within through the command line, and real vendor bodies
(tests/fixtures/real, sources in its SOURCES.md) parsed and replayed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retention import cli
from retention.plan.planfile import read_list
from retention.simulator.server import Simulator, SimulatorConfig
from retention.timestamps import LATEST
from tests.conftest import PUBLIC_KEY
from tests.simfleet import KEY, P, small_fleet

FIXTURES = Path(__file__).parent / "fixtures" / "real"


@pytest.fixture
def now() -> datetime:
    """The wall clock, to the second (the simulator is frozen at it)."""
    return datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def sim(now: datetime) -> Iterator[Simulator]:
    """The small test fleet on a simulator frozen at the wall clock."""
    config = SimulatorConfig(public_key=PUBLIC_KEY, private_key=KEY, now=now, frozen=True)
    with Simulator(config, fleet_factory=lambda _now: small_fleet(now)) as simulator:
        yield simulator


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's working folder (the current directory), keys in the environment."""
    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def configure(folder: Path, base_url: str, policy: str) -> None:
    """retention.yaml for the small fleet's project and one policy."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text(policy)
    (folder / "retention.yaml").write_text(
        f"api:\n  base_url: {base_url}\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nschedule: "0 3 * * *"\n'
    )


def test_restic_9999y_keep_within_plans_and_applies_through_the_cli(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """within_yearly: 9999y (one of restic's own vectors) used to crash plan with an
    OverflowError; its horizon now stops at the latest representable time, which keeps."""
    configure(folder, sim.base_url, "name: forever\nkeep:\n  within_yearly: 9999y\n")

    planned = cli.main(["plan", "--out", "plan.json"])
    applied = cli.main(["apply", "plan.json"])

    out = capsys.readouterr()
    assert "internal error" not in out.err
    assert planned in (0, 3)
    assert applied in (0, 3)
    extends = [c for c in read_list(folder / "plan.json", "changes") if c["action"] == "extend"]
    assert extends
    assert {c["body"].get("expires") for c in extends} == {LATEST}
    written = {p["body"].get("expires") for p in sim.admin("patches")["patches"]}
    assert "9999-12-31T23:59:59Z" in written
