"""Reading a run's results.jsonl in tests: the write-ahead intents and the outcomes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retention.core.runfiles import APPLY_LINE, ApplyIntent, ApplyOutcome


def journal_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a journal, intents and outcomes, in order."""
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def outcome_lines(path: Path) -> list[dict[str, Any]]:
    """The outcome lines of a journal: one per change the apply dealt with."""
    return [x for x in journal_lines(path) if "outcome" in x]


def intent_lines(path: Path) -> list[dict[str, Any]]:
    """The intent lines of a journal: one per PATCH about to be sent."""
    return [x for x in journal_lines(path) if x.get("intent")]


def journal_line(fields: Mapping[str, object]) -> ApplyIntent | ApplyOutcome:
    """A line of an apply's journal, validated by its model: ``fields``, with the keys a
    test leaves out given what the executor writes when there is nothing to say (an
    outcome line's status and error, no approval, the planned body as the one sent)."""
    shape: dict[str, object] = {
        "at": "2026-11-21T12:00:00Z",
        "planned": fields.get("body"),
        "approved": False,
    }
    if not fields.get("intent"):
        shape |= {"outcome": "applied", "status": None, "error": None}
    return APPLY_LINE.validate_python({**shape, **fields})
