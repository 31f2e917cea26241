"""Counts and their nouns agree everywhere: "1 check", "1 policy is valid", "2 policies"
(retention.core.wording.counted is the one helper)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retention import cli
from retention.core.wording import counted, plural


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [
        (1, "check", "1 check"),
        (2, "check", "2 checks"),
        (0, "check", "0 checks"),
        (1, "policy", "1 policy"),
        (4, "policy", "4 policies"),
        (3, "day", "3 days"),
        (2, "PATCH", "2 PATCHes"),
        (1, "hold record", "1 hold record"),
        (5, "hold record", "5 hold records"),
    ],
)
def test_a_count_takes_the_singular_only_for_one(count: int, noun: str, said: str) -> None:
    """counted() writes the singular for exactly one and the plural otherwise, with the
    spelling rules the project's nouns need (policy/policies, PATCH/PATCHes)."""
    assert counted(count, noun) == said


def test_a_rounded_one_is_singular() -> None:
    """A measured amount shown as 1 (1.0 hours) takes the singular, 1.5 the plural."""
    assert (plural("hour", 1.0), plural("hour", 1.5)) == ("hour", "hours")


def test_validate_says_one_policy_is_valid(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate of a folder with one policy says "1 policy is valid:", not "1 policies are"."""
    (folder / "policies").mkdir()
    (folder / "policies" / "p.yaml").write_text("name: p\nkeep: {last: 3}\n")

    code = cli.main(["validate", "--policies", "policies"])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("1 policy is valid:\n")
    assert "policies are" not in out


def test_doctor_counts_one_check_in_the_singular(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """doctor stopped by a missing configuration ran one check: "1 check: 1 failed,
    0 warnings.", not "1 checks"."""
    code = cli.main(["doctor", "--config", str(folder / "missing.yaml")])

    out = capsys.readouterr().out
    assert code == 2
    assert out.rstrip().endswith("1 check: 1 failed, 0 warnings.")
    assert "1 checks" not in out
