"""The helpers report.html's cells are written with: an identifier that wraps at its
separators only, and a change's reasons with the one that decided it first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from markupsafe import Markup

from retention.core.model import Reason, note
from retention.report.cells import deciding_first, ident

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def rule(name: str, counter: int, of: int, days: int | None) -> Reason:
    """A keep rule of the policy "prod" that keeps its ``counter``th snapshot, until
    ``days`` from NOW (None: no horizon)."""
    horizon = NOW + timedelta(days=days) if days is not None else None
    return Reason(
        policy="prod", rule=name, counter=counter, of=of, horizon=horizon, text=f"{name} snapshot"
    )


def test_an_identifier_may_wrap_after_its_separators_only() -> None:
    """ident writes the name in a span of class ident with a <wbr> after each - _ . / : @,
    and nowhere else."""
    assert ident("analytics-events_v2.eu/rs:0@x") == Markup(
        '<span class="ident">analytics-<wbr>events_<wbr>v2.<wbr>eu/<wbr>rs:<wbr>0@<wbr>x</span>'
    )
    assert ident("billingledger") == Markup('<span class="ident">billingledger</span>')
    assert ident(5) == Markup('<span class="ident">5</span>')


def test_an_identifier_is_escaped_and_its_control_characters_written_out() -> None:
    """Markup in a name comes out as text, and an escape character as \\x1b."""
    assert ident("<b>a-b</b>\x1b") == Markup(
        '<span class="ident">&lt;b&gt;a-<wbr>b&lt;/<wbr>b&gt;\\x1b</span>'
    )


def test_the_reason_that_decided_a_change_comes_first() -> None:
    """An extend's deciding reason is the rule with the latest horizon, a release's the note
    that lifted the hold; a shorten or protect keeps the plan's order; the rest follow in
    the plan's order."""
    daily, monthly, last = (
        rule("daily", 1, 7, 6),
        rule("monthly", 2, 12, 300),
        rule("last", 1, 4, None),
    )
    lifted = note("release_protection", "release_protection: hold lifted, expiry set")

    assert deciding_first([daily, monthly, last], "extend") == [
        "prod: monthly #2 of 12 (monthly snapshot), until 2027-09-17T12:00:00Z",
        "prod: daily #1 of 7 (daily snapshot), until 2026-11-27T12:00:00Z",
        "prod: last #1 of 4 (last snapshot)",
    ]
    assert deciding_first([last, daily], "release")[0] == "prod: last #1 of 4 (last snapshot)"
    assert deciding_first([daily, lifted], "release") == [
        "release_protection: hold lifted, expiry set",
        "prod: daily #1 of 7 (daily snapshot), until 2026-11-27T12:00:00Z",
    ]
    assert deciding_first([last, daily], "extend")[0].startswith("prod: daily #1")
    assert deciding_first([last, monthly], "protect")[0] == "prod: last #1 of 4 (last snapshot)"
    assert deciding_first([], "shorten") == []
