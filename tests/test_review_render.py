"""How a review is worded: the pull-request comment's size and order, what is counted and
not listed, the cut lines, names escaped, and which exit code wins."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from retention.config.baseline import Baseline
from retention.core.compare import ClusterDiff, Shift, SnapshotShift
from retention.core.model import Hold, Target
from retention.core.policy.loader import PolicySet
from retention.core.restorepoints import ladder_of
from retention.diff.render import MARKDOWN_BUDGET, TABLE_ROWS, markdown, text_lines
from retention.diff.review import Review
from retention.library.reading import Reviewed

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
BASE = Baseline("git:origin/main", "git", "/repo", PolicySet([]), "origin/main", "a" * 40)


def shift(n: int, kind: Shift = "stops keeping") -> SnapshotShift:
    created = NOW - timedelta(days=n + 1)
    return SnapshotShift(
        f"{n:024x}",
        created,
        3 * 2**30,
        kind,
        "kept",
        "let go" if kind == "stops keeping" else "kept",
        NOW + timedelta(days=1) if kind == "stops keeping" else None,
        None,
        f"production: daily #{n} of 7 (daily snapshot), until 2026-12-01T00:00:00Z",
        "no keep rule matches",
    )


def cluster(i: int, shifts: int, name: str | None = None) -> ClusterDiff:
    points = [NOW - timedelta(hours=6 * k) for k in range(40)]
    return ClusterDiff(
        Target("5e2211c17a3e5a48f5497de3", f"{i:024x}", name or f"prod-{i:04d}"),
        ["production"],
        ["production"],
        [shift(n) for n in range(shifts)],
        holds_added=[Hold("max_expire_fraction", "12 of 20 snapshots would expire (60%)")],
        ladder_before=ladder_of(points),
        ladder_after=ladder_of(points[:10]),
    )


def review(diffs: list[ClusterDiff], unchanged: int = 0, errors: int = 0) -> Review:
    return Review(
        NOW,
        diffs,
        compared=len(diffs) + unchanged,
        unchanged=unchanged,
        errors=[f"cluster {i:024x}: GET snapshots: failed (HTTP 500)" for i in range(errors)],
    )


def test_the_comment_for_200_clusters_stays_under_the_budget_and_starts_with_the_summary() -> None:
    """200 changed clusters of 30 snapshots each: the Markdown is under 60,000 characters,
    opens with the summary and verdict, lists the largest clusters it has room for, and
    ends saying how many more clusters the JSON has."""
    diffs = [cluster(i, 30) for i in range(200)]

    comment = markdown(review(diffs, unchanged=12), BASE, what_if=False)

    shown = comment.count("\n### ")
    assert len(comment) < MARKDOWN_BUDGET
    assert comment.startswith("## Retention policy diff\n")
    assert comment.index("| clusters changed | 200 of 212") < comment.index("\n### ")
    assert "**Verdict:** the new policies stop keeping 6000 snapshots in 200 clusters" in comment
    assert 10 < shown < 200
    assert comment.rstrip().endswith(
        f"{200 - shown} more clusters in the JSON (`retention diff --format json`)."
    )


def test_a_cluster_shows_at_most_ten_snapshots_and_says_how_many_more() -> None:
    """A cluster of 25 shifts shows TABLE_ROWS rows and "15 more snapshots"."""
    comment = markdown(review([cluster(1, 25)]), BASE, what_if=False)

    rows = [line for line in comment.splitlines() if line.startswith("| `")]
    assert len(rows) == TABLE_ROWS
    assert "15 more snapshots in the JSON (`retention diff --format json`)." in comment
    assert "more cluster" not in comment


def test_unchanged_clusters_are_counted_not_listed() -> None:
    """Clusters without a change appear only in the count, in the comment and the text."""
    diffs = [cluster(1, 2, name="prod-orders")]

    comment = markdown(review(diffs, unchanged=7), BASE, what_if=False)
    text = "\n".join(text_lines(review(diffs, unchanged=7), BASE, what_if=False))

    for words in (comment, text):
        assert "1 of 8 (7 unchanged, not listed)" in words
        assert words.count("prod-") == 1


def test_nothing_changed_says_so() -> None:
    """A change that moves no snapshot and no hold says so in its verdict."""
    text = text_lines(review([], unchanged=5), BASE, what_if=False)

    assert "Verdict: no snapshot changes fate and no hold changes." in text


def test_names_from_the_service_cannot_break_the_comment() -> None:
    """A cluster named with table and HTML characters is escaped in the Markdown."""
    comment = markdown(review([cluster(1, 1, name="a|b<img src=x>`")]), BASE, what_if=False)

    assert "### a\\|b&lt;img src=x&gt;\\`" in comment
    assert "<img" not in comment


def test_errors_are_listed_after_the_clusters() -> None:
    """Walk errors are said, with the note that their clusters are missing from the diff."""
    comment = markdown(review([cluster(1, 1)], errors=2), BASE, what_if=False)

    assert comment.index("### prod-0001") < comment.index("**Errors**")
    assert comment.count("HTTP 500") == 2


@pytest.mark.parametrize(
    ("shifts", "errors", "code"),
    [(1, 0, 3), (1, 1, 3), (0, 1, 1), (0, 0, 0)],
)
def test_stopping_to_keep_wins_over_a_walk_error(shifts: int, errors: int, code: int) -> None:
    """Exit 3 when the new policies stop keeping a snapshot, even with a walk error (what a
    reviewer must see); 1 for a walk error alone; 0 otherwise."""
    diffs = [cluster(1, shifts)] if shifts else []
    reviewed = Reviewed(review(diffs, errors=errors), BASE, PolicySet([]), what_if=False)

    assert reviewed.code == code
