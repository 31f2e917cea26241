"""The documentation users have is the repository: no user-facing file points outside it,
and every key of a policy and of retention.yaml is in docs/."""

from __future__ import annotations

import json
import re
import typing
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from markupsafe import escape
from pydantic import BaseModel

from retention import cli
from retention.config.policyfiles import load_policies
from retention.config.settings import RetentionConfig, config_json_schema
from retention.core import glossary
from retention.core.model import Action, Hold, State
from retention.core.planfile import OutsideChangeEntry
from retention.core.policy.model import Policy, policy_json_schema
from retention.core.runfiles import OutcomeName
from retention.ops.metrics import RunMetrics, write_textfile
from retention.report import RunInfo, render_reports
from retention.report.summary import NOT_SENT
from retention.runfolder.schema import plan_json_schema
from tests.support.planfiles import write_plan_files

ROOT = Path(__file__).parent.parent
USER_FACING = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "retention.example.yaml",
    *sorted((ROOT / "policies").iterdir()),
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "deploy").rglob("*.yaml")),
]


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_facing_files_point_nowhere_outside_the_repository(path: Path) -> None:
    """Users have only the repository: no file they read sends them to the design notes."""
    text = path.read_text(encoding="utf-8")

    assert "DESIGN.md" not in text
    assert "../shared" not in text


def keys(model: type[BaseModel]) -> set[str]:
    """Every field name of a model and of the models inside it."""
    found: set[str] = set()
    for name, info in model.model_fields.items():
        found.add(name)
        for inner in (info.annotation, *getattr(info.annotation, "__args__", ())):
            for arg in (inner, *getattr(inner, "__args__", ())):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    found |= keys(arg)
    return found


@pytest.mark.parametrize(
    ("model", "doc"),
    [(Policy, "policies.md"), (RetentionConfig, "configuration.md")],
    ids=["policy", "configuration"],
)
def test_every_key_is_documented(model: type[BaseModel], doc: str) -> None:
    """A key the schema has but the docs do not name fails this test."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")

    missing = sorted(k for k in keys(model) if f"{k}:" not in text)

    assert missing == []


@pytest.mark.parametrize(
    ("model", "doc"),
    [(Policy, "policies.md"), (RetentionConfig, "configuration.md")],
    ids=["policy", "configuration"],
)
def test_the_docs_name_no_key_the_schema_lacks(model: type[BaseModel], doc: str) -> None:
    """Every key the docs write (a YAML line `key: ...` in an example, or `key:` in running
    text) is a key of the schema: a renamed or removed key cannot linger in the docs."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    in_yaml = re.findall(r"^\s*(?:- )?([a-z_]+):(?:\s|$)", text, flags=re.MULTILINE)
    in_text = re.findall(r"`([a-z_]+):(?:[ `])", text)

    unknown = sorted({*in_yaml, *in_text} - keys(model))

    assert unknown == []


def test_the_example_policy_in_the_docs_is_a_valid_policy(tmp_path: Path) -> None:
    """The policy example users copy from docs/policies.md loads without a problem."""
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.yaml").write_text(example)

    loaded = load_policies(tmp_path)

    assert [p.policy.name for p in loaded] == ["production"]


def test_the_glossary_doc_is_the_one_generated_from_the_code() -> None:
    """docs/glossary.md is what `python -m retention.report.glossary` writes: the docs and the
    report's "Words used here" say the same thing."""
    assert (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8") == glossary.markdown()


def test_every_word_the_plan_and_the_executor_use_has_an_entry() -> None:
    """Each state, action, hold kind, kind of change made outside retention and PATCH
    outcome of the code is in the glossary, so a word a reader meets in a report or a file
    can always be looked up."""
    # The hints resolved: under `from __future__ import annotations` an annotation is a
    # string, whose Literal's arguments get_args cannot see.
    hold_kinds = typing.get_args(typing.get_type_hints(Hold)["kind"])
    outside_kinds = typing.get_args(typing.get_type_hints(OutsideChangeEntry)["kind"])
    words = {
        *typing.get_args(State),
        *typing.get_args(Action),
        *typing.get_args(OutcomeName),
        *hold_kinds,
        *outside_kinds,
        *NOT_SENT,
    }

    assert {"max_expire_fraction", "outside"} <= set(hold_kinds)
    assert {"changed", "deleted-early", "gone"} == set(outside_kinds)
    assert sorted(words - set(glossary.terms())) == []


def test_the_report_carries_the_glossary(tmp_path: Path) -> None:
    """report.html has a "Words used here" section with every term and its meaning."""
    scenario = ROOT / "tests" / "scenarios" / "steady_state_mixed_fleet"
    head = json.loads((scenario / "expected.plan.json").read_text())
    lines = (scenario / "expected.decisions.jsonl").read_text().splitlines()
    write_plan_files(tmp_path / "plan.json", head, map(json.loads, lines))
    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    (page,) = render_reports(tmp_path, RunInfo("1a2b3c4d", "dry-run", now, now, 0, "0"), ["html"])
    html = page.read_text(encoding="utf-8")
    section = html[html.index('<section id="glossary">') :]

    for term, meaning in glossary.terms().items():
        assert f"<dt>{escape(term)}</dt><dd>{escape(meaning)}</dd>" in section


def test_what_users_see_of_the_code_points_nowhere_outside_the_repository(
    tmp_path: Path,
) -> None:
    """JSON Schemas (editors show their descriptions) and metric help texts (in every .prom
    file and Pushgateway) do not send users to the design notes they do not have."""
    now = datetime(2026, 11, 21, tzinfo=UTC)
    write_textfile(tmp_path / "m.prom", RunMetrics(now, now, 0))
    texts = [
        json.dumps(policy_json_schema()),
        json.dumps(config_json_schema()),
        json.dumps(plan_json_schema()),
        (tmp_path / "m.prom").read_text(),
    ]

    assert [t for t in texts if "DESIGN" in t or "../shared" in t] == []


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every runnable command of the command line, as words: "plan", "config show"."""
    paths: list[str] = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            paths += command_paths(command, (*prefix, name))
        else:
            paths.append(" ".join((*prefix, name)))
    return paths


@pytest.mark.parametrize("command", command_paths(cli.cli))
def test_every_command_has_an_example_in_the_docs(command: str) -> None:
    """docs/commands.md shows each command as a line a user can copy, in an indented block."""
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")

    examples = [line.strip() for line in text.splitlines() if line.startswith("    ")]
    assert any(re.match(rf"(\w+=\S+ )*retention {re.escape(command)}\b", e) for e in examples)


def test_the_readme_links_every_docs_page() -> None:
    """The README is the short way in: it links each page of docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    missing = [
        p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in readme
    ]
    assert missing == []
