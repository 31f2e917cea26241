"""Every command's output, captured for comparison: ``python -m tools.outputs DIR``.

Runs each command of the command line in this process (``retention.cli.main`` with a clock
that only moves when told) against a simulator serving the demo fleet, and each golden
scenario of tests/scenarios, with its clock frozen. DIR receives, per fleet, one file per
command (its arguments, exit code, stdout and stderr) and every file of every run folder
(decisions.jsonl.zst decompressed). What varies from one capture to the next is replaced:
run ids by their order of appearance, the simulator's port and the working folder by
placeholders. Two captures, before and after a change, are then compared with
``diff -r``: a refactoring that keeps behaviour leaves them byte-identical.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import zstandard

from retention.cli import main
from retention.simulator.server import Simulator, SimulatorConfig

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "scenarios"
START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
PUBLIC, PRIVATE = "outputs-public", "outputs-private-key"
# Fixed, and short (see fleet()): one capture at a time on a machine.
WORK = Path(tempfile.gettempdir()) / "retention-outputs"
RUN_ID = re.compile(r"(\d{8}T\d{6}Z)-([0-9a-f]{8})")
PORT = re.compile(
    r"127\.(?:<wbr>)?0\.(?:<wbr>)?0\.(?:<wbr>)?1:(?:<wbr>)?\d+"
)  # the demo command's own simulator
BARE_ID = re.compile(r"\b[0-9a-f]{8}\b")


@dataclass
class Capture:
    """One fleet's capture: its folder, the clock the product and the simulator share, and
    how run ids are named."""

    out: Path
    work: Path
    sim: Simulator
    now: datetime = START
    ids: dict[str, str] = field(default_factory=dict)
    count: int = 0

    def clock(self) -> datetime:
        """The product's clock: the simulator's."""
        return self.now

    def tick(self, minutes: int = 1) -> None:
        """Move both clocks on, so that each command's run folder sorts after the last."""
        self.now += timedelta(minutes=minutes)
        self.sim.clock.set(self.now, frozen=True)

    def normal(self, text: str) -> str:
        """``text`` without what differs between two captures."""
        text = PORT.sub("127.0.0.1:<PORT>", text)
        text = RUN_ID.sub(lambda m: f"{m[1]}-{self._id(m[2])}", text)
        return BARE_ID.sub(lambda m: self.ids.get(m[0], m[0]), text)

    def learn_ids(self) -> None:
        """Name the run folders made so far, in the order of their names."""
        for folder in sorted(self.work.glob("*reports/*")):
            if (found := RUN_ID.fullmatch(folder.name)) is not None:
                self._id(found[2])

    def _id(self, raw: str) -> str:
        if raw not in self.ids:
            self.ids[raw] = f"run{len(self.ids) + 1:05d}"[-8:]
        return self.ids[raw]

    def run(self, name: str, *argv: str) -> tuple[int, str]:
        """Run one command, write what it said to ``name``.txt; its code and stdout."""
        self.tick()
        out, err = io.StringIO(), io.StringIO()
        cwd = Path.cwd()
        os.chdir(self.work)
        try:
            with redirect_stdout(out), redirect_stderr(err):
                code = main(list(argv), clock=self.clock, interactive=False)
        finally:
            os.chdir(cwd)
        self.count += 1
        self.learn_ids()
        record = (
            f"$ retention {' '.join(argv)}\nexit {code}\n--- stdout\n{out.getvalue()}"
            f"--- stderr\n{err.getvalue()}"
        )
        path = self.out / f"{self.count:02d}-{name}.txt"
        path.write_text(self.normal(record), encoding="utf-8")
        return code, out.getvalue()

    def run_folders(self) -> list[Path]:
        """The run folders under reports/, oldest first."""
        reports = self.work / "reports"
        return sorted(p for p in reports.iterdir() if p.is_dir()) if reports.is_dir() else []

    def keep_files(self) -> None:
        """Every file of every run folder, and every other file written in the working
        folder, normalised, under files/."""
        for path in sorted(self.work.rglob("*")):
            if not path.is_file() or path.suffix == ".lock" or "policies" in path.parts:
                continue
            relative = self.normal(str(path.relative_to(self.work)))
            target = self.out / "files" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if path.suffix == ".zst":
                reader = zstandard.ZstdDecompressor().stream_reader(
                    io.BytesIO(data), read_across_frames=True
                )
                data, target = reader.read(), target.with_suffix("")
            if path.name == "results.jsonl":
                # Clusters are applied side by side: their lines interleave at random.
                data = b"".join(sorted(data.splitlines(keepends=True)))
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                target.write_bytes(data)
                continue
            target.write_text(self.normal(text), encoding="utf-8")


@contextmanager
def fleet(out: Path, fleet_name: str, policies: Path) -> Iterator[Capture]:
    """A working folder (retention.yaml, policies/) against a simulator of ``fleet_name``.
    The folder's path is fixed, and the simulator's port (which varies) has five digits, as
    Linux's ephemeral ports have: the sizes of run folders, which hold both, are the same
    from one capture to the next."""
    config = SimulatorConfig(
        fleet=fleet_name,
        seed=1,
        now=START,
        frozen=True,
        public_key=PUBLIC,
        private_key=PRIVATE,
    )
    work = WORK / out.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with Simulator(config) as sim:
        shutil.copytree(policies, work / "policies")
        projects = "".join(f'  - project: "{p["id"]}"\n' for p in sim.admin("fleet")["projects"])
        # One cluster at a time: the journal's lines, and undo's items, in plan order.
        api = f"api:\n  base_url: {sim.base_url}\n  concurrency: 1\n"
        rest = 'policies: policies/\nschedule: "0 3 * * *"\nreports:\n  dir: reports/\n  keep: 1d\n'
        (work / "retention.yaml").write_text(f"{api}targets:\n{projects}{rest}", encoding="utf-8")
        out.mkdir(parents=True)
        capture = Capture(out, work, sim)
        sim.clock.set(START, frozen=True)
        yield capture
        capture.keep_files()
    shutil.rmtree(work)


def first_changed_snapshot(capture: Capture) -> str:
    """The id of a snapshot the newest plan changes (or any snapshot), for explain."""
    plans = [p for p in capture.run_folders() if (p / "decisions.jsonl.zst").is_file()]
    data = (plans[-1] / "decisions.jsonl.zst").read_bytes()
    lines = (
        zstandard.ZstdDecompressor()
        .stream_reader(io.BytesIO(data), read_across_frames=True)
        .read()
        .splitlines()
    )
    chosen = next((line for line in lines if b'"body":null' not in line), lines[0])
    found = re.search(rb'"snapshotId":"([^"]+)"', chosen)
    return found[1].decode() if found else "none"


def commands(c: Capture, *, with_demo: bool) -> None:
    """Every command, in an order in which each finds what it needs."""
    c.run("validate", "validate")
    c.run("validate-json", "validate", "--format", "json")
    c.run("config-show", "config", "show")
    c.run("config-show-json", "config", "show", "--format", "json")
    for kind in ("policy", "config", "plan"):
        c.run(f"schema-{kind}", "schema", kind)
    c.run("doctor", "doctor")
    c.run("doctor-json", "doctor", "--format", "json")
    c.run("plan", "plan")
    snapshot = first_changed_snapshot(c)
    c.run("plan-json", "plan", "--format", "json")
    c.run("plan-out", "plan", "--out", "saved-plan.json")
    c.run("plan-stdout", "plan", "--out", "-")
    c.run("plan-shard", "plan", "--shard", "1/2", "--out", "shard-plan.json")
    c.run("plan-at", "plan", "--at", "2027-03-01T00:00:00Z", "--out", "whatif.json")
    c.run("explain", "explain", snapshot)
    c.run("explain-json", "explain", snapshot, "--format", "json", "--plan", "saved-plan.json")
    c.run("explain-missing", "explain", "000000000000000000000000")
    base = c.work / "base-policies"
    shutil.copytree(c.work / "policies", base)
    for policy in sorted(base.glob("*.yaml")):
        text = policy.read_text(encoding="utf-8")
        policy.write_text(text.replace("daily: 7", "daily: 14"), encoding="utf-8")
    c.run("diff", "diff", "--base", "base-policies")
    c.run("diff-md", "diff", "--base", "base-policies", "--format", "markdown")
    c.run("diff-json", "diff", "--base", "base-policies", "--format", "json")
    c.run("forecast", "forecast", "--days", "40", "--step", "2d")
    c.run("forecast-json", "forecast", "--days", "40", "--base", "base-policies", "--format",
          "json", "--html", "forecast.html")  # fmt: skip
    c.run("run-dry", "run", "--dry-run")
    c.run("run-dry-json", "run", "--dry-run", "--format", "json")
    c.run("apply-whatif", "apply", "whatif.json")
    c.tick(5)
    c.run("apply", "apply", "saved-plan.json", "--metrics-file", "apply.prom")
    c.run("apply-again-json", "apply", "saved-plan.json", "--approve-all", "--format", "json")
    applied = [p for p in c.run_folders() if (p / "results.jsonl").is_file()]
    c.run("undo-dry", "undo", str(applied[0]), "--dry-run")
    c.run("undo", "undo", str(applied[0]), "--format", "json")
    c.run("run", "run", "--metrics-file", "run.prom")
    c.run("run-json", "run", "--format", "json")
    c.tick(60 * 24 * 3)
    c.run("prune-dry", "prune", "--dry-run")
    c.run("prune-json", "prune", "--keep", "2d", "--format", "json")
    c.run("bad-usage", "plan", "--at", "yesterday")
    if with_demo:
        c.run("demo", "demo", "--report-dir", "demo-reports")


def capture(out: Path) -> None:
    """The demo fleet with the example policies, then every golden scenario."""
    if out.exists():
        shutil.rmtree(out)
    with fleet(out / "demo", "demo", ROOT / "policies") as c:
        commands(c, with_demo=True)
    for scenario in sorted(p for p in SCENARIOS.iterdir() if p.is_dir()):
        with fleet(out / scenario.name, str(scenario / "fleet.yaml"), scenario / "policies") as c:
            commands(c, with_demo=False)


def run(argv: list[str], say: Callable[[str], object]) -> int:
    """The tool's command line."""
    if len(argv) != 1:
        say("usage: python -m tools.outputs DIR")
        return 2
    capture(Path(argv[0]).resolve())
    say(f"captured into {argv[0]}")
    return 0


if __name__ == "__main__":
    os.environ.update(RETENTION_PUBLIC_KEY=PUBLIC, RETENTION_PRIVATE_KEY=PRIVATE)
    os.environ.pop("RETENTION_CONFIG", None)
    os.environ.pop("RETENTION_NOTIFY_URLS", None)
    sys.exit(run(sys.argv[1:], lambda line: sys.stderr.write(line + "\n")))
