"""What loading the configuration finds beside the settings: every problem (all of them are
told at once, then the load fails), the warnings, and where each setting came from."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Findings:
    """The problems, the warnings and the sources of one load, as they are found."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
