"""retention as a library: the README's example runs as written against the simulator, and
the library's one entry does what the commands do (they are a thin layer over it)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

import retention
from retention.errors import UsageError
from retention.library.retention import Retention
from retention.ops.clock import Clock
from retention.simulator.fleetfile import build_fleet
from retention.simulator.server import Simulator
from tests.support.simfleet import running

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "policies"


def readme_example() -> str:
    """The Python block the README marks as the library example."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = "<!-- library-example: tests/test_library.py runs this block -->"
    found = re.search(re.escape(marker) + r"\n```python\n(.*?)```", text, re.S)
    assert found is not None, "README.md has no library example under its marker"
    return found.group(1)


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Simulator]:
    """The demo fleet on a simulator frozen at the suite's time, and a working folder for
    it (retention.yaml, the example policies) as the current directory."""
    with running(lambda now: build_fleet("demo", seed=1, now=now)) as sim:
        projects = "".join(f'  - project: "{p["id"]}"\n' for p in sim.admin("fleet")["projects"])
        (tmp_path / "retention.yaml").write_text(
            f"api:\n  base_url: {sim.base_url}\ntargets:\n{projects}"
            f'policies: {POLICIES}\nschedule: "0 3 * * *"\nreports:\n  dir: reports/\n',
            encoding="utf-8",
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("RETENTION_PUBLIC_KEY", "pubkey-abcdef")
        monkeypatch.setenv("RETENTION_PRIVATE_KEY", "sim-secret-key")
        yield sim


def on_clock(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    """Retention.from_config gives every Retention the simulator's clock (the example, as
    a user runs it, takes the system's)."""
    made = Retention.from_config

    def from_config(path: str | Path | None = None, *, clock_: Any = None) -> Retention:
        del clock_
        return made(path, clock=clock)

    monkeypatch.setattr(Retention, "from_config", staticmethod(from_config))


def test_the_readme_library_example_plans_inspects_and_applies_with_approvals(
    demo: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's script, run as written, plans the demo fleet into plan.json, names each
    held cluster with its held count and holds, approves the fraction-only ones it picks,
    and applies: the service receives the changes the plan sends and those approved,
    and the script prints the exit code and outcomes."""
    on_clock(monkeypatch, demo.clock.now)
    printed = StringIO()

    with redirect_stdout(printed):
        exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme"})  # noqa: S102

    lines = printed.getvalue().splitlines()
    assert Path("plan.json").is_file()
    held = [line for line in lines if " held by " in line]
    assert held, "the demo's first plan is held by its safety gates"
    assert any("max_expire_fraction" in line for line in held)
    assert any("alert" in line for line in held)  # the demo has clusters an alert holds
    outcome = lines[-1]
    assert re.fullmatch(r"exit 3: \{.*'applied': \d+.*\}", outcome), outcome
    patches = demo.admin("patches")["patches"]
    assert patches
    assert all(p["kind"] == "snapshot" for p in patches)


def test_each_job_returns_the_code_the_command_would_and_the_reports_it_wrote(
    demo: Simulator,
) -> None:
    """A dry run through the library returns the command's exit code (3: the first run is
    held) and the reports of its run folder; nothing is sent."""
    library = Retention("retention.yaml", clock=demo.clock.now)

    ended = library.run(retention.RunRequest(dry_run=True))

    assert ended.code == 3
    assert ended.mode == "dry-run"
    assert [p.name for p in ended.reports] == ["report.html", "report.md"]
    assert all(p.parent == ended.result.run_dir and p.is_file() for p in ended.reports)
    assert ended.result.applied is None
    assert demo.admin("patches")["patches"] == []


def test_a_request_the_library_refuses_says_why_and_sends_nothing(demo: Simulator) -> None:
    """An apply of a plan file that does not exist is a usage error (exit 2) before any
    request, and leaves no run folder."""
    library = Retention("retention.yaml", clock=demo.clock.now)
    requests = demo.admin("counters")["requests"]

    with pytest.raises(UsageError, match="no such plan file") as refused:
        library.apply(retention.ApplyRequest(Path("missing.json")))

    assert refused.value.exit_code == 2
    assert demo.admin("counters")["requests"] == requests
    assert not Path("reports").exists() or not any(Path("reports").iterdir())


def test_importing_retention_loads_no_library_until_a_name_is_used() -> None:
    """``import retention`` (as a worker that needs only the core does) loads none of the
    library; its public names, every one of __all__, load it when first used."""
    code = (
        "import sys, retention\n"
        "before = 'retention.library.retention' in sys.modules\n"
        "names = [getattr(retention, name) for name in retention.__all__]\n"
        "print(before, 'retention.library.retention' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert done.stdout.split() == ["False", "True"]
