"""Who hears how the evidence of a period goes (the command line's progress): a year of a
fleet takes half a minute, in three steps, each said before it starts."""

from __future__ import annotations

from typing import Protocol

# What each step does, in order.
READING = "reading the ledger and verifying its chain"
MAKING = "making the document: coverage, ladders, changes"
WRITING = "writing the files"
STEPS = (READING, MAKING, WRITING)


class Listener(Protocol):
    """Who hears how an evidence goes."""

    def sections(self, total: int) -> None:
        """The evidence starts: ``total`` steps, the first under way (STEPS)."""

    def section(self, under_way: str) -> None:
        """One more step done; ``under_way`` is the next (STEPS), or "" at the end."""
