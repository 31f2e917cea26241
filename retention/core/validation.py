"""Problems in a document, as values: where (line and field path) and what, in plain words.

The configuration, the policy files and the simulator's fleet files are YAML read by
people and validated by pydantic. The shell parses the YAML (``retention.core.yamldoc``)
into plain data and a table of the line of each key; here that data is validated and every
pydantic error becomes a ``Problem`` that reads the same in any of them:
``FILE:LINE: FIELD: MESSAGE``, e.g. ``policies/prod.yaml:7: keep.dayly: unknown field; did
you mean 'daily'?`` or ``retention.yaml:3: api.concurrency: must be between 1 and 64``. The
input is echoed ("must be a whole number, not 'ten'") only when the caller says the document
holds no secrets.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from retention.core.wording import counted, show_value

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Problem:
    """One problem in a document: its line (when known), field path (when any), message."""

    line: int | None
    field: str | None
    message: str

    def at(self, name: str) -> str:
        """The problem as a person reads it: ``NAME:LINE: FIELD: MESSAGE``."""
        where = f"{name}:{self.line}" if self.line is not None else name
        return ": ".join(part for part in (where, self.field, self.message) if part)


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """The problems by line, the way people fix them (those without a line first)."""
    return sorted(problems, key=lambda problem: problem.line or 0)


def field_path(loc: Loc) -> str | None:
    """A location as a reader writes it: ``targets[0].project``."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    return text.removeprefix(".") or None


class Lines:
    """Line numbers (1-based) of the keys and items of a document, by path (the parser of
    the document finds them)."""

    def __init__(self, lines: Mapping[Loc, int]) -> None:
        self._lines = dict(lines)

    def under(self, prefix: Loc) -> dict[str, int]:
        """The lines of the keys below ``prefix`` (one item of a list), by dotted path."""
        size = len(prefix)
        return {
            ".".join(map(str, loc[size:])): line
            for loc, line in self._lines.items()
            if len(loc) > size and loc[:size] == prefix
        }

    def problem(self, loc: Loc, message: str) -> Problem:
        """A problem at ``loc``: its line (or its nearest ancestor's) and its field path."""
        return Problem(self.find(loc), field_path(loc), message)

    def find(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor that the document has.

        A top-level key the document lacks has no line: pointing at the first line would
        send the reader to look for it there."""
        if not loc:
            return self._lines.get(())
        for end in range(len(loc), 0, -1):
            if loc[:end] in self._lines:
                return self._lines[loc[:end]]
        return None


def validate(  # noqa: PLR0913 - the one validator of every document: its model, data and lines, and how its problems are worded
    model: type[M],
    data: Any,
    lines: Lines | None = None,
    *,
    prefix: Loc = (),
    context: Mapping[str, Any] | None = None,
    echo: bool = True,
    hints: Mapping[Loc, str] | None = None,
) -> tuple[M | None, list[Problem]]:
    """``data`` validated by ``model``, or None and a problem for every error pydantic found.

    ``prefix`` is where ``data`` sits in the document (an item of a list); ``echo`` says
    whether messages may quote the input; ``hints`` adds a word to the message about a
    missing field (e.g. which environment variable can stand in for it).
    """
    try:
        return model.model_validate(data, context=context), []
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            message = describe(error, model, echo=echo)
            if hints and loc in hints and error["type"] == "missing":
                message += f" {hints[loc]}"
            where = prefix + loc
            problems.append(
                lines.problem(where, message)
                if lines is not None
                else Problem(None, field_path(where), message)
            )
        return None, problems


_TYPE_WORDS = {
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float"), "a whole number"),
    **dict.fromkeys(("float_type", "float_parsing", "finite_number"), "a number"),
    **dict.fromkeys(("bool_type", "bool_parsing"), "true or false"),
    "string_type": "text",
    "list_type": "a list",
    **dict.fromkeys(
        ("model_type", "model_attributes_type", "dict_type"), "a mapping of keys to values"
    ),
}
_FIXED = {
    "missing": "required",
    "invalid_key": "keys must be text",
    "string_too_short": "must not be empty",
}


def describe(error: ErrorDetails, root: type[BaseModel], *, echo: bool = True) -> str:
    """Pydantic's error record in plain words (the field path is shown beside it)."""
    kind, value = error["type"], error.get("input")
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    loc = tuple(error["loc"])
    shown = f", not {show_value(value)}" if echo else ""
    if kind == "extra_forbidden":
        message = _unknown_field(root, loc)
    elif kind in _FIXED:
        message = _FIXED[kind]
    elif kind in {"value_error", "assertion_error"}:
        # Our validators raise ValueError with a complete sentence; pydantic prefixes it.
        message = str(ctx.get("error", error["msg"]))
    elif kind in _TYPE_WORDS:
        message = f"must be {_TYPE_WORDS[kind]}{shown}"
        if kind == "string_type" and isinstance(value, bool | int | float):
            message += " (put it in quotes to make it text)"
    elif kind == "literal_error":
        message = f"must be {ctx.get('expected')}{shown}"
    elif kind in {"greater_than_equal", "less_than_equal"}:
        message = f"must be {_range(root, loc)}{shown}"
    elif kind == "greater_than":
        message = f"must be greater than {ctx.get('gt', 0):g}{shown}"
    elif kind == "too_short":
        least = ctx.get("min_length", 1)
        message = f"must have at least {counted(least, 'item')}"
    else:
        message = str(error["msg"][:1].lower() + error["msg"][1:])
    return message


def _range(root: type[BaseModel], loc: Loc) -> str:
    """The bounds declared on the field at ``loc``, both when it has both."""
    info = _field_at(root, loc)
    metadata = info.metadata if info is not None else []
    low = next((m.ge for m in metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in metadata if hasattr(m, "le")), None)
    if low is not None and high is not None:
        return f"between {low:g} and {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"


def _unknown_field(root: type[BaseModel], loc: Loc) -> str:
    model = _model_at(root, loc[:-1])
    allowed = sorted(_names(model)) if model is not None else []
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    if close:
        return f"unknown field; did you mean {close[0]!r}?"
    return f"unknown field (allowed: {', '.join(allowed)})" if allowed else "unknown field"


def _field_at(root: type[BaseModel], loc: Loc) -> Any:
    """Pydantic's FieldInfo of the field at ``loc`` below ``root``, or None."""
    names = [part for part in loc if isinstance(part, str)]
    if not names:
        return None
    model = _model_at(root, loc[: max(i for i, part in enumerate(loc) if isinstance(part, str))])
    return _names(model).get(names[-1]) if model is not None else None


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model that validates the mapping at ``loc`` below ``root``."""
    current: type[BaseModel] | None = root
    for part in loc:
        if current is None:
            return None
        if isinstance(part, int):
            continue
        field = _names(current).get(part)
        current = _inner_model(field.annotation) if field is not None else None
    return current


def _names(model: type[BaseModel]) -> dict[str, Any]:
    """The fields of ``model`` by the name a document uses: the alias when there is one."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        inner = _inner_model(arg)
        if inner is not None:
            return inner
    return None
