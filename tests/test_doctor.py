"""retention doctor against the simulator: every check passing, refused keys (exit 5),
a skewed clock (warning, then failure), a closed port (exit 5), and bad configuration."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from retention import cli
from retention.ledger.database import HEAD_REVISION
from retention.simulator.server import Simulator, SimulatorConfig
from tests.support.client import PUBLIC_KEY
from tests.support.simfleet import KEY, NOW, P, clock_at, small_fleet
from tests.support.wire_server import closed_port


@contextmanager
def live(
    skew: timedelta = timedelta(0), header: str = "X-MongoDB-Service-Version"
) -> Iterator[Simulator]:
    """The small fleet on a simulator frozen at NOW + ``skew``, naming its version in
    ``header`` (the product's clock is at NOW: doctor())."""
    config = SimulatorConfig(
        public_key=PUBLIC_KEY,
        private_key=KEY,
        now=NOW + skew,
        frozen=True,
        version_header=header,
    )
    with Simulator(config, fleet_factory=small_fleet) as sim:
        yield sim


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's keys in the environment."""
    for name in ("RETENTION_CONFIG", "RETENTION_BASE_URL", "RETENTION_PRIVATE_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RETENTION_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", KEY)


def config_for(folder: Path, base_url: str) -> Path:
    """retention.yaml for one project, and one policy."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "p.yaml").write_text("name: p\nkeep: {last: 3}\n")
    path = folder / "retention.yaml"
    path.write_text(f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\n')
    return path


def doctor(config: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run retention doctor with the product's clock at NOW; return its exit code and output."""
    code = cli.main(["--config", str(config), "doctor", *args], clock=clock_at(NOW))
    return code, capsys.readouterr().out


def test_every_check_passes_against_the_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a healthy API every check passes (plain HTTP only warns) and doctor exits 0."""
    with live() as sim:
        code, out = doctor(config_for(tmp_path, sim.base_url), capsys)

    assert code == 0
    for name in (
        "configuration",
        "policies",
        "reachable",
        "credentials",
        "service version",
        "clock",
        "reports",
        "backups",
        "ledger",
    ):
        assert f"ok    {name}:" in out
    assert (
        f"ok    ledger: sqlite:///{tmp_path}/reports/ledger.db: schema {HEAD_REVISION}, 0 runs"
        in out
    )
    assert "WARN  tls: plain HTTP" in out
    assert f"ok    project {P}: agents: backup agents link present" in out
    assert f"ok    project {P}: discovery: 3 clusters, 1 legacy config server" in out
    assert f"ok    project {P}: snapshots: one page of prod-big read" in out
    assert "ok    coverage: a policy matches each of 4 targets" in out
    assert "0 failed, 1 warning." in out


def test_a_policy_that_matches_nothing_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A glob that misses (production-* for prod-*) passes validation but not unnoticed:
    doctor warns about the glob with the real names closest to it, about the policy, and
    lists the clusters no policy manages."""
    with live() as sim:
        config = config_for(tmp_path, sim.base_url)
        (tmp_path / "policies" / "p.yaml").write_text(
            "name: production\nmatch: {clusters: ['production-*']}\nkeep: {last: 3}\n"
        )
        code, out = doctor(config, capsys)

    assert code == 0  # warnings: the job can run, it just manages less than meant
    policy = tmp_path / "policies" / "p.yaml"
    assert (
        f"WARN  policies: policy 'production' ({policy}) matches no cluster or config server"
    ) in out
    assert (
        f"WARN  policies: {policy}:2: match.clusters[0]: 'production-*' matches none of the "
        "4 clusters and config servers discovery found; the closest: "
    ) in out
    remedy = "-> check its match: projects, cluster globs, kinds (retention clusters lists them)"
    assert remedy in out
    assert "WARN  coverage: 4 unmanaged (no policy matches, never changed): prod-big" in out


def test_wrong_key_fails_at_credentials_with_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused key: the credentials check fails, says what to do, and doctor exits 5."""
    monkeypatch.setenv("RETENTION_PRIVATE_KEY", "not-the-key-at-all")
    with live() as sim:
        code, out = doctor(config_for(tmp_path, sim.base_url), capsys)

    assert code == 5
    assert "FAIL  credentials:" in out
    assert "-> check RETENTION_PUBLIC_KEY and the private key" in out
    assert "not-the-key-at-all" not in out


@pytest.mark.parametrize(
    ("skew", "status", "code"),
    [(timedelta(minutes=5), "WARN", 0), (timedelta(minutes=20), "FAIL", 1)],
)
def test_clock_skew_warns_then_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], skew: timedelta, status: str, code: int
) -> None:
    """5 minutes of skew warns, 20 minutes fails (expiries depend on the clock)."""
    with live(skew) as sim:
        got, out = doctor(config_for(tmp_path, sim.base_url), capsys)

    assert got == code
    line = next(line for line in out.splitlines() if "  clock:" in line)
    assert line.startswith(f"{status}  clock: this host is")
    assert "behind the API's clock" in line
    assert "-> run NTP" in out


@pytest.mark.usefixtures("instant_retries")
def test_closed_port_fails_at_reachable_with_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listening: reachable fails with a remedy and doctor exits 5."""
    code, out = doctor(
        config_for(tmp_path, f"http://127.0.0.1:{closed_port()}/api/public/v1.0"), capsys
    )

    assert code == 5
    assert "FAIL  reachable:" in out
    assert "-> check api.base_url" in out


def test_bad_configuration_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A configuration problem fails the first check and exits 2 without contacting anyone."""
    path = tmp_path / "retention.yaml"
    path.write_text(
        "api:\n  base_url: http://127.0.0.1:9/api/public/v1.0\n  colour: red\ntargets: []\n"
    )

    code, out = doctor(path, capsys)

    assert code == 2
    assert "FAIL  configuration:" in out
    assert "api.colour: unknown field" in out


def test_json_format_for_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints the exit code and every check as a JSON document."""
    with live() as sim:
        code, out = doctor(config_for(tmp_path, sim.base_url), capsys, "--format", "json")

    document = json.loads(out)
    assert code == document["exitCode"] == 0
    assert {c["status"] for c in document["checks"]} == {"pass", "warn"}
    assert set(document["checks"][0]) == {"name", "status", "detail", "remedy"}


@pytest.mark.parametrize("header", ["X-MongoDB-Service-Version", "X-Server-Service-Version"])
def test_doctor_and_the_plan_show_the_version_from_either_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str
) -> None:
    """The real service's header and the API document's spelling both give the version, in
    doctor's check and in plan.json; neither is taken for a proxy."""
    with live(header=header) as sim:
        config = config_for(tmp_path, sim.base_url)
        code, out = doctor(config, capsys, "--format", "json")
        planned = cli.main(
            ["--config", str(config), "plan", "--out", str(tmp_path / "p.json")],
            clock=sim.clock.now,
        )

    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0
    assert planned == 3  # prod-big's shortens are held by the default max_expire_fraction
    assert checks["service version"]["status"] == "pass"
    assert checks["service version"]["detail"].startswith("gitHash=")
    plan = json.loads((tmp_path / "p.json").read_text())
    assert plan["serviceVersion"] == checks["service version"]["detail"]


def test_an_unwritable_reports_folder_fails_doctor_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reports.dir that cannot be created fails the reports check, with the fix, exit 2,
    before any request."""
    with live() as sim:
        config = config_for(tmp_path, sim.base_url)
        (tmp_path / "blocker").write_text("")
        config.write_text(config.read_text() + "reports:\n  dir: blocker/reports\n")
        code, out = doctor(config, capsys)
        requests = sim.admin("counters")["requests"]

    assert code == 2
    blocker = tmp_path / "blocker"
    assert f"FAIL  reports: cannot create {blocker / 'reports'}: {blocker} is not a folder" in out
    assert "mount a volume there" in out
    assert requests == 0


def test_https_to_the_plain_http_simulator_is_one_diagnosis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """https:// in api.base_url to a port that speaks plain HTTP fails reachable once, with
    one remedy (use http:// in api.base_url of that file), and no word of a CA bundle."""
    with live() as sim:
        config = config_for(tmp_path, sim.base_url.replace("http://", "https://"))
        code, out = doctor(config, capsys)
        _, text = doctor(config, capsys, "--format", "json")

    [reachable] = [c for c in json.loads(text)["checks"] if c["name"] == "reachable"]
    assert code == 5
    assert "ca_bundle" not in out
    assert reachable["status"] == "fail"
    assert reachable["detail"].endswith("does not answer TLS (wrong version number)")
    assert reachable["remedy"] == (
        f"if it serves plain HTTP, use http:// in api.base_url of {config}; otherwise check "
        "the port"
    )
    assert f"      -> {reachable['remedy']}" in out.splitlines()


@pytest.mark.usefixtures("instant_retries")
def test_a_wrong_port_from_retention_base_url_names_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """retention.yaml names the simulator, RETENTION_BASE_URL a closed port: reachable fails
    and its remedy says the variable is set and overrides api.base_url, where the file's
    setting would be blamed in vain."""
    with live() as sim:
        config = config_for(tmp_path, sim.base_url)
        url = f"http://127.0.0.1:{closed_port()}/api/public/v1.0"
        monkeypatch.setenv("RETENTION_BASE_URL", url)
        code, text = doctor(config, capsys, "--format", "json")

    [reachable] = [c for c in json.loads(text)["checks"] if c["name"] == "reachable"]
    assert code == 5
    assert reachable["remedy"] == (
        "check RETENTION_BASE_URL, set in the environment where it overrides api.base_url "
        "(and DNS, proxies and firewalls)"
    )
    assert "check api.base_url" not in reachable["detail"]


def test_a_ledger_that_cannot_be_reached_fails_and_one_turned_off_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL ledger that does not answer is a failed check naming it (never its
    password); ledger.enabled: false is a warning."""
    with live() as sim:
        config = config_for(tmp_path, sim.base_url)
        monkeypatch.setenv("RETENTION_LEDGER_URL", "postgresql://retention@127.0.0.1:9/ledger")
        monkeypatch.setenv("RETENTION_LEDGER_PASSWORD", "s3cret-pw")
        failed, out = doctor(config, capsys)
        monkeypatch.delenv("RETENTION_LEDGER_URL")
        monkeypatch.delenv("RETENTION_LEDGER_PASSWORD")
        config.write_text(config.read_text() + "ledger:\n  enabled: false\n")
        warned, off = doctor(config, capsys)

    assert failed == 1
    assert "FAIL  ledger: ledger postgresql://retention@127.0.0.1:9/ledger:" in out
    assert "s3cret-pw" not in out
    assert warned == 0
    assert "WARN  ledger: ledger.enabled is false" in off
