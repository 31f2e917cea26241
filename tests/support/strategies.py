"""Hypothesis strategies the property tests of the engine and the planner share."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from retention.core.policy.duration import RetentionDuration
from retention.core.policy.every import EveryRule

# Count rules: often unset, small counts that run out, and -1 (no limit).
COUNTS = st.sampled_from([0, 0, 1, 2, 3, 5, -1])


def counted(counts: st.SearchStrategy[int]) -> dict[str, st.SearchStrategy[int]]:
    """KeepSpec arguments that draw every count rule but yearly from ``counts``."""
    return dict.fromkeys(("last", "hourly", "daily", "weekly", "monthly"), counts)


def durations(*, months: int, days: int, hours: int) -> st.SearchStrategy[RetentionDuration]:
    """Durations of up to the given months, days and hours (zero included)."""
    return st.builds(
        RetentionDuration,
        years=st.just(0),
        months=st.integers(0, months),
        days=st.integers(0, days),
        hours=st.integers(0, hours),
    )


def every_rules(
    crons: Sequence[str], counts: st.SearchStrategy[int], *, max_size: int
) -> st.SearchStrategy[tuple[EveryRule, ...]]:
    """Up to ``max_size`` every-rules, each a cron of ``crons`` with a count of ``counts``."""
    rule = st.builds(EveryRule, cron=st.sampled_from(list(crons)), count=counts)
    return st.lists(rule, max_size=max_size).map(tuple)
