"""The evidence's HTML fits the page, measured in a real browser: headless Chromium lays
out the evidence of sixty days of clusters with long names on a screen 800 px wide and as
printed on A4 (print media, the width inside the page's margins), and the page says what
it looks like (tests/support/report_layout.js, as for the run report): no sideways scroll,
every table inside the page, no identifier wrapped inside a word."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from retention import cli
from retention.config.ledgerplace import LedgerPlace
from retention.core.model import Target
from retention.ledger.database import open_ledger
from tests.support.browser import Browser
from tests.support.evidenced import FIRST, Fleet, generate
from tests.support.report_layout import measure
from tests.support.simfleet import P

STEMS = (
    "prod-customer-orders-eu-west-1-primary",
    "prod-billingledgerreconciliationarchive",  # one long segment: no separator inside
    "prod-search.index:rebuild@nightly",
    "prod-events_clickstream.warehouse-v2",
)
NAMES = [f"{STEMS[i % len(STEMS)]}-{i:02d}" for i in range(8)]
# A4 is 210 mm wide; the page's @page margins are 12 mm each side: 186 mm at 96 px an inch.
A4_INSIDE = round(186 / 25.4 * 96)
AFTER = datetime(2026, 9, 10, tzinfo=UTC)


@pytest.fixture
def evidence_html(folder: Path) -> Path:
    """The evidence of forty days of eight long-named clusters, one with a gap, one with
    changes made outside retention and one with an approved change."""
    targets = [Target(P, f"{i:02d}" * 12, name) for i, name in enumerate(NAMES)]
    fleet = Fleet(targets, stopped={NAMES[1]: (date(2026, 8, 5), date(2026, 8, 9))})
    (folder / "retention.yaml").write_text(
        "api:\n  base_url: http://127.0.0.1:9/api/public/v1.0\n"
        f'targets:\n  - project: "{P}"\npolicies: policies/\nreports:\n  dir: reports/\n'
    )
    snapshot = f"{targets[2].cluster_id}-20260815"
    approved = f"{targets[0].cluster_id}-20260801"
    with open_ledger(LedgerPlace(f"sqlite:///{folder / 'reports' / 'ledger.db'}")) as ledger:
        generate(ledger, fleet, 40, outside_on={16: (NAMES[2], snapshot)},
                 approved_on={30: (NAMES[0], approved, "alice.long-name@example.com")})  # fmt: skip
    period = ["--from", str(FIRST), "--to", "2026-09-09"]
    code = cli.main(["evidence", *period, "--out", "out"], clock=lambda: AFTER)
    assert code == 3
    return folder / "out" / f"evidence-{FIRST}-2026-09-09.html"


@pytest.mark.parametrize(("width", "media"), [(800, "screen"), (A4_INSIDE, "print")])
def test_the_evidence_fits_800_px_and_a4(
    evidence_html: Path, browser: Browser, width: int, media: str
) -> None:
    """No sideways scroll, no table past the page, every cluster name an identifier and
    none wrapped inside a word; the page has no script."""
    page = browser.page(width, 1000)
    page.send("Emulation.setEmulatedMedia", {"media": media})
    layout = measure(page, evidence_html)

    assert layout.viewport <= width
    assert layout.tables >= 8, f"only {layout.tables} tables laid out"
    assert layout.identifiers >= len(NAMES)
    assert layout.problems == []
    assert page.evaluate("document.scripts.length") == 0
