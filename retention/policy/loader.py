"""Loading policy files: every problem of every file at once, with file, line and field path.

A problem reads ``policies/prod.yaml:7: keep.dayly: unknown field; did you mean 'daily'?``.
YAML is parsed with the safe loader only (no tag can build an object). Line numbers come
from the composed node tree, which is then constructed into plain data and validated by
the pydantic models; pydantic's error records are translated into plain words here, so no
ValidationError, YAML error or traceback reaches the user. All problems end up in one
PolicyError (exit code 2) so a user fixes a folder of files in one round.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from retention.errors import PolicyError
from retention.policy.model import Policy, show_value

Loc = tuple[str | int, ...]
# A problem inside one file: line (when known), field path (when there is one), message.
_Problem = tuple[int | None, str | None, str]
POLICY_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadedPolicy:
    """A validated policy and where it came from (the plan file records name and sha256)."""

    policy: Policy
    path: Path
    sha256: str
    index: int = 0
    # The line of each key the file sets, by dotted path ("safety.max_expire_fraction").
    lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The policy's name."""
        return self.policy.name

    def where(self, setting: str) -> str:
        """Where a reader finds ``setting``: ``FILE:LINE``, or the policy's own line with
        "(default KEY)" when the file leaves the setting out."""
        line = self.lines.get(setting)
        if line is not None:
            return f"{self.path}:{line}"
        start = self.lines.get("name")
        at = f"{self.path}:{start}" if start is not None else str(self.path)
        return f"{at} (default {setting.rsplit('.', 1)[-1]})"


class PolicySet:
    """The loaded policies, sorted by name; names are unique."""

    def __init__(self, policies: Iterable[LoadedPolicy]) -> None:
        self._policies = tuple(sorted(policies, key=lambda loaded: loaded.name))
        self._by_name = types.MappingProxyType({p.name: p for p in self._policies})
        if len(self._by_name) != len(self._policies):
            raise ValueError("policy names must be unique")

    @property
    def by_name(self) -> Mapping[str, LoadedPolicy]:
        """The policies by name (read-only)."""
        return self._by_name

    def __iter__(self) -> Iterator[LoadedPolicy]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)

    def __repr__(self) -> str:
        return f"PolicySet({[p.name for p in self._policies]!r})"

    def matching(self, project_id: str, name: str, kind: str) -> list[LoadedPolicy]:
        """Every policy whose selector matches the target, sorted by name."""
        return [p for p in self._policies if p.policy.match.matches(project_id, name, kind)]


def load_policies(source: Path | str | Sequence[Path | str]) -> PolicySet:
    """Load a directory of ``*.yaml``/``*.yml`` files (not recursive) or the files given.

    Raises PolicyError listing every problem found, in every file.
    """
    problems: list[str] = []
    loaded: list[_Found] = []
    for path in _policy_files(source, problems):
        _load_file(path, loaded, problems)
    problems += _duplicate_names(loaded)
    if problems:
        count = len(problems)
        raise PolicyError(f"{count} problem{'s' if count > 1 else ''} in policies", problems)
    return PolicySet(found.policy for found in loaded)


def _policy_files(source: Path | str | Sequence[Path | str], problems: list[str]) -> list[Path]:
    given = [Path(source)] if isinstance(source, str | os.PathLike) else [Path(s) for s in source]
    if not given:
        problems.append("no policy files given")
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            found = _directory_files(path, problems)
            if found is not None and not found:
                problems.append(f"{path}: no policy files (*.yaml, *.yml) in this directory")
            files += found or []
        elif path.exists():
            files.append(path)
        else:
            problems.append(f"{path}: no such file or directory")
    return files


def _directory_files(directory: Path, problems: list[str]) -> list[Path] | None:
    try:
        entries = sorted(directory.iterdir())
    except OSError as exc:
        problems.append(f"{directory}: cannot list the directory ({exc.strerror or exc})")
        return None
    # Hidden entries are editor backups and Kubernetes ConfigMap internals (..data), not policies.
    return [
        entry
        for entry in entries
        if entry.suffix in POLICY_SUFFIXES and not entry.name.startswith(".") and entry.is_file()
    ]


@dataclass(frozen=True)
class _Found:
    """A valid policy, with where its name is (for duplicate-name problems)."""

    policy: LoadedPolicy
    line: int | None
    field: str | None


def _load_file(path: Path, loaded: list[_Found], problems: list[str]) -> None:
    found: list[_Problem] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"{path}: cannot read the file ({exc.strerror or exc})")
        return
    digest = hashlib.sha256(data).hexdigest()
    documents = _parse(data, found)
    if documents is not None:
        items, is_list, lines = documents
        for index, item in enumerate(items):
            prefix: Loc = (index,) if is_list else ()
            try:
                policy = Policy.model_validate(item)
            except ValidationError as exc:
                for error in exc.errors():
                    loc = prefix + tuple(error["loc"])
                    found.append((lines.find(loc), _field(loc), _message(error)))
            else:
                name: Loc = (*prefix, "name")
                source = LoadedPolicy(policy, path, digest, index, lines.under(prefix))
                loaded.append(_Found(source, lines.find(name), _field(name)))
    found.sort(key=lambda problem: problem[0] or 0)
    problems += [_format(path, line, field, message) for line, field, message in found]


class _Lines:
    """Line numbers (1-based) of the keys and items of a composed YAML document, by path."""

    def __init__(self, root: yaml.Node, found: list[_Problem]) -> None:
        self._lines: dict[Loc, int] = {}
        self._seen: set[int] = set()
        self._walk(root, (), root.start_mark.line + 1, found)

    def _walk(self, node: yaml.Node, path: Loc, line: int, found: list[_Problem]) -> None:
        self._lines[path] = line
        # An alias repeats a node: walk it once, so nested aliases cannot blow up the walk.
        if id(node) in self._seen:
            return
        self._seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._walk(item, (*path, index), item.start_mark.line + 1, found)
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, value in node.value:
                name, key_line = str(key.value), key.start_mark.line + 1
                if name in first:
                    # PyYAML keeps the last value silently; a doubled rule is surely a mistake.
                    message = f"duplicate key {name!r} (first on line {first[name]})"
                    found.append((key_line, _field((*path, name)), message))
                first.setdefault(name, key_line)
                self._walk(value, (*path, name), key_line, found)

    def under(self, prefix: Loc) -> dict[str, int]:
        """The lines of the keys below ``prefix`` (one policy of a file), by dotted path."""
        size = len(prefix)
        return {
            ".".join(map(str, loc[size:])): line
            for loc, line in self._lines.items()
            if len(loc) > size and loc[:size] == prefix
        }

    def find(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor that the document has."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self._lines:
                return self._lines[loc[:end]]
        return None


def _parse(data: bytes, found: list[_Problem]) -> tuple[list[Any], bool, _Lines] | None:
    text = _decode(data, found)
    composed = _compose(text, found) if text is not None else None
    if composed is None:
        return None
    node, lines, value = composed
    if isinstance(value, dict):
        return [value], False, lines
    if isinstance(value, list):
        return value, True, lines
    message = f"expected a policy (a mapping) or a list of policies, not {show_value(value)}"
    found.append((node.start_mark.line + 1, None, message))
    return None


def _decode(data: bytes, found: list[_Problem]) -> str | None:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        found.append((line, None, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save as UTF-8"))
        return None


def _compose(text: str, found: list[_Problem]) -> tuple[yaml.Node, _Lines, Any] | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            found.append((None, None, "empty file: expected a policy (a mapping) or a list"))
            return None
        lines = _Lines(node, found)
        # Construct from the composed tree with the safe constructor: one parse, safe tags only.
        loader = yaml.SafeLoader("")
        try:
            return node, lines, loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        found.append(_yaml_problem(exc))
    except (yaml.YAMLError, RecursionError) as exc:
        found.append((None, None, f"invalid YAML ({exc})"))
    return None


def _yaml_problem(exc: yaml.MarkedYAMLError) -> _Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    problem = exc.problem or "invalid YAML"
    tag = re.search(r"constructor for the tag '([^']*)'", problem)
    if isinstance(exc, yaml.constructor.ConstructorError):
        if tag is not None:
            name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
            return line, None, f"the tag {name!r} is not allowed: policies are plain YAML"
        return line, None, f"invalid YAML: {problem}"
    # PyYAML words its messages to be read as "context, problem".
    context = f"{exc.context}, " if exc.context else ""
    return line, None, f"YAML syntax error: {context}{problem}"


def _duplicate_names(loaded: list[_Found]) -> list[str]:
    problems: list[str] = []
    first: dict[str, _Found] = {}
    for found in loaded:
        earlier = first.setdefault(found.policy.name, found)
        if earlier is not found:
            where = _format(earlier.policy.path, earlier.line, earlier.field, "")
            message = f"duplicate policy name {found.policy.name!r} (also in {where})"
            problems.append(_format(found.policy.path, found.line, found.field, message))
    return problems


def _format(path: Path, line: int | None, field: str | None, message: str) -> str:
    where = f"{path}:{line}" if line is not None else str(path)
    return ": ".join(part for part in (where, field, message) if part)


def _field(loc: Loc) -> str | None:
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    return text.removeprefix(".") or None


_TYPE_WORDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text",
    "list_type": "a list",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
    "dict_type": "a mapping of keys to values",
}


_FIXED_MESSAGES = {"missing": "required field is missing", "invalid_key": "keys must be text"}
_BOUNDS = {"greater_than_equal": ("at least", "ge"), "less_than_equal": ("at most", "le")}


def _message(error: ErrorDetails) -> str:
    """Pydantic's error record in plain words (the field path is shown beside it)."""
    kind, value = error["type"], error.get("input")
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    if kind == "extra_forbidden":
        message = _unknown_field(tuple(error["loc"]))
    elif kind in _FIXED_MESSAGES:
        message = _FIXED_MESSAGES[kind]
    elif kind in {"value_error", "assertion_error"}:
        # Our validators raise ValueError with a complete sentence; pydantic prefixes it.
        message = str(ctx.get("error", error["msg"]))
    elif kind in _TYPE_WORDS:
        message = f"must be {_TYPE_WORDS[kind]}, not {show_value(value)}"
        if kind == "string_type" and isinstance(value, bool | int | float):
            message += " (put it in quotes to make it text)"
    elif kind == "literal_error":
        message = f"{show_value(value)} is not allowed: must be {ctx.get('expected')}"
    elif kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        message = f"must be {words} {ctx.get(key)}, not {show_value(value)}"
    else:
        message = error["msg"][:1].lower() + error["msg"][1:]
    return message


def _unknown_field(loc: Loc) -> str:
    model = _model_at(Policy, loc[:-1])
    allowed = sorted(model.model_fields) if model is not None else []
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    if close:
        return f"unknown field; did you mean {close[0]!r}?"
    return f"unknown field (allowed: {', '.join(allowed)})" if allowed else "unknown field"


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model that validates the mapping at ``loc`` below ``model``."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return None
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part)
        current = _inner_model(field.annotation) if field is not None else None
    return current


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        inner = _inner_model(arg)
        if inner is not None:
            return inner
    return None
