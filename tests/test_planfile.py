"""Reading plan files back: entry by entry in the layout PlanBuilder writes, and whole when
someone re-saved the plan in another layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retention.plan.planfile import LISTS, read_entries, read_head

GOLDEN = (
    Path(__file__).parent / "scenarios" / "first_run_held_by_safety_gates" / "expected.plan.json"
)


def resaved(tmp_path: Path, **dump: object) -> Path:
    """The golden plan re-saved through json.dumps with the given options."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(json.loads(GOLDEN.read_text()), **dump) + "\n")  # type: ignore[arg-type]
    return path


def test_written_layout_puts_each_entry_on_a_line_of_its_own() -> None:
    """The lists hold one entry a line, so grep and diff see one change a line."""
    lines = GOLDEN.read_text().splitlines()
    held = json.loads(GOLDEN.read_text())["held"]

    entry_lines = [line for line in lines if line.startswith('    {"projectId": ')]

    assert len(held) > 1
    assert [json.loads(line.rstrip(",")) for line in entry_lines] == held


@pytest.mark.parametrize(
    "dump", [{}, {"indent": 2}, {"indent": 4}], ids=["compact", "indent2", "indent4"]
)
@pytest.mark.parametrize("name", LISTS)
def test_entries_and_head_read_the_same_whatever_the_layout(
    tmp_path: Path, name: str, dump: dict[str, object]
) -> None:
    """A plan re-saved compact or indented reads back to the same entries and head."""
    document = json.loads(GOLDEN.read_text())
    path = resaved(tmp_path, **dump)

    assert list(read_entries(path, name)) == document[name]
    assert list(read_entries(GOLDEN, name)) == document[name]
    assert read_head(path) == {k: v for k, v in document.items() if k not in LISTS}
    assert read_head(GOLDEN) == read_head(path)


def test_a_plan_file_that_is_not_an_object_is_refused_by_name(tmp_path: Path) -> None:
    """A JSON list where a plan should be is a ValueError that says what the file holds."""
    path = tmp_path / "plan.json"
    path.write_text("[1, 2]\n")

    with pytest.raises(ValueError, match="holds a JSON list, not a plan object"):
        read_head(path)
