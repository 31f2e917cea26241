"""Screenshots of the demo's report.html for the README: the top of the page in headless
Chromium at 1280 and at 800 px wide, written to docs/images/report-1280.png and
report-800.png; and of the evidence of the demo's day, from its ledger
(docs/images/evidence-1280.png).

Run it with `make screenshots` after a change to the report's look, and look at both
pictures before committing them. The demo runs as `retention demo` does, on the simulator's
demo fleet, at a fixed start time (2026-11-23 00:39 UTC) so the pictures change only when
the report does. Needs Chromium (apt-get install chromium).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from retention.cli import main as retention
from tests.support.browser import INSTALL, Browser, find_chromium

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 11, 23, 0, 39, 8, tzinfo=UTC)
# Width and height of each picture, in CSS px: the run, the summary and the holds.
SIZES = ((1280, 1600), (800, 2100))


def demo_report(folder: Path) -> Path:
    """Run the demo into ``folder`` at START (a clock that runs on from there); its report."""
    began = time.monotonic()

    def clock() -> datetime:
        return START + timedelta(seconds=time.monotonic() - began)

    said = io.StringIO()
    with contextlib.redirect_stdout(said):  # the demo's own account of its runs
        code = retention(["demo", "--report-dir", str(folder), "--format", "json"], clock=clock)
    if code != 0:
        raise SystemExit(f"retention demo exited {code}")
    # The demo's second run: the one it reports, which caught the changes made between.
    return Path(json.loads(said.getvalue())["runDir"]) / "report.html"


def demo_evidence(report: Path) -> Path:
    """`retention evidence` of the demo's day, from the ledger the demo recorded beside its
    run folders (no API: the configuration only names the ledger); its HTML."""
    folder = report.parent.parent
    config = folder / "evidence.yaml"
    config.write_text(
        "api:\n  base_url: http://127.0.0.1:9/api/public/v1.0\n"
        'targets:\n  - project: "5e2211c17a3e5a48f5497de4"\n'
        f"policies: {ROOT / 'policies'}\n"
        f"reports:\n  dir: {folder}\n"
        f"ledger:\n  url: sqlite:///{folder / 'demo-ledger.db'}\n"
    )
    day = START.date().isoformat()
    out = folder / "evidence"
    with contextlib.redirect_stdout(io.StringIO()):
        code = retention(
            ["--config", str(config), "evidence", "--from", day, "--to", day, "--out", str(out)],
            clock=lambda: START + timedelta(hours=1),
        )
    if code not in (0, 3):
        raise SystemExit(f"retention evidence exited {code}")
    return out / f"evidence-{day}-{day}.html"


def main(argv: list[str] | None = None) -> int:
    """Write the screenshots; 1 when Chromium is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    browser = find_chromium()
    if browser is None:
        sys.stderr.write(f"chromium not found: {INSTALL}\n")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, Browser(browser) as chromium:
        report = demo_report(Path(folder))
        page = chromium.page(*SIZES[0])
        for width, height in SIZES:
            page.resize(width, height)
            page.load(report)
            path = args.out / f"report-{width}.png"
            page.screenshot(path)
            sys.stdout.write(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}\n")
        page.resize(1280, 1000)
        page.load(demo_evidence(report))
        path = args.out / "evidence-1280.png"
        page.screenshot(path)
        sys.stdout.write(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
