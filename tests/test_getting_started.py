"""Getting started and set-up mistakes: `retention init`, a missing configuration that
points to it, a schedule whose lease is too short, a reports folder that cannot be written
(exit 2 before any request, and in doctor), and apply given a run folder."""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retention import cli
from retention.cli.common import examples
from retention.config.scaffold import local_links
from retention.config.schedule import schedule_warnings
from retention.config.writable import unwritable
from retention.core.horizon import LEASE_MINIMUM
from retention.ops.clock import Clock, system_clock
from retention.simulator.server import Simulator
from tests.support.simfleet import P

ROOT = Path(__file__).resolve().parent.parent


def run(
    capsys: pytest.CaptureFixture[str], *args: str, clock: Clock = system_clock
) -> tuple[int, str, str]:
    """Run the CLI at ``clock``'s time; its exit code, stdout and stderr."""
    code = cli.main(list(args), clock=clock)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_init_writes_a_configuration_and_policies_that_validate(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """init DIR copies the commented example configuration and the three example policies,
    prints the next commands, and what it wrote validates as it is."""
    code, out, _ = run(capsys, "init", "start")

    assert code == 0
    assert (folder / "start" / "retention.yaml").read_bytes() == (
        ROOT / "retention.example.yaml"
    ).read_bytes()
    policies = sorted(p.name for p in (folder / "start" / "policies").glob("*.yaml"))
    assert policies == ["compliance.yaml", "dev.yaml", "production.yaml"]
    assert "retention --config start/retention.yaml validate" in out
    assert "retention --config start/retention.yaml doctor" in out
    assert "retention --config start/retention.yaml plan" in out
    assert "RETENTION_PUBLIC_KEY" in out
    code, out, _ = run(capsys, "--config", "start/retention.yaml", "validate")
    assert code == 0
    assert out.startswith("4 policies are valid:")


def relative_links(page: Path) -> list[str]:
    """The targets of the Markdown links of ``page`` that are neither URLs nor anchors."""
    targets = re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8"))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


def test_every_link_in_what_init_writes_resolves_inside_the_folder(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The files init writes link only to files it wrote too: a link to the repository's
    docs (../docs/policies.md) would be broken in the user's folder."""
    code, _, _ = run(capsys, "init", "start")

    start = (folder / "start").resolve()
    pages = sorted(start.rglob("*.md"))
    links = {(page, target) for page in pages for target in relative_links(page)}
    broken = [
        f"{page.relative_to(start)}: {target}"
        for page, target in links
        if not (page.parent / target.split("#")[0]).resolve().is_relative_to(start)
        or not (page.parent / target.split("#")[0]).exists()
    ]
    assert code == 0
    assert pages  # policies/README.md
    assert broken == []
    assert "docs/policies.md" in (start / "policies" / "README.md").read_text()


def test_links_to_written_files_stay_and_others_name_the_repository_page() -> None:
    """A link to a file init writes too, a URL and an anchor are kept; a link out of the
    folder becomes its label and the repository page it named."""
    text = (
        "[prod](production.yaml), [rules](../docs/policies.md#grace), [u](https://x.org), [a](#b)"
    )

    local = local_links(text, "policies/README.md", {"policies/production.yaml"})

    assert local == (
        "[prod](production.yaml), rules (docs/policies.md in the retention repository), "
        "[u](https://x.org), [a](#b)"
    )


def test_init_never_overwrites(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a retention.yaml already there, init writes nothing at all and exits 2."""
    (folder / "retention.yaml").write_text("mine\n")

    code, _, err = run(capsys, "init")

    assert code == 2
    assert "retention.yaml already exists: init never overwrites" in err
    assert (folder / "retention.yaml").read_text() == "mine\n"
    assert not (folder / "policies").exists()


def test_the_examples_travel_in_the_wheel() -> None:
    """The wheel carries retention.example.yaml and policies/ where examples() looks for
    them in an installed package, and in a checkout examples() finds both."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    included = build["targets"]["wheel"]["force-include"]

    assert included == {
        "policies": "retention/examples/policies",
        "retention.example.yaml": "retention/examples/retention.example.yaml",
    }
    assert (examples() / "retention.example.yaml").is_file()
    assert (examples() / "policies" / "production.yaml").is_file()


def test_a_missing_configuration_points_to_init(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without retention.yaml, a command says the file does not exist and how to get one."""
    code, _, err = run(capsys, "plan")

    assert code == 2
    assert f"{folder / 'retention.yaml'} does not exist (from default ./retention.yaml)" in err
    assert f"`retention init {folder}` writes a commented one to start from" in err


@pytest.mark.parametrize(
    ("schedule", "warned"),
    [("*/1 * * * *", True), ("*/30 * * * *", True), ("0 * * * *", False), ("0 3 * * *", False)],
)
def test_a_schedule_with_a_lease_under_an_hour_is_a_warning(schedule: str, warned: bool) -> None:
    """A schedule every minute or half hour with lease_minimum 0h leaves kept snapshots a
    lease under an hour: a warning says so and what to run instead; hourly and daily
    schedules are fine, and so is any schedule with the default lease_minimum."""
    now = datetime(2026, 11, 21, 12, 0, 30, tzinfo=UTC)
    warnings = schedule_warnings(schedule, now, timedelta(0))

    assert schedule_warnings(schedule, now, LEASE_MINIMUM) == []

    assert bool(warnings) is warned
    if warned:
        assert warnings[0].startswith(f"schedule {schedule!r} gives kept snapshots a lease of")
        assert "Run the job at most hourly" in warnings[0]


def test_validate_prints_the_short_lease_warning(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate warns on stderr about a schedule every minute with lease_minimum 0h, and
    still exits 0."""
    run(capsys, "init")
    config = folder / "retention.yaml"
    text = config.read_text().replace('"0 3 * * *"', '"*/1 * * * *"')
    config.write_text(text.replace("lease_minimum: 7d", "lease_minimum: 0h"))

    code, _, err = run(capsys, "validate")

    assert code == 0
    assert "schedule '*/1 * * * *' gives kept snapshots a lease of only" in err


def test_unwritable_folders_are_named_with_the_reason(tmp_path: Path) -> None:
    """A folder that is a file, or whose parent is a file, cannot take reports; a folder
    that exists or whose parents can be created can."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    assert unwritable(tmp_path) is None
    assert unwritable(tmp_path / "new" / "reports") is None
    assert unwritable(blocker) == f"{blocker} is not a folder"
    assert (
        unwritable(blocker / "reports")
        == f"cannot create {blocker / 'reports'}: {blocker} is not a folder"
    )


@pytest.mark.parametrize("command", ["plan", "run", "apply"])
def test_an_unwritable_reports_folder_is_exit_2_before_any_request(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """plan, run and apply check reports.dir before the first request: exit 2, the folder
    and the fix named, and the API never asked."""
    (folder / "not-a-folder").write_text("")
    (folder / "policies").mkdir()
    (folder / "policies" / "p.yaml").write_text("name: p\nkeep: {last: 3}\n")
    (folder / "plan.json").write_text("{}")
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\n'
        "reports:\n  dir: not-a-folder/reports\n"
    )
    before = sim.admin("counters")["requests"]
    args = ["apply", "plan.json"] if command == "apply" else [command]

    code, _, err = run(capsys, *args, clock=sim.clock.now)

    assert code == 2
    assert "reports.dir: cannot create" in err
    assert "is not a folder" in err
    assert "mount a volume there" in err
    assert sim.admin("counters")["requests"] == before


def test_apply_takes_a_run_folder_for_its_plan(
    sim: Simulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """apply RUN_DIR applies the plan.json inside it; a folder without one is exit 2."""
    (folder / "policies").mkdir()
    (folder / "policies" / "p.yaml").write_text(
        "name: p\nkeep: {last: 3}\nsafety: {max_expire_fraction: 1.0}\n"
    )
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {sim.base_url}\ntargets:\n  - project: "{P}"\n'
    )
    (folder / "empty").mkdir()
    # prod-small only gets an extend, which no alert holds: nothing is held.
    assert run(capsys, "plan", clock=sim.clock.now)[0] == 0
    [run_dir] = [d for d in (folder / "reports").iterdir() if d.is_dir()]

    code, _, err = run(capsys, "apply", "empty", clock=sim.clock.now)
    assert code == 2
    assert (
        "empty is not a run folder: it has no plan.json; give a plan file, or a run folder" in err
    )

    code, out, _ = run(capsys, "apply", str(run_dir), clock=sim.clock.now)
    assert code == 0
    assert "Outcomes: applied " in out
    assert sim.admin("counters")["patches"] > 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("30m", "'30m': give hours or days, e.g. 6h or 2d"),
        ("1y", "'1y': give hours or days, e.g. 6h or 2d"),
        ("0h", "must be more than 0, e.g. 6h"),
    ],
)
def test_max_age_takes_hours_or_days_and_more_than_nothing(
    folder: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    """--max-age 30m would be 30 months and 0h would refuse every plan: both are usage
    errors (exit 2) before the plan or the configuration is read."""
    (folder / "plan.json").write_text("{}")

    code, _, err = run(capsys, "apply", "plan.json", "--max-age", value)

    assert code == 2
    assert message in err
