"""docs/glossary.md, written from the core's glossary (``retention.core.glossary``), the
same words as the report's "Words used here": ``python -m retention.report.glossary``.

A test fails while the file and the code disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from retention.core.glossary import markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"

if __name__ == "__main__":  # pragma: no cover - the docs test checks the file it writes
    DOC.write_text(markdown(), encoding="utf-8")
    sys.stdout.write(f"wrote {DOC}\n")
