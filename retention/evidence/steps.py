"""Who hears how the evidence of a period goes (the command line's progress): a year of a
fleet takes half a minute, in three or four steps, each said before it starts."""

from __future__ import annotations

from typing import Protocol

# What each step does, in order. The change log comes first when a JSON or a CSV file is
# written (a large ledger's chain is verified in another process meanwhile); otherwise it
# is not a step.
READING = "reading the ledger"
LOGGING = "writing the change log"
MAKING = "making the document: coverage, ladders, changes, the chain"
WRITING = "writing the files"
STEPS = (READING, LOGGING, MAKING, WRITING)


class Listener(Protocol):
    """Who hears how an evidence goes."""

    def sections(self, total: int) -> None:
        """The evidence starts: ``total`` steps, the first under way (STEPS)."""

    def section(self, under_way: str) -> None:
        """One more step done; ``under_way`` is the next (STEPS), or "" at the end."""
