"""The max_expire_fraction hold says its share with the decimals that show the comparison:
"296 of 311 snapshots would expire (95.2%), more than max_expire_fraction 0.95", never a
rounded "95%" that reads as no more than 0.95."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from hypothesis import assume, example, given
from hypothesis import strategies as st

from retention.core.decide import decide
from retention.core.model import ClusterView, SnapshotView, Target
from retention.core.policy.spec import KeepSpec
from retention.core.wording import decimal_text, share_above
from tests.support.planning import loaded_policy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def test_a_share_just_above_the_limit_is_said_with_the_decimal_that_shows_it() -> None:
    """A cluster of 311 whose policy keeps 15 and allows 0.95 is held, and the hold says
    95.2%: 296 of 311 is above 95%, which "95%" would not show."""
    snapshots = [
        SnapshotView(f"s{i:03d}", NOW - timedelta(hours=6 * i), True, False, NOW + timedelta(90))
        for i in range(311)
    ]
    policy = loaded_policy("prod", KeepSpec(last=15), max_expire_fraction=0.95)
    decided = decide(
        ClusterView(Target("p1", "c1", "prod-orders"), snapshots),
        [policy],
        now=NOW,
        lease_for=timedelta(days=7),
    )

    [hold] = decided.holds
    assert hold.reason == (
        "296 of 311 snapshots would expire (95.2%), more than max_expire_fraction 0.95"
    )


def test_a_share_far_above_the_limit_keeps_its_whole_percent() -> None:
    """Where a whole percent already shows the comparison, no decimal is added."""
    assert share_above(32, 39, 0.5) == "82%"
    assert share_above(5, 5, 0.5) == "100%"
    assert share_above(999, 1000, 0.5) == "99.9%"  # not all of them: never "100%"


def test_a_limit_is_written_as_its_author_wrote_it() -> None:
    """The limit is the shortest decimal of its float: 0.95, 1, 0.333, not :g's rounding."""
    assert [decimal_text(v) for v in (0.95, 1.0, 0.333, 0.9512345, 0.0)] == [
        "0.95",
        "1",
        "0.333",
        "0.9512345",
        "0",
    ]


limits = st.one_of(
    st.decimals(min_value=0, max_value=1, places=3).map(float),
    st.floats(min_value=0, max_value=1, allow_nan=False),
)


shares = st.integers(1, 100_000).flatmap(
    lambda whole: st.tuples(st.integers(1, whole), st.just(whole))
)


@given(shares, limits)
@example((296, 311), 0.95)  # the issue's
@example((19, 20), 0.949)
@example((1, 3), 0.333)
def test_any_share_above_its_limit_is_said_above_it(share: tuple[int, int], limit: float) -> None:
    """For any part of a whole that the gate finds above a limit (the float comparison it
    makes), the percentage said is exactly above the limit as written, below 100% unless
    all expire, the share rounded to its decimals, and one decimal fewer would not show it."""
    part, whole = share
    assume(part / whole > limit)
    said = share_above(part, whole, limit)
    assert said.endswith("%")
    shown = Decimal(said[:-1])
    written = Decimal(decimal_text(limit)) * 100
    exact = Fraction(100 * part, whole)
    places = max(0, -int(shown.as_tuple().exponent))
    assert shown > written
    assert part == whole or shown < 100
    assert abs(Fraction(shown) - exact) <= Fraction(1, 2 * 10**places)
    if places:  # the fewest decimals: one fewer, rounded the same way, would not show it
        fewer = Fraction((2 * exact * 10 ** (places - 1) + 1) // 2, 10 ** (places - 1))
        assert not (fewer > written and (part == whole or fewer < 100))
