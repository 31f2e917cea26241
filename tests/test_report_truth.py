"""The reports, the terminal summary and the notice say what the run did: a cluster an
--approve let through is approved and not held, the deletion line and the expiring counts
are those of the changes the service applied, every output names the same clusters and
warnings, and each count says what it counts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.core.timestamps import format_timestamp, parse_timestamp
from retention.report.summary import RunInfo
from retention.simulator.server import Simulator
from tests.support.journal import outcome_lines
from tests.support.notices import Receiver
from tests.support.reportpage import ReportPage, bullets, section
from tests.support.simfleet import NOW, P

# prod-* clusters only, held by the fraction gate at 10%: prod-big (1,234 snapshots, all
# but 2 to expire) is held by the fraction alone, prod-small by an OPEN alert too. The
# legacy config server is matched by no policy, and the policy "nothing" matches nothing.
PROD = """\
name: prod
match:
  clusters: ["prod-*"]
  kinds: [cluster]
keep:
  last: 2
safety:
  min_keep: 1
  max_expire_fraction: 0.1
"""
NOTHING = 'name: nothing\nmatch:\n  clusters: ["production-*"]\nkeep:\n  last: 2\n'


def configure(folder: Path, base_url: str, notify_url: str) -> None:
    """retention.yaml for the small fleet, the two policies and a notice on every ending."""
    (folder / "policies").mkdir(exist_ok=True)
    (folder / "policies" / "prod.yaml").write_text(PROD)
    (folder / "policies" / "nothing.yaml").write_text(NOTHING)
    # The schedule's lease alone (lease_minimum 0h): the counts below are of the changes the
    # policy makes, not of the extensions a longer lease adds to them.
    (folder / "retention.yaml").write_text(
        f'api:\n  base_url: {base_url}\ntargets:\n  - project: "{P}"\npolicies: policies/\n'
        f'schedule: "0 3 * * *"\nlease_minimum: 0h\n'
        f'reports:\n  dir: reports/\nnotify:\n  urls: ["{notify_url}"]\n'
    )


def run_folders(folder: Path) -> list[Path]:
    """The run folders under reports/, oldest first."""
    return sorted(d for d in (folder / "reports").iterdir() if d.is_dir())


def applied_expiries(results: Sequence[dict[str, Any]]) -> list[datetime]:
    """The expiries the service applied: one per applied outcome that wrote one."""
    return [
        parse_timestamp(r["body"]["expires"])
        for r in results
        if r["outcome"] == "applied" and r["body"].get("expires")
    ]


def test_an_approved_cluster_is_reported_approved_and_never_held(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """After apply --approve prod-big, the terminal, report.md, report.html and the notice
    each say prod-big was approved and how many of its held changes went out and were
    applied; none lists it as held or suggests --approve prod-big, while prod-small, still
    held by its alert, is named with its reason."""
    configure(folder, sim.base_url, receiver.url)
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 3
    capsys.readouterr()

    code = cli.main(["apply", "plan.json", "--approve", "prod-big"], clock=sim.clock.now)

    out = capsys.readouterr().out
    [run_dir] = run_folders(folder)
    approved = [r for r in outcome_lines(run_dir / "results.jsonl") if r["approved"]]
    markdown = (run_dir / "report.md").read_text(encoding="utf-8")
    page = ReportPage.of(run_dir / "report.html")
    [notice] = receiver.notices
    message = notice["message"]
    said = f"prod-big, {len(approved)} held changes let through ({len(approved)} applied)"
    assert code == 3  # prod-small stays held by its alert
    assert len(approved) == 1232
    assert all(r["outcome"] == "applied" for r in approved)
    assert f"Approved by --approve: {said}." in out
    assert f"- Approved by `--approve`: {said}." in markdown
    assert f"Approved by --approve: {said}." in page.text_of("approved")
    assert f"- Approved by `--approve`: {said}." in message
    for text in (out, markdown, page.text, message):
        assert "--approve prod-big" not in text
    # The terminal's table and hold lines.
    assert re.search(r"^  prod-big +cluster +1234 +0 +0 +1232 +0 +0 +0 +0 +approved *$", out, re.M)
    assert "hold prod-big" not in out
    assert "hold prod-small: OPEN alert BAD_CLUSTERSHOTS (a-open)" in out
    # report.md and the notice: the held list names prod-small only, with why.
    for text in (markdown, message):
        held = bullets(text, "- Held by a safety gate, not sent:")
        assert held[0] == "- Held by a safety gate, not sent: 1 change of 1 cluster (1.5 GiB):"
        assert held[1].startswith(r"  - prod-small, 1 held: alert: OPEN alert BAD\_CLUSTERSHOTS")
        assert len(held) == 2
        assert "- 2 clusters with changes, 1 held, 1 approved, 0 with errors." in text
    assert "| prod-big |" not in section(markdown, "Holds (need a human)")
    assert "1 cluster held, 1 change in all." in section(markdown, "Holds (need a human)")
    # report.html: the Holds cards, the summary cards and the clusters table.
    assert page.text_of("held-1").startswith("prod-small ")
    assert "held-2" not in page.by_id
    assert "prod-big" not in page.text_of("holds")
    [big] = [r for r in page.rows["clusters"] if r[0].startswith("prod-big approved cluster ")]
    assert big[1:9] == ["1234", "0", "0", "1232", "0", "0", "0", "0"]  # snapshots, actions, held


def approve_prod_big(
    folder: Path, sim: Simulator, capsys: pytest.CaptureFixture[str], times: int
) -> list[tuple[Path, str]]:
    """Plan, then apply the plan with --approve prod-big ``times`` times: each apply's run
    folder and terminal output, in order."""
    assert cli.main(["plan", "--out", "plan.json"], clock=sim.clock.now) == 3
    capsys.readouterr()
    outs = []
    for _ in range(times):
        assert cli.main(["apply", "plan.json", "--approve", "prod-big"], clock=sim.clock.now) == 3
        outs.append(capsys.readouterr().out)
    # The folders are all named after the same frozen instant: a later apply finds the
    # changes of an earlier one done, so it applies fewer.
    folders = sorted(
        run_folders(folder),
        key=lambda d: -sum(r["outcome"] == "applied" for r in outcome_lines(d / "results.jsonl")),
    )
    return list(zip(folders, outs, strict=True))


def test_the_deletion_line_and_the_expiring_counts_are_what_was_applied(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deletion line counts the destructive changes the service applied, from the
    earliest expiry sent, and the expiring counts the expiries the apply set."""
    configure(folder, sim.base_url, receiver.url)

    [(run_dir, out)] = approve_prod_big(folder, sim, capsys, times=1)

    results = outcome_lines(run_dir / "results.jsonl")
    destructive = [r for r in results if r["outcome"] == "applied" and r["destructive"]]
    start = min(parse_timestamp(r["body"]["expires"]) for r in destructive)
    expiries = applied_expiries(results)
    week = sum(NOW <= at < NOW + timedelta(days=7) for at in expiries)
    month = sum(NOW <= at < NOW + timedelta(days=30) for at in expiries)
    deletion = (
        f"Deletion: {len(destructive)} snapshots may be deleted by the service from "
        f"{format_timestamp(start)} on, giving back 1.8 TiB (applied by this apply)."
    )
    markdown = (run_dir / "report.md").read_text(encoding="utf-8")
    page = ReportPage.of(run_dir / "report.html")
    assert len(destructive) == 1232
    assert week == month == 1232
    assert deletion in out
    assert f"- {deletion}" in markdown
    assert page.text_of("deletion").startswith(
        f"{len(destructive)} snapshots may be deleted by the service from "
        f"{start:%Y-%m-%d %H:%M} UTC on, giving back 1.8 TiB (applied by this apply)"
    )
    assert f"({week} set by this apply), " in markdown
    assert f"({month} set by this apply)." in markdown
    assert (page.text_of("calendar-7-planned"), page.text_of("calendar-30-planned")) == (
        str(week),
        str(month),
    )


def test_an_apply_whose_changes_are_all_unchanged_sets_no_expiry(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """Applying the same plan a second time finds every change already made (unchanged):
    its reports and terminal say that nothing was set and nothing may be deleted sooner,
    whatever the plan meant to do, and that prod-big's held changes came back unchanged."""
    configure(folder, sim.base_url, receiver.url)

    _, (again, out) = approve_prod_big(folder, sim, capsys, times=2)

    lines = outcome_lines(again / "results.jsonl")
    markdown = (again / "report.md").read_text(encoding="utf-8")
    page = ReportPage.of(again / "report.html")
    nothing = "applied no change that lets the service delete"
    assert {r["outcome"] for r in lines} == {"unchanged"}
    assert f"- Deletion: this apply {nothing} a snapshot sooner." in markdown
    assert page.text_of("deletion") == f"This apply {nothing} a snapshot sooner."
    assert f"Deletion: this apply {nothing} sooner." in out
    assert "(0 set by this apply), " in markdown
    assert page.text_of("calendar-7-planned") == "0"
    approved = "prod-big, 1232 held changes let through (0 applied, 1232 unchanged)"
    assert f"Approved by --approve: {approved}." in out
    assert f"- Approved by `--approve`: {approved}." in markdown


def test_report_md_and_the_notice_say_what_the_terminal_and_the_html_say(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """A held run's report.md and notice give the policy that matches nothing, the
    unmanaged config server and the command that approves prod-big, as the terminal and
    report.html do; the Outcomes' held count is the held changes, one number everywhere."""
    configure(folder, sim.base_url, receiver.url)

    code = cli.main(["run"], clock=sim.clock.now)

    out = capsys.readouterr().out
    [run_dir] = run_folders(folder)
    markdown = (run_dir / "report.md").read_text(encoding="utf-8")
    page = ReportPage.of(run_dir / "report.html")
    message = receiver.notices[0]["message"]
    held = 1233  # prod-big's 1,232 and prod-small's 1
    assert code == 3
    # The terminal and report.html.
    assert "warning policy 'nothing' matches no cluster or config server" in out
    assert "warning 1 unmanaged (no policy matches, never changed): cfg0.legacy.example.net" in out
    command = f"retention apply {run_dir / 'plan.json'} --approve prod-big"
    assert f"    {command}" in out.splitlines()
    assert "nothing" in page.text_of("unmanaged")
    assert "cfg0.legacy.example.net" in page.text_of("unmanaged")
    assert command in page.text_of("holds")
    # report.md and the notice say the same.
    for text in (markdown, message):
        lines = text.splitlines()
        assert "- Policy nothing matches no cluster or config server: check its match " in text
        assert (
            "- Unmanaged (no policy matches, never changed): 1 cluster: "
            "cfg0.legacy.example.net." in lines
        )
        assert f"`{command}`" in text
        assert "--approve prod-small" not in text  # its alert cannot be approved
        assert f"held {held}." in lines[0]
    # One held count: the Outcomes table, the cards, the terminal.
    assert page.text_of("outcome-held") == str(held)
    # A card is its number over its words: the page's text runs them together.
    assert f"{held}changes held" in page.text_of("summary")
    assert f"Outcomes: held {held}." in out


def test_a_hold_says_which_snapshots_it_counts_beside_the_tables_count(
    sim: Simulator, folder: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """prod-small has 5 snapshots, one still running and one past its expiry: the tables
    count 5, and its fraction hold, which counts the other 3, says that it left 2 of the 5
    out, so the two numbers are never read as a contradiction."""
    configure(folder, sim.base_url, receiver.url)

    assert cli.main(["run", "--dry-run"], clock=sim.clock.now) == 3

    out = capsys.readouterr().out
    [run_dir] = run_folders(folder)
    page = ReportPage.of(run_dir / "report.html")
    reason = (
        "1 of 3 snapshots would expire (33%), more than max_expire_fraction 0.1; 2 of the "
        "cluster's 5 snapshots not counted (incomplete or awaiting deletion)"
    )
    assert re.search(r"^  prod-small +cluster +5 ", out, re.M)
    assert f"hold prod-small: {reason} [set at " in out
    [small] = [r for r in page.rows["clusters"] if r[0].startswith("prod-small held cluster ")]
    assert small[1] == "5"
    assert reason in page.text_of("holds")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.8, "0.8 s"),
        (12.44, "12.4 s"),
        (59.96, "1 min 00 s"),
        (185, "3 min 05 s"),
        (3725, "1 h 02 min 05 s"),
    ],
)
def test_a_duration_is_to_the_tenth_of_a_second_under_a_minute(seconds: float, text: str) -> None:
    """A run of about a second reads "0.8 s", not "0s"; a minute and more, to the second."""
    started = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    run = RunInfo("1a2b3c4d", "run", started, started + timedelta(seconds=seconds), 0, "0.1.0")

    assert run.duration == text
