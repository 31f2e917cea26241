"""The ids a plan can carry (retention.core.ids): the rule in words, its regular expression,
the plan file's model and the shipped JSON Schema all say the same, and the client encodes
every id the rule carries into exactly one path segment."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from retention.api.endpoints import PATCH_SNAPSHOT, build_path
from retention.core.ids import MAX_ID_LENGTH, carries, id_problem
from retention.core.planfile import CHANGE, DECISION
from retention.runfolder.schema import plan_json_schema

CARRIED = [
    "5e4e593f70dfbf1e2f6e1d30",
    "a b",
    "x:y@z",
    "ü",
    "50%",
    "%2F",
    "%2e%2e",
    "a+b=c&d",
    "?#[]",
    "...",
    ".a",
    "..a",
    "a.",
    "名前🗄️",
    " ",
    "x" * MAX_ID_LENGTH,
]
HELD = {
    "": "it is empty",
    ".": "it is a dot segment",
    "..": "it is a dot segment",
    "5e4e/../../../alerts": "it holds '/'",
    "a\\b": "it holds '\\\\'",
    "x" * (MAX_ID_LENGTH + 1): f"it is {MAX_ID_LENGTH + 1} characters long",
    "tab\there": "U+0009",
    "line\n": "U+000A",
    "nul\x00": "U+0000",
    "esc\x1b[31m": "U+001B",
    "del\x7f": "U+007F",
    "c1\x85": "U+0085",
    "c1\x9f": "U+009F",
}

# Ids drawn from characters near every edge of the rule, and any text at all.
EDGES = "./\\ a%:\t\n\x00\x1f\x7f\x80\x9f\xa0ü\u2028🗄"
IDS = st.one_of(
    st.text(alphabet=EDGES, max_size=6),
    st.text(max_size=20),
    st.text(alphabet="a.", min_size=MAX_ID_LENGTH - 2, max_size=MAX_ID_LENGTH + 2),
)


# The ids the shipped schema constrains (a plan puts them in a path): a decision's project
# and cluster, named in apply's PATCH, and the head's projects and clusters' projects. A
# decision's snapshot id is any text there (a decision is written for every snapshot);
# the model checks it where it becomes a change, below.
ID_FIELDS = [
    ("DecisionRecord", "projectId"),
    ("DecisionRecord", "clusterId"),
    ("ClusterEntry", "projectId"),
    ("ProjectEntry", "projectId"),
]


def _id_schemas() -> list[dict[str, Any]]:
    """The shipped schema's definitions of the ids of ID_FIELDS, in that order."""
    defs: dict[str, Any] = plan_json_schema()["$defs"]
    return [defs[name]["properties"][field] for name, field in ID_FIELDS]


SCHEMAS = [jsonschema.Draft202012Validator(s) for s in _id_schemas()]


def _schema_accepts(value: str) -> bool:
    """Whether the shipped schema takes ``value`` as each id of ID_FIELDS; an AssertionError
    when the fields disagree."""
    answers = {v.is_valid(value) for v in SCHEMAS}
    assert len(answers) == 1, f"the schema's id fields disagree on {value!r}"
    return answers.pop()


def _accepts(adapter: TypeAdapter[Any], field: str, value: str) -> bool:
    """Whether the plan file's model (``adapter``) takes ``value`` as ``field``."""
    try:
        adapter.validate_python({field: value})
    except ValidationError as exc:
        return not any(e["loc"] == (field,) for e in exc.errors())
    return True


def _model_accepts(value: str) -> bool:
    """Whether the plan file's model takes ``value`` as a decision's cluster id and as the
    snapshot id of a change (what the reader checks of each decision that carries a body);
    an AssertionError when the two disagree."""
    cluster = _accepts(DECISION, "clusterId", value)
    snapshot = _accepts(CHANGE, "snapshotId", value)
    assert cluster is snapshot, f"the model's ids disagree on {value!r}"
    return cluster


def test_every_id_the_schema_constrains_is_one_definition() -> None:
    """The shipped schema constrains a decision's project and cluster ids and the head's
    project ids with one definition (their titles aside), bounded and patterned."""
    untitled = [{k: v for k, v in s.items() if k != "title"} for s in _id_schemas()]

    assert all(s == untitled[0] for s in untitled)
    assert untitled[0]["maxLength"] == MAX_ID_LENGTH
    assert untitled[0]["minLength"] == 1
    assert "pattern" in untitled[0]
    assert "not" in untitled[0]


@pytest.mark.parametrize("value", CARRIED)
def test_unusual_ids_are_carried(value: str) -> None:
    """Spaces, URL punctuation, percent signs, dots beside other characters and unicode are
    carried: no problem, in words or by the pattern."""
    assert id_problem(value) is None
    assert carries(value)


@pytest.mark.parametrize(("value", "why"), HELD.items())
def test_ids_that_cannot_be_one_segment_are_held_with_the_reason(value: str, why: str) -> None:
    """Empty, too long, dot segments, separators and C0, DEL and C1 characters each fail the
    rule, and the words say which."""
    problem = id_problem(value)

    assert problem is not None
    assert why in problem
    assert not carries(value)


@pytest.mark.parametrize("value", [*CARRIED, *HELD])
def test_the_rule_the_model_and_the_schema_agree_on_the_examples(value: str) -> None:
    """The plan file's model and the shipped schema accept exactly the ids the rule carries."""
    carried = id_problem(value) is None

    assert carries(value) is carried
    assert _model_accepts(value) is carried
    assert _schema_accepts(value) is carried


@given(IDS)
@example("abc\n")  # Python's "$" matches before a final newline; the schema still refuses
def test_the_rule_the_model_and_the_schema_agree_on_any_text(value: str) -> None:
    """For any text, the words, the pattern, the model and the schema give one answer."""
    carried = id_problem(value) is None

    assert carries(value) is carried
    assert _model_accepts(value) is carried
    assert _schema_accepts(value) is carried


@given(st.text(min_size=1, max_size=40).filter(carries))
@example("a b")
@example("x:y@z")
@example("ü")
@example("50%")
@example("...")
def test_every_carried_id_becomes_exactly_one_path_segment(value: str) -> None:
    """build_path puts a carried id into one segment that decodes back to it, and the
    template's other segments stay where they were."""
    path = build_path(PATCH_SNAPSHOT, ("p1", value, "s1"))
    segments = path.split("/")

    assert segments[:3] == ["", "groups", "p1"]
    assert segments[3] == "clusters"
    assert unquote(segments[4]) == value
    assert segments[5:] == ["snapshots", "s1"]
    assert segments[4] not in (".", "..")


@pytest.mark.parametrize("value", list(HELD))
def test_build_path_refuses_every_id_the_rule_does_not_carry(value: str) -> None:
    """The client never puts in a path an id a plan could not carry."""
    with pytest.raises(ValueError, match="cannot be part of a path"):
        build_path(PATCH_SNAPSHOT, ("p1", "c1", value))
