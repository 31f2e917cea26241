"""A grace written in m is 30 months, not 30 minutes: restic's units, so validate warns with
the file, line and field and the duration in words, and the exit code stays 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from retention.config.policyfiles import load_policies
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.loader import grace_warnings
from tests.support.planning import validate_file

POLICIES = """\
- name: fast
  keep:
    last: 3
  grace: 30m
- name: slow
  keep:
    last: 3
  grace: 30h
"""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("30m", "30 months"),
        ("1m", "1 month"),
        ("1y6m", "1 year and 6 months"),
        ("1y2m3d4h", "1 year, 2 months, 3 days and 4 hours"),
        ("0h", "0 hours"),
    ],
)
def test_a_duration_in_words(text: str, words: str) -> None:
    """Each unit of a duration is spelt out with its count, in the singular for one."""
    assert RetentionDuration.parse(text).words() == words


def test_a_grace_in_months_is_a_warning_naming_file_line_and_field(tmp_path: Path) -> None:
    """Only the policy whose grace has months is warned about, at the grace's own line."""
    path = tmp_path / "p.yaml"
    path.write_text(POLICIES)

    [warning] = grace_warnings(load_policies(path))

    assert warning.startswith(f"{path}:4: grace: ")
    assert "'30m' is 30 months" in warning
    assert "minutes" in warning


def test_validate_warns_about_a_grace_in_months_and_exits_0(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate prints the warning on stderr (and in its JSON document's warnings) and
    still exits 0: 30 months is a valid grace, only seldom the one meant."""
    code, err, json_code, document = validate_file(folder, POLICIES, capsys)

    where = f"{Path('policies') / 'p.yaml'}:4: grace: "
    assert (code, json_code) == (0, 0)
    assert f"warning: {where}" in err
    assert "30 months" in err
    assert [w for w in document["warnings"] if w.startswith(where)]
    assert "grace 30m (30 months)" in document["policies"][0]["description"]
