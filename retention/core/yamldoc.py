"""YAML documents for pydantic models: one parser for the configuration, the policy files
and the simulator's fleet files.

A document is parsed into plain data and a ``Lines`` table (the line of each key), and
``retention.core.validation`` validates the data and words every problem the same way:
``FILE:LINE: FIELD: MESSAGE``.

- Only the safe loader (no tag can build an object); the text is composed once, the node
  tree gives every key its line, and the same tree is constructed into plain data.
- Duplicate keys are problems: PyYAML would silently keep the last one.
- A YAML error is reported by its line and PyYAML's description, never with the snippet of
  the file it comes with (a configuration snippet could hold a secret).

Nothing here reads a file: callers pass the bytes they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from retention.core.validation import Lines, Loc, Problem, field_path


def _line_table(root: yaml.Node, problems: list[Problem]) -> Lines:
    """The line of every key and item of a composed document; a doubled key is a problem."""
    lines: dict[Loc, int] = {}
    seen: set[int] = set()

    def walk(node: yaml.Node, path: Loc, line: int) -> None:
        lines[path] = line
        # An alias repeats a node: walk it once, so nested aliases cannot blow up the walk.
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*path, index), item.start_mark.line + 1)
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, value in node.value:
                name, key_line = str(key.value), key.start_mark.line + 1
                if name in first:
                    # PyYAML keeps the last value silently; a doubled key is surely a mistake.
                    message = f"duplicate key (first on line {first[name]})"
                    problems.append(Problem(key_line, field_path((*path, name)), message))
                first.setdefault(name, key_line)
                walk(value, (*path, name), key_line)

    walk(root, (), root.start_mark.line + 1)
    return Lines(lines)


@dataclass(frozen=True)
class Document:
    """A parsed YAML document: its plain data and the line of each of its keys."""

    value: Any
    lines: Lines


def _kind(value: object) -> str:
    """What a value is, in words that do not quote it."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    words: dict[type, str] = {str: "text", list: "a list", dict: "a mapping"}
    return words.get(type(value), type(value).__name__)


def parse(
    data: bytes, expected: str, kinds: tuple[type, ...] = (dict,)
) -> tuple[Document | None, list[Problem]]:
    """The document in ``data`` and every problem found while reading it.

    ``kinds`` are what the top level may be, and ``expected`` words them for a problem. The
    document is None when the text cannot be read as YAML, or its top level is none of those.
    """
    document, problems = _parse(data, expected)
    if document is None or isinstance(document.value, kinds):
        return document, problems
    message = f"the top level must be {expected}, not {_kind(document.value)}"
    return None, [*problems, Problem(document.lines.find(()), None, message)]


def _parse(data: bytes, expected: str) -> tuple[Document | None, list[Problem]]:
    problems: list[Problem] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        byte = f"byte 0x{data[exc.start]:02x}"
        return None, [Problem(line, None, f"not UTF-8 text ({byte}); save it as UTF-8")]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return None, [Problem(None, None, f"empty file: expected {expected}")]
        lines = _line_table(node, problems)
        # Construct from the composed tree with the safe constructor: one parse, safe tags only.
        loader = yaml.SafeLoader("")
        try:
            return Document(loader.construct_document(node), lines), problems
        except ValueError as exc:
            # A date that is none (2027-02-30): PyYAML's constructor raises without a mark.
            problems.append(Problem(_bad_scalar(node), None, f"not a valid date: {exc}"))
            return None, problems
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        problems.append(_yaml_problem(exc))
    except (yaml.YAMLError, RecursionError) as exc:
        problems.append(Problem(None, None, f"invalid YAML ({type(exc).__name__})"))
    return None, problems


def _bad_scalar(root: yaml.Node) -> int | None:
    """The line of the first timestamp-looking scalar that PyYAML cannot construct."""
    loader = yaml.SafeLoader("")
    stack, seen = [root], set()
    try:
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":timestamp"):
                try:
                    loader.construct_yaml_timestamp(node)
                except ValueError:
                    return int(node.start_mark.line) + 1
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(reversed(node.value))
            elif isinstance(node, yaml.MappingNode):
                stack.extend(value for pair in reversed(node.value) for value in pair[::-1])
    finally:
        loader.dispose()
    return None


def _yaml_problem(exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    problem = exc.problem or "invalid YAML"
    tag = re.search(r"constructor for the tag '([^']*)'", problem)
    if isinstance(exc, yaml.constructor.ConstructorError):
        if tag is not None:
            name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
            return Problem(line, None, f"the tag {name!r} is not allowed: write plain YAML")
        return Problem(line, None, f"invalid YAML: {problem}")
    # PyYAML words its messages to be read as "context, problem"; its snippet is left out.
    context = f"{exc.context}, " if exc.context else ""
    return Problem(line, None, f"YAML syntax error: {context}{problem}")
