"""report.html renders in a real browser: headless Chromium takes screenshots of the
steady-state scenario's report, 1280x2000 and 800x2000 PNGs with far more in them than a
blank page. Skipped, saying how to install it, where Chromium is not installed; under CI
(CI=true, where .ci/run installs it) a missing Chromium is a failure, not a skip."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retention.report import RunInfo, render_reports

SCENARIO = Path(__file__).parent / "scenarios" / "steady_state_mixed_fleet"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HEIGHT = 2000
# A blank 1280x2000 page compresses to a few kilobytes; a rendered report is hundreds.
MIN_BYTES = 30_000


def chromium() -> str:
    """The Chromium binary, or a skip that says how to get one."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    message = "chromium not installed: apt-get install chromium to run the screenshot check"
    if os.environ.get("CI") == "true":
        pytest.fail(message)  # a check that skips in CI checks nothing
    pytest.skip(message)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first chunk, right after the magic)."""
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("width", [1280, 800])
def test_report_screenshot_is_a_full_page(tmp_path: Path, width: int) -> None:
    """Chromium renders the steady-state report into a PNG of the window's size, well above
    blank size, on a wide screen and on a narrow one."""
    browser = chromium()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(SCENARIO / "expected.plan.json", run_dir / "plan.json")
    shutil.copy(SCENARIO / "expected.decisions.jsonl", run_dir / "decisions.jsonl")
    started = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    run = RunInfo("1a2b3c4d", "dry-run", started, started + timedelta(seconds=42), 0, "0.1.0")
    (html,) = render_reports(run_dir, run, formats=["html"])
    png = tmp_path / "report.png"

    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={png}",
            f"--window-size={width},{HEIGHT}",
            html.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )

    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert png_size(data) == (width, HEIGHT)
    assert len(data) > MIN_BYTES
