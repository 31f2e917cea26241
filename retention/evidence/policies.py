"""The policies of a period's runs, read from the texts the ledger kept (by the sha256
each run recorded): what each promised, years after the files changed."""

from __future__ import annotations

from pathlib import Path

from retention.config.policyfiles import parse_policies
from retention.core.policy.model import Policy
from retention.errors import PolicyError
from retention.evidence.gather import Facts, RunFact


class Policies:
    """The policies of the period's runs, read from the texts the ledger kept."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._parsed: dict[str, dict[str, Policy] | None] = {}

    def of(self, run: RunFact, name: str) -> Policy | None:
        """Policy ``name`` as run ``run`` was made with it (None: its text not kept)."""
        ref = next((p for p in run.policies if p.get("name") == name), None)
        if ref is None:
            return None
        found = self.parsed(ref["sha256"])
        return None if found is None else found.get(name)

    def parsed(self, sha256: str) -> dict[str, Policy] | None:
        """The policies of the file kept under ``sha256`` (None: not kept, or not valid)."""
        if sha256 not in self._parsed:
            kept = self.facts.texts.get(sha256)
            self._parsed[sha256] = None if kept is None else _parse(*kept)
        return self._parsed[sha256]


def _parse(path: str, text: str) -> dict[str, Policy] | None:
    try:
        loaded = parse_policies([(Path(path), text.encode())])
    except PolicyError:
        return None
    return {p.policy.name: p.policy for p in loaded}
