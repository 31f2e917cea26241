"""docs/reviewing.md's CI jobs are YAML that runs the review as documented: the whole
history fetched, a read-only key from secrets, `retention diff --base git:... --format
markdown` with arguments the command line takes. (actionlint does not install here, so the
GitHub workflow is checked by these structural assertions instead.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from retention.cli import cli

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reviewing.md"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks() -> list[dict[str, Any]]:
    """The YAML blocks of the page, parsed."""
    return [yaml.safe_load(b) for b in YAML_BLOCK.findall(PAGE.read_text(encoding="utf-8"))]


def diff_arguments(script: str) -> list[str]:
    """The arguments of the `retention diff` line of a shell script, variables as words."""
    [line] = [ln for ln in script.splitlines() if ln.strip().startswith("retention diff")]
    words = shlex.split(line.split(">")[0])
    return words[2:]


def parses(arguments: list[str]) -> dict[str, Any]:
    """The options `retention diff` reads from ``arguments`` (click's parser, not run)."""
    command = cli.commands["diff"]
    with command.make_context("diff", arguments, obj={}, resilient_parsing=False) as ctx:
        return dict(ctx.params)


def test_the_github_workflow_fetches_history_and_posts_the_markdown() -> None:
    """The GitHub job checks out with fetch-depth 0, takes the key from secrets, runs diff
    against the pull request's base as Markdown, and may write pull-request comments."""
    workflow = blocks()[0]
    steps = workflow["jobs"]["diff"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    review = next(s for s in steps if "retention diff" in s.get("run", ""))

    assert checkout["with"]["fetch-depth"] == 0
    assert workflow["permissions"]["pull-requests"] == "write"
    assert review["env"]["RETENTION_PUBLIC_KEY"].startswith("${{ secrets.")
    assert review["env"]["RETENTION_PRIVATE_KEY"].startswith("${{ secrets.")
    params = parses(diff_arguments(review["run"]))
    assert params["base"] == "git:origin/${BASE_REF}"
    assert params["output"] == "markdown"
    assert any("gh pr comment" in s.get("run", "") for s in steps)


def test_the_gitlab_job_fetches_history_and_posts_the_markdown() -> None:
    """The GitLab job clones the whole history, runs diff against the merge request's target
    branch as Markdown, posts a note, and lets exit 3 through as a warning."""
    job = blocks()[1]["retention-diff"]
    script = "\n".join(job["script"])

    assert job["variables"]["GIT_DEPTH"] == "0"
    params = parses(diff_arguments(script))
    assert params["base"] == "git:origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"
    assert params["output"] == "markdown"
    assert "/merge_requests/$CI_MERGE_REQUEST_IID/notes" in script
    assert job["allow_failure"]["exit_codes"] == [3]


def test_an_unknown_option_would_fail_the_check() -> None:
    """The parser the tests above lean on refuses an option diff does not have."""
    with pytest.raises(click.UsageError, match="--frobnicate"):
        parses(["--base", "git:main", "--frobnicate"])
