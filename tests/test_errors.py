"""The exception tree drawn at the top of retention/errors.py is the tree of its classes."""

from __future__ import annotations

import re

from retention import errors
from retention.errors import SIGNAL_EXITS, RetentionError

LINE = re.compile(r"^(?P<lead>[ │├└─]*)(?P<name>[A-Z]\w+Error)\s+(?P<code>exit \d+|\d+/\d+)")


def drawn() -> list[tuple[int, str, str]]:
    """(depth, class name, exit code text) for each class line of the module's docstring."""
    rows = []
    for line in (errors.__doc__ or "").splitlines():
        match = LINE.match(line.removeprefix("    "))
        if match:
            rows.append((len(match["lead"]) // 4, match["name"], match["code"]))
    return rows


def actual() -> list[tuple[int, str, str]]:
    """The same rows from the classes themselves, depth first in definition order."""
    rows: list[tuple[int, str, str]] = []

    def visit(cls: type[RetentionError], depth: int) -> None:
        if cls is errors.StopRequestedError:
            code = "/".join(str(c) for c in sorted(SIGNAL_EXITS.values()))
        else:
            code = f"exit {cls.exit_code}"
        rows.append((depth, cls.__name__, code))
        for sub in cls.__subclasses__():
            if sub.__module__ == errors.__name__:
                visit(sub, depth + 1)

    visit(RetentionError, 0)
    return rows


def test_the_drawn_tree_is_the_class_tree_with_its_exit_codes() -> None:
    """Every class of errors.py sits in the drawing under its parent, with the exit code the
    CLI gives it, and the drawing names no class that does not exist."""
    assert drawn() == actual()
