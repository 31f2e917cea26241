"""Hypothesis example counts: the full count under CI=true, a fifth of it elsewhere, so
`make test` stays quick where people wait for it and CI still runs every example.

conftest.py registers the two profiles and loads one before any test module is imported. A
test that needs more examples than the profile gives writes
``@settings(max_examples=examples(500))``: a bare ``max_examples=500`` would override the
profile and run 500 everywhere.
"""

from __future__ import annotations

import os

from hypothesis import settings

# "ci" is Hypothesis's own CI profile (derandomized, no deadline, no example database) at its
# default count; "quick", for everywhere else, is the default profile at a fifth of it.
FULL = "ci"
QUICK = "quick"
FULL_EXAMPLES = 100
QUICK_EXAMPLES = 20


def load_profile() -> str:
    """Register the full and the quick profile and load the full one under CI=true (which
    .ci/run sets), the quick one otherwise, or the one HYPOTHESIS_PROFILE names; its name."""
    settings.register_profile(FULL, settings.get_profile("ci"), max_examples=FULL_EXAMPLES)
    settings.register_profile(QUICK, settings.get_profile("default"), max_examples=QUICK_EXAMPLES)
    name = os.environ.get("HYPOTHESIS_PROFILE") or (
        FULL if os.environ.get("CI") == "true" else QUICK
    )
    settings.load_profile(name)
    return name


def examples(full: int) -> int:
    """``full`` under the full profile, the loaded profile's share of it otherwise (at
    least one): the example count of a test that needs more than the profile gives."""
    return max(1, round(full * settings().max_examples / FULL_EXAMPLES))
