"""An import-linter contract that lists what a package may import; everything else breaks it.

import-linter's own contracts forbid named modules, so a module nobody thought to forbid
(``subprocess``, a new metrics library, a shell module written next year) passes them. This
one turns the rule around: each module of ``source_modules`` may import its own package,
the modules of ``allowed_modules`` (internal or external, with their submodules) and the
standard library modules of ``allowed_standard_library``; any other import breaks it. It
is registered in pyproject.toml (``contract_types``) and imported from the repository's
root, where ``make lint`` runs lint-imports.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck, InvalidContractOptions


@dataclass(frozen=True)
class Stray:
    """An import the list does not allow: who imports what, on which lines."""

    importer: str
    imported: str
    lines: tuple[int | None, ...]

    def text(self) -> str:
        """``importer -> imported (l.3, l.9)``, as import-linter's own contracts say it."""
        where = ", ".join(f"l.{line}" if line is not None else "l.?" for line in self.lines)
        return f"{self.importer} -> {self.imported} ({where})"


def within(module: str, packages: Iterable[str]) -> bool:
    """True when ``module`` is one of ``packages`` or inside one of them."""
    return any(module == package or module.startswith(package + ".") for package in packages)


class AllowListContract(Contract):
    """Each source module imports only what the contract allows.

    Configuration options:
        - source_modules: the packages (with their submodules) whose imports are checked.
        - allowed_modules: what they may import besides their own package: internal modules
          and external packages (by their top-level name), each with its submodules.
        - allowed_standard_library: the standard library modules they may import (top-level
          names; each must be one, by ``sys.stdlib_module_names``).
    """

    type_name = "allowlist"

    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())
    allowed_standard_library = fields.ListField(subfield=fields.StringField(), required=False)

    def validate(self) -> None:
        """Refuse a standard library list that names something outside it."""
        listed = self._names("allowed_standard_library")
        strays = sorted(name for name in listed if name not in sys.stdlib_module_names)
        if strays:
            raise InvalidContractOptions(
                {"allowed_standard_library": f"not standard library modules: {', '.join(strays)}"}
            )

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Every direct import of every source module, against the list."""
        if str(self.session_options.get("include_external_packages")).lower() != "true":
            raise ValueError("an allowlist contract needs include_external_packages = true")
        sources = self._names("source_modules")
        allowed = [*sources, *self._names("allowed_modules")]
        stdlib = set(self._names("allowed_standard_library"))
        strays = [
            Stray(importer, imported, _lines(graph, importer, imported))
            for importer in sorted(m for m in graph.modules if within(m, sources))
            for imported in sorted(graph.find_modules_directly_imported_by(importer))
            if not within(imported, allowed) and imported.split(".")[0] not in stdlib
        ]
        return ContractCheck(kept=not strays, metadata={"strays": strays})

    def _names(self, option: str) -> list[str]:
        # The base class sets each option on the instance, over the field of the class.
        value: object = getattr(self, option)
        return [str(name) for name in value] if isinstance(value, list) else []

    def render_broken_contract(self, check: ContractCheck) -> None:
        """Each import the list does not allow, by importing module."""
        strays: list[Stray] = check.metadata["strays"]
        for stray in strays:
            output.print_error(f"{stray.importer} is not allowed to import {stray.imported}:")
            output.new_line()
            output.print_error(f"-   {stray.text()}", bold=False)
            output.new_line()


def _lines(graph: ImportGraph, importer: str, imported: str) -> tuple[int | None, ...]:
    details = graph.get_import_details(importer=importer, imported=imported)
    return tuple(detail["line_number"] for detail in details)
