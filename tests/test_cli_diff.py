"""`retention diff` end to end on the simulator's demo fleet: a git repository holding
retention.yaml and policies/, a policy edited in the working copy, and the diff checked
against two separate plans (base policies, current policies) at the same simulator clock."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from retention import cli
from retention.runfolder.folder import decisions_path
from retention.runfolder.planread import decision_lines
from retention.simulator.fleetfile import build_fleet
from retention.simulator.server import Simulator
from tests.support.simfleet import running

ROOT = Path(__file__).resolve().parent.parent
GIT = shutil.which("git") or "git"
KEPT = frozenset({"kept", "protected", "manual-hold"})
PRODUCTION = "policies/production.yaml"


@pytest.fixture(scope="module")
def demo() -> Iterator[Simulator]:
    """The demo fleet on a simulator frozen at NOW (read-only tests share it)."""
    with running(lambda now: build_fleet("demo", seed=1, now=now)) as simulator:
        yield simulator


@dataclass(frozen=True)
class Repo:
    """A policies repository: its folder, retention.yaml, and how to run a command in it."""

    folder: Path
    config: Path
    sim: Simulator

    def main(self, *argv: str) -> int:
        return cli.main(["--config", str(self.config), *argv], clock=self.sim.clock.now)

    def edit(self, old: str, new: str, path: str = PRODUCTION) -> None:
        file = self.folder / path
        text = file.read_text()
        assert old in text
        file.write_text(text.replace(old, new))


def git(folder: Path, *args: str) -> None:
    """git in ``folder``, with a fixed identity and no configuration of the developer's."""
    subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(demo: Simulator, tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """retention.yaml for every demo project and the example policies, committed."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    work = tmp_path / "work"
    (work / "policies").mkdir(parents=True)
    for policy in sorted((ROOT / "policies").glob("*.yaml")):
        shutil.copy(policy, work / "policies" / policy.name)
    projects = [p["id"] for p in demo.admin("fleet")["projects"]]
    targets = "".join(f'  - project: "{p}"\n' for p in projects)
    config = work / "retention.yaml"
    config.write_text(
        f"api:\n  base_url: {demo.base_url}\n  concurrency: 4\n"
        f'targets:\n{targets}policies: policies/\nschedule: "0 3 * * *"\n'
    )
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    return Repo(work, config, demo)


def kept(plan: Path) -> dict[str, bool]:
    """Whether each snapshot of a plan's decisions is kept (left as a restore point)."""
    records = [json.loads(line) for line in decision_lines(decisions_path(plan))]
    return {r["snapshotId"]: r["state"] in KEPT and not r["destructive"] for r in records}


def plan_kept(repo: Repo, name: str) -> dict[str, bool]:
    """A plan of the working copy's policies, at the simulator's clock: what it keeps."""
    out = repo.folder / name / "plan.json"
    assert repo.main("plan", "--out", str(out)) in {0, 3}
    return kept(out)


def diff_json(
    repo: Repo, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, dict[str, Any]]:
    """`retention diff ARGV --format json`: its exit code and its document."""
    capsys.readouterr()
    code = repo.main("diff", *argv, "--format", "json")
    return code, json.loads(capsys.readouterr().out)


def shifted(document: dict[str, Any], shift: str) -> set[str]:
    """The ids of the snapshots of one kind of shift, in every cluster of a diff."""
    return {
        s["snapshotId"]
        for cluster in document["clusters"]
        for s in cluster["shifts"]
        if s["shift"] == shift
    }


def unset(clusters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Changed clusters of a diff without the settings their base holds name."""
    return [
        {**c, "holdsBefore": [{**h, "setting": None} for h in c["holdsBefore"]]} for c in clusters
    ]


def test_a_policy_that_keeps_less_names_exactly_what_it_stops_keeping(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against git:HEAD, a working copy keeping 3 dailies instead of 7 lists exactly the
    snapshots that two plans (base, current) say go from kept to not kept, exits 3, and
    sends nothing; --base with a copy of the base folder says the same."""
    before = plan_kept(repo, "base")
    shutil.copytree(repo.folder / "policies", repo.folder / "old")
    repo.edit("daily: 7 ", "daily: 3 ")
    after = plan_kept(repo, "new")
    expected = {s for s, was in before.items() if was and not after[s]}

    code, document = diff_json(repo, capsys, "--base", "git:HEAD")
    from_folder, by_folder = diff_json(repo, capsys, "--base", str(repo.folder / "old"))

    assert len(expected) >= 4
    assert code == from_folder == 3
    assert document["exitCode"] == 3
    assert shifted(document, "stops keeping") == expected
    assert shifted(document, "newly keeps") == set()
    assert document["summary"]["snapshotsNoLongerKept"] == len(expected)
    # The same but where the base's holds are set: in a file of the folder or of the ref.
    assert unset(by_folder["clusters"]) == unset(document["clusters"])
    assert repo.sim.admin("patches") == {"patches": []}


def test_a_policy_that_keeps_more_exits_0_and_lists_the_newly_kept(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Keeping 14 dailies instead of 7 exits 0 and lists exactly the snapshots the current
    plan keeps that the base plan does not, with the restore points before and after."""
    before = plan_kept(repo, "base")
    repo.edit("daily: 7 ", "daily: 14 ")
    after = plan_kept(repo, "new")
    expected = {s for s, now in after.items() if now and not before[s]}

    code, document = diff_json(repo, capsys, "--base", "git:HEAD")

    assert expected
    assert code == document["exitCode"] == 0
    assert shifted(document, "newly keeps") == expected
    assert shifted(document, "stops keeping") == set()
    changed = document["clusters"][0]
    assert changed["restorePointsBefore"]["count"] < changed["restorePointsAfter"]["count"]
    assert document["unchangedClusters"] == (
        document["summary"]["clustersCompared"] - len(document["clusters"])
    )


def test_the_json_document_has_the_documented_keys(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json is one document with command, exitCode, base, evaluatedAt (UTC, Z),
    summary, clusters (each shift, ladders as restore points) and unchangedClusters."""
    repo.edit("daily: 7 ", "daily: 3 ")

    _, document = diff_json(repo, capsys, "--base", "git:HEAD")

    assert set(document) == {
        "command", "exitCode", "base", "currentPolicies", "evaluatedAt", "whatIf",
        "summary", "clusters", "unchangedClusters", "errors",
    }  # fmt: skip
    assert document["command"] == "diff"
    assert document["evaluatedAt"] == "2026-11-21T12:00:00Z"
    assert document["base"]["spec"] == "git:HEAD"
    assert len(document["base"]["commit"]) == 40
    cluster = document["clusters"][0]
    assert set(cluster["restorePointsAfter"]) >= {"count", "newest", "oldest", "tiers"}
    shift = cluster["shifts"][0]
    assert set(shift) == {
        "snapshotId", "created", "storageBytes", "shift", "before", "after",
        "deletableFrom", "held", "whyBefore", "whyAfter",
    }  # fmt: skip
    assert shift["deletableFrom"].endswith("Z")


def plan_holds(repo: Repo, name: str) -> dict[str, str]:
    """A plan of the working copy's policies: each cluster's max_expire_fraction hold, in
    its words, by cluster name."""
    out = repo.folder / name / "plan.json"
    assert repo.main("plan", "--out", str(out)) in {0, 3}
    head = json.loads(out.read_text())
    return {
        c["name"]: h["reason"]
        for c in head["clusters"]
        for h in c["holds"]
        if h["kind"] == "max_expire_fraction"
    }


def test_each_holds_count_says_the_side_it_is_from(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fraction hold on both sides with other counts is said twice, "hold before" in the
    words a plan of the base policies gives and "hold after" in those of the current ones
    (text, Markdown and JSON), never one count without its side."""
    before = plan_holds(repo, "base")
    repo.edit("daily: 7 ", "daily: 3 ")
    after = plan_holds(repo, "new")
    capsys.readouterr()

    _, document = diff_json(repo, capsys, "--base", "git:HEAD")
    assert repo.main("diff", "--base", "git:HEAD") == 3
    text = capsys.readouterr().out
    assert repo.main("diff", "--base", "git:HEAD", "--format", "markdown") == 3
    comment = capsys.readouterr().out

    both = [c for c in document["clusters"] if c["clusterName"] in before.keys() & after.keys()]
    assert both
    for cluster in both:
        name = cluster["clusterName"]
        assert before[name] != after[name]  # the sides count differently
        [was] = [h for h in cluster["holdsBefore"] if h["kind"] == "max_expire_fraction"]
        [now] = [h for h in cluster["holdsAfter"] if h["kind"] == "max_expire_fraction"]
        assert (was["reason"], now["reason"]) == (before[name], after[name])
        assert f"  hold before: {before[name]}\n  hold after: {after[name]}\n" in text
        assert f"- hold after: {after[name]}" in comment.replace("\\_", "_")
    assert "held today" not in text + comment


def test_markdown_and_text_start_with_the_summary(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pull-request comment opens with the verdict and the counts, then the clusters;
    the terminal text says the same in lines."""
    repo.edit("daily: 7 ", "daily: 3 ")
    capsys.readouterr()

    assert repo.main("diff", "--base", "git:HEAD", "--format", "markdown") == 3
    comment = capsys.readouterr().out
    assert repo.main("diff", "--base", "git:HEAD") == 3
    text = capsys.readouterr().out

    assert comment.startswith("## Retention policy diff\n")
    assert comment.index("**Verdict:** the new policies stop keeping") < comment.index("### ")
    assert "| snapshots no longer kept |" in comment
    assert "Verdict: the new policies stop keeping" in text
    assert "restore points after:" in text


@pytest.mark.parametrize("command", ["diff", "forecast"])
def test_a_base_that_does_not_validate_is_exit_2_naming_the_base(
    repo: Repo, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A base folder with a misspelt key, for diff and forecast --base alike: exit 2, the
    problem named with its side, nothing sent."""
    broken = repo.folder / "broken"
    broken.mkdir()
    (broken / "p.yaml").write_text("name: p\nkeep: {dayly: 3}\n")

    code = repo.main(command, "--base", str(broken))

    err = capsys.readouterr().err
    assert code == 2
    assert f"base policies ({broken}): {broken / 'p.yaml'}:2: keep.dayly" in err
    assert "current policies" not in err
    assert repo.sim.admin("patches") == {"patches": []}


def test_a_base_ref_that_does_not_validate_names_the_file_in_the_repository(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """A committed policy that does not validate, fixed in the working copy: the base side
    is named with its ref and the file's path in the repository."""
    repo.edit("daily: 7 ", "dayly: 7 ")
    git(repo.folder, "commit", "-qam", "broken")
    repo.edit("dayly: 7 ", "daily: 7 ")

    code = repo.main("diff", "--base", "git:HEAD")

    err = capsys.readouterr().err
    assert code == 2
    assert "base policies (git:HEAD): policies/production.yaml:" in err
    assert "keep.dayly" in err


def test_current_policies_that_do_not_validate_are_exit_2_naming_them(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """The working copy's policy does not validate: exit 2, named as the current side."""
    repo.edit("daily: 7 ", "dayly: 7 ")

    code = repo.main("diff", "--base", "git:HEAD")

    err = capsys.readouterr().err
    assert code == 2
    assert f"current policies: {repo.folder / PRODUCTION}:" in err
    assert "base policies" not in err
    assert repo.sim.admin("patches") == {"patches": []}


@pytest.mark.parametrize(
    ("base", "says"),
    [
        ("git:nonexistent-ref", "no commit 'nonexistent-ref' in the git repository"),
        ("git:", "give a git ref after git:"),
        ("no-such-folder", "--base no-such-folder: no such folder or file"),
    ],
)
def test_a_bad_base_is_exit_2(
    repo: Repo, capsys: pytest.CaptureFixture[str], base: str, says: str
) -> None:
    """A ref that names no commit, an empty ref or a missing folder: exit 2, said plainly."""
    code = repo.main("diff", "--base", base)

    assert code == 2
    assert says in capsys.readouterr().err
    assert repo.sim.admin("patches") == {"patches": []}


def test_git_base_outside_a_git_repository_is_exit_2(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Policies in a folder no git repository holds, compared with git:main: exit 2."""
    shutil.rmtree(repo.folder / ".git")

    code = repo.main("diff", "--base", "git:main")

    assert code == 2
    assert "are not in a git repository" in capsys.readouterr().err
    assert repo.sim.admin("patches") == {"patches": []}


def test_git_missing_is_exit_2(
    repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a git binary on PATH, git:REF is refused with exit 2 and says why."""
    monkeypatch.setenv("PATH", str(repo.folder / "no-bin"))

    code = repo.main("diff", "--base", "git:HEAD")

    assert code == 2
    assert "git is not installed" in capsys.readouterr().err
