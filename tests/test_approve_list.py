"""The approve command a person can paste (retention.runfolder.approvelist): the plan's real
path, every cluster on the line when there are few, else approve.txt beside the plan and
`apply --approve-from`, which reads it as edited after review."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from retention import cli
from retention.errors import UsageError
from retention.runfolder.approvelist import (
    Approvable,
    apply_command,
    approve_hint,
    approve_names,
    read_approve_list,
    write_approve_list,
)
from retention.simulator.server import Simulator
from tests.support.journal import outcome_lines
from tests.test_cli_plan import keys, write_config  # noqa: F401 - keys is a fixture

HELD = [
    Approvable(f"{n:024x}", name, 10 + n, "9 of 10 snapshots would expire (90%), ...")
    for n, name in enumerate(["prod-orders", "prod-users", "prod-catalog", "dev-sandbox"])
]


def test_few_clusters_are_named_on_the_line_with_the_plans_real_path(tmp_path: Path) -> None:
    """Three approvable clusters are named one by one after the plan's own path, each word
    quoted for a shell, with no ``...`` and no ``PLAN`` placeholder."""
    plan = tmp_path / "my plans" / "plan.json"
    plan.parent.mkdir()

    command = approve_hint(plan, ["prod-orders", "it's", "prod-users"])

    assert command == (
        f"retention apply '{plan}' --approve prod-orders --approve 'it'\"'\"'s' "
        "--approve prod-users"
    )
    assert shlex.split(command)[2:] == [
        str(plan),
        "--approve",
        "prod-orders",
        "--approve",
        "it's",
        "--approve",
        "prod-users",
    ]


def test_many_clusters_go_through_the_list_beside_the_plan(tmp_path: Path) -> None:
    """Four approvable clusters are written to approve.txt beside the plan, one id per
    line with the name as a comment, and the command names that list instead."""
    plan = tmp_path / "review.json"

    listed = write_approve_list(plan, HELD)

    assert listed == tmp_path / "review.approve.txt"
    assert approve_hint(plan, [c.name for c in HELD]) == (
        f"retention apply {plan} --approve-from {listed}"
    )
    assert tuple(read_approve_list(listed)) == tuple(c.cluster_id for c in HELD)
    assert "prod-catalog: 12 held changes" in listed.read_text()


def test_a_name_with_a_line_separator_cannot_add_a_line_to_the_list(tmp_path: Path) -> None:
    """A cluster named with U+2028 (a line break to str.splitlines) is written on one line,
    so the list read back approves its id alone, not a name hidden in its own."""
    sneaky = Approvable("a" * 24, "x\u2028prod-orders\u2028#", 3, "3 of 3 would expire")
    listed = write_approve_list(tmp_path / "plan.json", [sneaky])

    assert listed is not None
    assert list(read_approve_list(listed)) == ["a" * 24]
    assert "\\u2028prod-orders" in listed.read_text(encoding="utf-8")


def test_a_list_saved_by_a_windows_editor_reads_the_same(tmp_path: Path) -> None:
    """A byte order mark and CRLF line ends (Notepad, PowerShell's Out-File) are not part
    of any name; each name is said with its file and line."""
    path = tmp_path / "approve.txt"
    path.write_bytes(
        "\ufeff# edited\r\nprod-orders\r\n\r\n5fb61f00d1bb6448d004f9da  # x\r\n".encode()
    )

    assert read_approve_list(path) == {
        "prod-orders": f"--approve-from {path}:2: prod-orders",
        "5fb61f00d1bb6448d004f9da": f"--approve-from {path}:4: 5fb61f00d1bb6448d004f9da",
    }


def test_a_plan_path_that_starts_with_a_dash_is_not_taken_for_an_option() -> None:
    """A relative plan named -x.json is printed as ./-x.json, which click takes as a path."""
    assert apply_command(Path("-x.json"), ["a"]) == "retention apply ./-x.json --approve a"


def test_a_plan_with_nothing_to_approve_removes_an_older_list(tmp_path: Path) -> None:
    """A plan written over an older one that held clusters leaves no stale approve.txt."""
    plan = tmp_path / "plan.json"
    write_approve_list(plan, HELD)

    assert write_approve_list(plan, []) is None
    assert not (tmp_path / "approve.txt").exists()


def test_a_name_two_clusters_share_is_approved_by_id() -> None:
    """A name the plan gives to two clusters is replaced by the id, as --approve refuses a
    shared name."""
    chosen = [("prod", "a" * 24), ("other", "b" * 24)]

    assert approve_names(chosen, {"prod": 2, "other": 1}) == ["a" * 24, "other"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "cannot read it"),
        ("# prod-orders deleted after review\n\n", "it lists no cluster"),
    ],
)
def test_an_unreadable_or_empty_list_is_a_usage_error_naming_the_file(
    tmp_path: Path, text: str | None, why: str
) -> None:
    """A missing list, or one whose every line was deleted, is refused with the file's
    name rather than approving nothing (or everything) silently."""
    path = tmp_path / "approve.txt"
    if text is not None:
        path.write_text(text)

    with pytest.raises(UsageError, match=f"--approve-from {path}: {why}"):
        read_approve_list(path)


@pytest.mark.usefixtures("keys")
def test_apply_approve_from_sends_what_the_edited_list_names(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan writes approve.txt beside itself; apply --approve-from with every line deleted
    exits 2 naming the file and sends nothing, and with the list as written sends the held
    changes of the cluster it names and exits 0."""
    config = write_config(tmp_path, sim.base_url, fraction=0.1)
    plan = tmp_path / "p.json"
    assert cli.main(["--config", str(config), "plan", "--out", str(plan)], clock=sim.clock.now) == 3
    listed = tmp_path / "p.approve.txt"
    written = listed.read_text()
    assert [line.split("  #")[0] for line in written.splitlines() if not line.startswith("#")] == [
        "5e4e593f70dfbf1e2f6e1d30"
    ]
    capsys.readouterr()

    empty = tmp_path / "none.txt"
    empty.write_text("\n".join(line for line in written.splitlines() if line.startswith("#")))
    apply = ["--config", str(config), "apply", str(plan), "--quiet", "--approve-from"]
    assert cli.main([*apply, str(empty)], clock=sim.clock.now) == 2
    assert f"--approve-from {empty}: it lists no cluster" in capsys.readouterr().err
    assert not list((tmp_path / "reports").glob("*/results.jsonl"))

    wrong = tmp_path / "wrong.txt"
    wrong.write_text("# an older plan's list\nffffffffffffffffffffffff\n")
    assert cli.main([*apply, str(wrong)], clock=sim.clock.now) == 2
    assert (
        f"--approve-from {wrong}:2: ffffffffffffffffffffffff: the plan has no cluster of that "
        "name or id"
    ) in capsys.readouterr().err

    assert cli.main([*apply, str(listed)], clock=sim.clock.now) == 0
    assert "Approved by --approve: prod-big" in capsys.readouterr().out
    [journal] = (tmp_path / "reports").glob("*/results.jsonl")
    sent = [o for o in outcome_lines(journal) if o.get("approved")]
    assert len(sent) > 1000
