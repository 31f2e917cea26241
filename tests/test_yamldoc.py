"""Tests of retention.core.yamldoc and retention.core.validation: one parser and one
wording for the configuration and policies."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from retention.config.loading import load_config
from retention.config.policyfiles import load_policies
from retention.core import validation, yamldoc
from retention.errors import ConfigError, PolicyError
from tests.support.client import fixed_clock

ENV = {"RETENTION_PUBLIC_KEY": "pub", "RETENTION_PRIVATE_KEY": "priv"}
SECRETISH = "hunter2-Zq81-NEVER-SHOWN"


def _config_problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "retention.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=ENV, clock=fixed_clock)
    return caught.value.problems


def _policy_problems(tmp_path: Path, text: bytes) -> list[str]:
    path = tmp_path / "p.yaml"
    path.write_bytes(text)
    with pytest.raises(PolicyError) as caught:
        load_policies(path)
    return caught.value.problems


def _message(problem: str) -> str:
    """What a problem says, without where it is."""
    return problem.rsplit(": ", 1)[-1]


CONFIG_HEAD = "api:\n  base_url: https://om.test/api/public/v1.0\ntargets:\n  - project: p1\n"
POLICY_HEAD = "name: p\nmatch: {}\nkeep:\n  last: 3\n"


@pytest.mark.parametrize(
    ("config_tail", "policy_tail"),
    [
        ("reports:\n  dri: x\n", "grace: 1d\nsafety:\n  max_expire_fractoin: 0.5\n"),
        ("api2: 1\n", "keep2: 1\n"),
        ("schedule: [unclosed\n", "grace: [unclosed\n"),
        ("schedule: !!python/object:os.system x\n", "grace: !!python/object:os.system x\n"),
        ("reports:\n  dir: a\n  dir: b\n", "grace: 1d\ngrace: 2d\n"),
    ],
)
def test_the_configuration_and_policies_word_the_same_mistake_the_same_way(
    tmp_path: Path, config_tail: str, policy_tail: str
) -> None:
    """An unknown key, a syntax error, a tag or a doubled key reads the same in both files."""
    config = _config_problems(tmp_path, CONFIG_HEAD + config_tail)
    policy = _policy_problems(tmp_path, (POLICY_HEAD + policy_tail).encode())

    assert len(config) == len(policy) == 1
    words = _message(config[0]).split(";")[0].split(" (")[0]
    assert words == _message(policy[0]).split(";")[0].split(" (")[0]
    assert config[0].startswith("retention.yaml:")
    assert policy[0].startswith(f"{tmp_path}/p.yaml:")


def test_a_wrong_value_is_quoted_for_policies_and_never_for_the_configuration(
    tmp_path: Path,
) -> None:
    """The same type error says the value in a policy, and keeps it out of the configuration."""
    config = _config_problems(tmp_path, CONFIG_HEAD + f"reports:\n  formats: [{SECRETISH}]\n")
    policy = _policy_problems(tmp_path, (POLICY_HEAD + f"inconsistent: {SECRETISH}\n").encode())

    assert config == [
        "retention.yaml:6: reports.formats[0]: must be 'html' or 'markdown'",
    ]
    assert policy == [
        f"{tmp_path}/p.yaml:5: inconsistent: must be 'ignore' or 'expire', not '{SECRETISH}'",
    ]


def test_a_yaml_syntax_error_never_shows_the_text_around_it(tmp_path: Path) -> None:
    """PyYAML's snippet of the file is left out, so a secret on the broken line stays unsaid."""
    problems = _config_problems(tmp_path, CONFIG_HEAD + f'schedule: "{SECRETISH}\n')

    assert len(problems) == 1
    assert problems[0].startswith("retention.yaml:")
    assert "YAML syntax error" in problems[0]
    assert SECRETISH not in problems[0]


def test_a_missing_top_level_key_has_no_line_and_a_missing_nested_one_its_parent_line() -> None:
    """A key the document lacks points at the mapping that should hold it, or at no line."""
    document, problems = yamldoc.parse(b"# comment\na:\n  b:\n    c: 1\n", "a mapping")
    assert document is not None
    assert problems == []

    assert document.lines.find(("a", "b", "c")) == 4
    assert document.lines.find(("a", "b", "missing")) == 3
    assert document.lines.find(("missing",)) is None
    assert document.lines.find(()) == 2


def test_bounds_are_stated_as_a_range_when_the_field_has_both() -> None:
    """A number out of range names both ends of the range, or the one end the field has."""

    class Limits(BaseModel):
        both: int = Field(1, ge=1, le=64)
        low: float = Field(0.0, ge=0)

    _, problems = validation.validate(Limits, {"both": 65, "low": -1}, echo=False)

    assert [(p.field, p.message) for p in problems] == [
        ("both", "must be between 1 and 64"),
        ("low", "must be at least 0"),
    ]


def test_unknown_keys_of_an_aliased_model_are_matched_against_the_names_a_file_uses() -> None:
    """For a camelCase document the suggestion is the camelCase key, not the Python name."""

    class Snapshot(BaseModel):
        model_config = ConfigDict(extra="forbid", alias_generator=to_camel)
        do_not_delete: bool = False

    class Fleet(BaseModel):
        model_config = ConfigDict(extra="forbid", alias_generator=to_camel)
        snapshots: list[Snapshot] = []

    _, problems = validation.validate(Fleet, {"snapshots": [{"do_not_delete": True}]})

    assert [problem.at("f.yaml") for problem in problems] == [
        "f.yaml: snapshots[0].do_not_delete: unknown field; did you mean 'doNotDelete'?"
    ]


def test_the_top_level_is_named_by_its_kind_and_not_quoted() -> None:
    """A document of the wrong shape says what it is, without repeating its content."""
    for data, kind in [(b"- a\n", "a list"), (b"just words\n", "text"), (b"3\n", "a number")]:
        document, problems = yamldoc.parse(data, "a mapping", kinds=(dict,))
        assert document is None
        assert problems == [
            validation.Problem(1, None, f"the top level must be a mapping, not {kind}")
        ]


def test_a_date_that_is_no_date_is_a_problem_on_its_line() -> None:
    """PyYAML fails to build 2027-02-30 without saying where: the problem names its line."""
    document, problems = yamldoc.parse(b"name: p\nprotect:\n  until: 2027-02-30\n", "a policy")

    assert document is None
    assert problems == [
        validation.Problem(3, None, "not a valid date: day is out of range for month")
    ]
