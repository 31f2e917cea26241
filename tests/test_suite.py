"""The suite's own rules: every test states the behaviour it proves in a docstring, the
modules that are not tests live in tests/support, and the comments of the code, the tests and
the benchmarks point at files of the repository, not at internal documents or issue numbers."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).parent
ROOT = TESTS.parent
# The contract documents beside the checkout, and issue numbers, mean nothing to a reader
# of the repository alone.
POINTS_NOWHERE = re.compile(r"DESIGN\.md|\.\./shared|\bissues? #?\d+", re.IGNORECASE)


def collected_tests(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The test functions pytest collects from a module: top level, and in Test classes."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (
                f
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                and f.name.startswith("test")
            )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            yield node


def test_every_test_says_what_it_proves_in_a_docstring() -> None:
    """Every test function of every test module has a docstring."""
    missing = [
        f"{path.relative_to(ROOT)}::{function.name}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for function in collected_tests(ast.parse(path.read_text(encoding="utf-8")))
        if not (ast.get_docstring(function) or "").strip()
    ]
    assert missing == []


def test_the_modules_beside_the_tests_are_tests() -> None:
    """At the top of tests/, every module is a test module, conftest.py or the package's
    __init__.py: helpers and fake servers live in tests/support."""
    others = [
        p.name
        for p in TESTS.glob("*.py")
        if not p.name.startswith("test_") and p.name not in {"conftest.py", "__init__.py"}
    ]
    assert others == []


def remarks(source: str) -> Iterator[tuple[int, str]]:
    """The comments and docstrings of a module, with their line numbers."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text is not None:
                yield node.body[0].lineno, text


def test_comments_of_the_code_tests_and_benchmarks_point_inside_the_repository() -> None:
    """No comment or docstring under retention/, tools/, tests/ or benchmarks/ cites the
    internal design document, the folder beside the checkout or an issue number."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in (ROOT / "retention", ROOT / "tools", TESTS, ROOT / "benchmarks")
        for path in sorted(folder.rglob("*.py"))
        for line, text in remarks(path.read_text(encoding="utf-8"))
        if POINTS_NOWHERE.search(text)
    ]
    assert found == []
