"""No circles in retention's import graph: not between two files, not between two packages.

The graph is read from the source, every import statement counted wherever it stands: at
the top of a module, inside a function (imported late to start faster) or under
TYPE_CHECKING (for annotations only). import-linter's contracts order the packages; a
circle inside one package, or two packages of one layer that import each other, is what
they do not see, and what this test does. A package is a folder directly under
retention/ (its sub-packages belong to it); a module at the top (errors.py, entry.py) is
a package of its own."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

Graph = Mapping[str, set[str]]


def modules(package: Path) -> dict[str, Path]:
    """Every module under ``package`` by its dotted name (a package by its own name)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_names(path: Path, name: str) -> Iterable[str]:
    """Every module name an import statement of the module at ``path`` names, wherever it
    stands, with the names a ``from`` import takes (each may be a module)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                parts = parts if is_package else parts[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module to the modules of ``package`` it imports (each import resolved to the
    longest module name that exists)."""
    known = modules(package)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for named in imported_names(path, name):
            imported = named
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                graph[name].add(imported)
    return graph


def package_graph(graph: Graph, depth: int = 2) -> dict[str, set[str]]:
    """The graph between packages: each module counted in its package, the first
    ``depth`` parts of its name."""
    packages: dict[str, set[str]] = {}
    for module, imported in graph.items():
        mine = ".".join(module.split(".")[:depth])
        targets = {".".join(other.split(".")[:depth]) for other in imported}
        packages.setdefault(mine, set()).update(targets - {mine})
    return packages


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected parts of ``graph`` with more than one node (Tarjan's
    algorithm, without recursion), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for edge in edges:
                if edge not in index:
                    index[edge] = low[edge] = len(index)
                    stack.append(edge)
                    on_stack.add(edge)
                    work.append((edge, iter(sorted(graph.get(edge, ())))))
                    break
                if edge in on_stack:
                    low[node] = min(low[node], index[edge])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.append(sorted(part))
    return found


def test_no_two_files_of_retention_import_each_other_however_indirectly() -> None:
    """No circle between the files of retention/, counting every import statement."""
    assert circles(import_graph(ROOT / "retention")) == []


def test_no_two_packages_of_retention_import_each_other_however_indirectly() -> None:
    """No circle between the packages of retention/ (and its top-level modules)."""
    assert circles(package_graph(import_graph(ROOT / "retention"))) == []


def test_a_circle_behind_a_late_or_a_type_checking_import_is_found(tmp_path: Path) -> None:
    """The graph counts an import inside a function and one under TYPE_CHECKING: a circle
    made of them is found, between the files and between their packages."""
    root = tmp_path / "pkg"
    for folder in ("a", "b", "c"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "a" / "one.py").write_text("from pkg.b import two\n")
    (root / "b" / "two.py").write_text("def late() -> None:\n    from pkg.c.three import x\n")
    (root / "c" / "three.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import one\nx = 1\n"
    )

    graph = import_graph(root)

    assert circles(graph) == [["pkg.a.one", "pkg.b.two", "pkg.c.three"]]
    assert circles(package_graph(graph)) == [["pkg.a", "pkg.b", "pkg.c"]]
    (root / "c" / "three.py").write_text("x = 1\n")
    assert circles(import_graph(root)) == []
