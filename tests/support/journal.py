"""Reading a run's results.jsonl in tests: the write-ahead intents and the outcomes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def journal_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a journal, intents and outcomes, in order."""
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def outcome_lines(path: Path) -> list[dict[str, Any]]:
    """The outcome lines of a journal: one per change the apply dealt with."""
    return [x for x in journal_lines(path) if "outcome" in x]


def intent_lines(path: Path) -> list[dict[str, Any]]:
    """The intent lines of a journal: one per PATCH about to be sent."""
    return [x for x in journal_lines(path) if x.get("intent")]
