"""Fault injection for the simulator: what can go wrong between a client and the API.

A fault spec is a comma-separated list of ``name=value``:

    503=0.1,429=0.05,reset=0.02,slow=0.01,stale=0.05,drift=0.02,retry_after=1,slow_ms=2000

- ``503``, ``429``: probability that an API request is answered with that status
  (429 carries ``Retry-After: <retry_after>``, default 1 second);
- ``reset``: probability that the connection is reset instead of answered;
- ``slow``: probability that the answer is delayed by ``slow_ms`` (default 2000 ms);
- ``stale``: probability that a correct digest answer is told its nonce is stale;
- ``drift``: probability that, between two pages of a snapshot walk (pageNum >= 2), a
  snapshot is created or reaped, so the pages shift under the walker.

Decisions come from one seeded random generator, so a single-threaded run is repeatable.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

PROBABILITIES = ("503", "429", "reset", "slow", "stale", "drift")
SETTINGS = ("retry_after", "slow_ms")


class FaultSpecError(ValueError):
    """A fault spec that cannot be parsed; the message names the offending part."""


@dataclass(frozen=True)
class FaultSpec:
    """Probabilities per fault kind and their settings."""

    rates: dict[str, float] = field(default_factory=dict)
    retry_after: int = 1
    slow_ms: int = 2000

    @classmethod
    def parse(cls, text: str | None) -> FaultSpec:
        """Parse ``503=0.1,reset=0.02,...``; empty or None means no faults."""
        if not text or not text.strip():
            return cls()
        rates: dict[str, float] = {}
        settings: dict[str, int] = {}
        for item in text.split(","):
            name, sep, value = item.strip().partition("=")
            if not sep:
                raise FaultSpecError(f"fault spec item {item.strip()!r} is not name=value")
            if name in PROBABILITIES:
                try:
                    rate = float(value)
                except ValueError:
                    raise FaultSpecError(f"{name}={value}: not a number") from None
                if not 0.0 <= rate <= 1.0:
                    raise FaultSpecError(f"{name}={value}: a probability is between 0 and 1")
                rates[name] = rate
            elif name in SETTINGS:
                if not value.isdigit():
                    raise FaultSpecError(f"{name}={value}: a whole number is expected")
                settings[name] = int(value)
            else:
                known = ", ".join((*PROBABILITIES, *SETTINGS))
                raise FaultSpecError(f"unknown fault {name!r}; known: {known}")
        return cls(rates=rates, **settings)

    def __str__(self) -> str:
        parts = [f"{k}={v:g}" for k, v in self.rates.items()]
        if self.rates.get("429"):
            parts.append(f"retry_after={self.retry_after}")
        if self.rates.get("slow"):
            parts.append(f"slow_ms={self.slow_ms}")
        return ",".join(parts) or "none"


class FaultInjector:
    """Draws faults for requests and counts what it injected."""

    def __init__(self, spec: FaultSpec, seed: int = 0) -> None:
        self.spec = spec
        self._random = random.Random(seed)  # noqa: S311 - simulation, not security
        self._lock = threading.Lock()
        self.injected: Counter[str] = Counter()

    def draw(self, kind: str) -> bool:
        """True when a fault of ``kind`` should happen now (and count it)."""
        rate = self.spec.rates.get(kind, 0.0)
        if rate <= 0.0:
            return False
        with self._lock:
            hit = self._random.random() < rate
            if hit:
                self.injected[kind] += 1
        return hit

    def choice(self, options: int) -> int:
        """A seeded index in range(options), for faults that pick a victim."""
        with self._lock:
            return self._random.randrange(options)

    def request_fault(self) -> str | None:
        """The fault for an authenticated API request: "503", "429", "reset", "slow" or None."""
        for kind in ("reset", "503", "429", "slow"):
            if self.draw(kind):
                return kind
        return None
