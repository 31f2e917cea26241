"""Loading policy folders and files: every problem at once, with file, line and field path."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from retention.config.policyfiles import load_policies
from retention.core.policy import spec
from retention.core.policy.loader import LoadedPolicy, PolicySet
from retention.errors import EXIT_USAGE, ConfigError, PolicyError

EXAMPLES = Path(__file__).resolve().parent.parent / "policies"

PROD = """\
name: prod
match:
  clusters: ["prod-*"]
keep:
  last: 3
  daily: 7
"""

LIST = """\
- name: dev
  match: {clusters: ["dev-*"]}
  keep: {last: 2}
- name: analytics
  match: {clusters: ["analytics-*", "prod-*"]}
  keep: {monthly: 13}
"""


def write(folder: Path, name: str, text: str) -> Path:
    """Write a policy file (dedented) into ``folder`` and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(source: Path | list[Path]) -> list[str]:
    """The problems load_policies reports for ``source`` (it must fail)."""
    with pytest.raises(PolicyError) as caught:
        load_policies(source)
    return caught.value.problems


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in a temporary directory, so paths in problems read as given (policies/...)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_folder_with_a_mapping_file_and_a_list_file(here: Path) -> None:
    """A folder's mapping and list files load into one set sorted by name, with their indexes."""
    write(here / "policies", "prod.yaml", PROD)
    write(here / "policies", "team.yml", LIST)
    policies = load_policies(Path("policies"))
    assert len(policies) == 3
    assert [(p.name, p.path, p.index) for p in policies] == [
        ("analytics", Path("policies/team.yml"), 1),
        ("dev", Path("policies/team.yml"), 0),
        ("prod", Path("policies/prod.yaml"), 0),
    ]
    assert policies.by_name["prod"].policy.keep_spec() == spec.KeepSpec(last=3, daily=7)
    assert list(policies.by_name) == ["analytics", "dev", "prod"]


def test_where_names_the_file_and_line_of_a_setting(here: Path) -> None:
    """where() gives FILE:LINE of a key the file sets, within its own item of a list file,
    and the policy's name line marked as the default when the file leaves the key out."""
    write(
        here / "policies",
        "team.yaml",
        """\
        - name: dev
          keep: {last: 2}
        - name: prod
          keep:
            daily: 7
          safety:
            max_expire_fraction: 0.3
        """,
    )
    policies = load_policies(Path("policies")).by_name
    assert policies["prod"].where("safety.max_expire_fraction") == "policies/team.yaml:7"
    assert policies["prod"].where("keep.daily") == "policies/team.yaml:5"
    assert policies["dev"].where("safety.max_expire_fraction") == (
        "policies/team.yaml:1 (default max_expire_fraction)"
    )
    assert policies["prod"].where("safety.hold_on_alerts") == (
        "policies/team.yaml:3 (default hold_on_alerts)"
    )


def test_explicit_files_are_loaded_as_given(here: Path) -> None:
    """A list of files loads exactly those files, whatever their suffix."""
    one = write(here, "one.policy", PROD)
    two = write(here, "two.yaml", LIST)
    assert [p.name for p in load_policies([one, two])] == ["analytics", "dev", "prod"]
    assert [p.name for p in load_policies(one)] == ["prod"]


def test_sha256_is_the_digest_of_the_file_bytes(here: Path) -> None:
    """Each loaded policy carries the sha256 hex digest of its file's bytes."""
    path = write(here / "policies", "team.yaml", LIST)
    digests = {p.sha256 for p in load_policies(Path("policies"))}
    assert digests == {hashlib.sha256(path.read_bytes()).hexdigest()}


def test_matching_returns_every_matching_policy_sorted(here: Path) -> None:
    """matching() returns all policies whose selector matches, sorted by name."""
    write(here / "policies", "prod.yaml", PROD)
    write(here / "policies", "team.yaml", LIST)
    policies = load_policies(Path("policies"))
    assert [p.name for p in policies.matching("p1", "prod-orders", "cluster")] == [
        "analytics",
        "prod",
    ]
    assert [p.name for p in policies.matching("p1", "dev-sandbox", "cluster")] == ["dev"]
    assert policies.matching("p1", "staging-orders", "cluster") == []


def test_policy_set_refuses_duplicate_names(here: Path) -> None:
    """A PolicySet built by hand refuses two policies of the same name."""
    write(here / "policies", "prod.yaml", PROD)
    [prod] = load_policies(Path("policies"))
    twin = LoadedPolicy(prod.policy, Path("other.yaml"), prod.sha256)
    with pytest.raises(ValueError, match="unique"):
        PolicySet([prod, twin])


def test_unknown_key_with_suggestion_and_line(here: Path) -> None:
    """A misspelt key is reported with its file, line, field path and the likely intended key."""
    write(
        here / "policies",
        "prod.yaml",
        """\
        # Production
        name: prod
        match:
          clusters: ["prod-*"]
        keep:
          last: 3
          dayly: 7
        """,
    )
    with pytest.raises(PolicyError) as caught:
        load_policies(Path("policies"))
    assert str(caught.value) == "1 problem in policies"
    assert caught.value.problems == [
        "policies/prod.yaml:7: keep.dayly: unknown field; did you mean 'daily'?"
    ]
    assert caught.value.exit_code == EXIT_USAGE
    assert isinstance(caught.value, ConfigError)


def test_unknown_key_without_close_match_lists_allowed_keys(here: Path) -> None:
    """An unknown key with no close match lists the keys that are allowed there."""
    write(here, "p.yaml", "name: p\nkeep: {daily: 1}\nsafety: {foo: 1}\n")
    assert problems_of(here / "p.yaml") == [
        f"{here}/p.yaml:3: safety.foo: unknown field "
        "(allowed: hold_on_alerts, hold_on_outside_change, max_expire_fraction, min_keep)"
    ]


def test_several_files_with_several_problems_are_all_reported(here: Path) -> None:
    """Every problem of every file is reported in one error, in file order then line order."""
    write(
        here / "policies",
        "a.yaml",
        """\
        name: a
        keep:
          last: -2
          within: 7x
          every:
            - cron: "0 0 * *"
              count: 4
        timezone: Europe/Berln
        """,
    )
    write(
        here / "policies",
        "b.yaml",
        """\
        - name: b
          keep: {daily: true}
          grace: 5
        - name: c
          keep: {daily: 1}
          inconsistent: delete
          safety: {max_expire_fraction: 2}
        - name: d
        """,
    )
    with pytest.raises(PolicyError) as caught:
        load_policies(Path("policies"))
    assert str(caught.value) == "9 problems in policies"
    assert caught.value.problems == [
        "policies/a.yaml:3: keep.last: must be -1 (unlimited) or a number >= 0",
        "policies/a.yaml:4: keep.within: '7x' is not a duration: use numbers with y (years), "
        "m (months), d (days), h (hours), e.g. 36h, 7d, 1y6m",
        "policies/a.yaml:6: keep.every[0].cron: '0 0 * *' is not a valid cron expression "
        "(5 fields: minute hour day month weekday)",
        "policies/a.yaml:8: timezone: unknown time zone 'Europe/Berln'; did you mean "
        "'Europe/Berlin'?",
        "policies/b.yaml:2: [0].keep.daily: must be a whole number, not true",
        "policies/b.yaml:3: [0].grace: 5 is not a duration: give a number with a unit, "
        "e.g. 24h, 7d or 1y6m",
        "policies/b.yaml:6: [1].inconsistent: must be 'ignore' or 'expire', not 'delete'",
        "policies/b.yaml:7: [1].safety.max_expire_fraction: must be between 0 and 1, not 2",
        "policies/b.yaml:8: [2]: a policy must keep or protect something; an empty policy "
        "would expire every snapshot it matches",
    ]


def test_missing_field_points_at_its_mapping(here: Path) -> None:
    """A missing required key is reported at the line of the mapping that lacks it."""
    write(
        here,
        "p.yaml",
        """\
        name: p
        keep:
          every:
            - count: 4
        """,
    )
    assert problems_of(here / "p.yaml") == [f"{here}/p.yaml:4: keep.every[0].cron: required"]


def test_duplicate_names_across_files_name_both_files(here: Path) -> None:
    """Two policies with one name are refused, naming both files and lines."""
    write(here / "policies", "a.yaml", PROD)
    write(
        here / "policies",
        "b.yaml",
        """\
        - name: other
          keep: {last: 1}
        - name: prod
          keep: {daily: 1}
        """,
    )
    assert problems_of(Path("policies")) == [
        "policies/b.yaml:3: [1].name: duplicate policy name 'prod' (also in policies/a.yaml:1: "
        "name)"
    ]


def test_duplicate_yaml_keys_are_reported(here: Path) -> None:
    """A key given twice in one mapping (which YAML would silently collapse) is a problem."""
    write(here, "p.yaml", "name: p\nkeep:\n  daily: 7\n  daily: 1\n")
    assert problems_of(here / "p.yaml") == [
        f"{here}/p.yaml:4: keep.daily: duplicate key (first on line 3)"
    ]


def test_yaml_syntax_error_has_its_line(here: Path) -> None:
    """A YAML syntax error is reported with the line where the parser found it."""
    write(here / "policies", "bad.yaml", "name: p\nkeep:\n  daily: 7\n last: 3\nx: y\n")
    assert problems_of(Path("policies")) == [
        "policies/bad.yaml:4: YAML syntax error: while parsing a block mapping, "
        "expected <block end>, but found '<block mapping start>'"
    ]


def test_several_documents_in_one_file_are_refused(here: Path) -> None:
    """A file with two YAML documents is refused at the second one."""
    write(here, "p.yaml", "name: a\nkeep: {daily: 1}\n---\nname: b\n")
    assert problems_of(here / "p.yaml") == [
        f"{here}/p.yaml:3: YAML syntax error: expected a single document in the stream, "
        "but found another document"
    ]


def test_python_tags_are_refused(here: Path) -> None:
    """A !!python tag is refused (safe loading only) and nothing it names is run."""
    marker = here / "pwned"
    write(
        here,
        "p.yaml",
        f"""\
        name: p
        keep: {{daily: 1}}
        description: !!python/object/apply:os.system ["touch {marker}"]
        """,
    )
    assert problems_of(here / "p.yaml") == [
        f"{here}/p.yaml:3: the tag '!!python/object/apply:os.system' is not allowed: "
        "write plain YAML"
    ]
    assert not marker.exists()


def test_empty_folder_says_where_it_looked(here: Path) -> None:
    """A folder without policy files is refused, naming the folder."""
    (here / "policies").mkdir()
    write(here / "policies", "README.md", "# not a policy\n")
    write(here / "policies", ".hidden.yaml", PROD)
    assert problems_of(Path("policies")) == [
        "policies: no policy files (*.yaml, *.yml) in this directory"
    ]


def test_missing_folder_and_empty_file_list(here: Path) -> None:
    """A folder that does not exist and an empty list of files are both problems."""
    assert problems_of(Path("nowhere")) == ["nowhere: no such file or directory"]
    assert problems_of([]) == ["no policy files given"]


def test_non_utf8_file_is_refused(here: Path) -> None:
    """A file that is not UTF-8 is refused with the line of the first bad byte."""
    path = here / "p.yaml"
    path.write_bytes(b"name: p\ndescription: caf\xe9\nkeep: {daily: 1}\n")
    assert problems_of(path) == [f"{path}:2: not UTF-8 text (byte 0xe9); save it as UTF-8"]


def test_utf8_byte_order_mark_is_accepted(here: Path) -> None:
    """A UTF-8 file with a byte order mark (as some editors save) loads."""
    path = here / "p.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: p\nkeep: {daily: 1}\n")
    assert [p.name for p in load_policies(path)] == ["p"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "# only a comment\n",
            "p.yaml: empty file: expected a policy (a mapping) or a list of policies",
        ),
        (
            "just words\n",
            "p.yaml:1: the top level must be a policy (a mapping) or a list of policies, not text",
        ),
        ("- 5\n", "p.yaml:1: [0]: must be a mapping of keys to values, not 5"),
    ],
)
def test_file_must_hold_a_mapping_or_a_list_of_mappings(
    here: Path, text: str, problem: str
) -> None:
    """A file that is empty, a scalar, or a list of non-mappings is refused."""
    write(here, "p.yaml", text)
    assert problems_of(Path("p.yaml")) == [problem]


def test_quoted_hint_for_yaml_booleans(here: Path) -> None:
    """A name YAML reads as a boolean gets the hint to quote it."""
    write(here, "p.yaml", "name: yes\nkeep: {daily: 1}\n")
    assert problems_of(Path("p.yaml")) == [
        "p.yaml:1: name: must be text, not true (put it in quotes to make it text)"
    ]


def test_example_policies_load_and_match_the_demo_fleet() -> None:
    """The shipped examples load, and the demo clusters match the intended policy only."""
    policies = load_policies(EXAMPLES)
    assert list(policies.by_name) == ["compliance", "compliance-audit-project", "dev", "production"]

    def names(cluster: str) -> list[str]:
        return [p.name for p in policies.matching("65a1b2c3d4e5f60718293a4b", cluster, "cluster")]

    assert names("prod-orders") == ["production"]
    assert names("prod-billing") == ["production"]
    assert names("dev-sandbox") == ["dev"]
    assert names("analytics-events") == ["compliance"]
    assert names("staging-orders") == []
    production = policies.by_name["production"].policy
    assert production.safety.min_keep == 3
    assert str(production.grace) == "24h"
    assert production.timezone == "Europe/Berlin"
    assert policies.by_name["dev"].policy.safety.max_expire_fraction == 0.8
