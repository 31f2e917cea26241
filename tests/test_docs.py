"""The documentation users have is the repository: no user-facing file points outside it,
and every key of a policy and of retention.yaml is in docs/."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from retention.config import RetentionConfig
from retention.policy.loader import load_policies
from retention.policy.model import Policy

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


def test_the_example_policy_in_the_docs_is_a_valid_policy(tmp_path: Path) -> None:
    """The policy example users copy from docs/policies.md loads without a problem."""
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.yaml").write_text(example)

    loaded = load_policies(tmp_path)

    assert [p.policy.name for p in loaded] == ["production"]
