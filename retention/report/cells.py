"""How report.html's table cells show identifiers and a change's reasons.

An identifier (a cluster, project, policy or snapshot name or id) must never wrap inside a
word: "analytics-events" on two lines as "analyti" and "cs-events" reads as two names. The
``ident`` filter writes it in a span of class ``ident``, which the stylesheet keeps from
breaking anywhere, with a ``<wbr>`` after each separator (``- _ . / : @``), the only places
a long name may wrap. The text is escaped here, since the result is markup.

A change has one reason that decided it and often several that agree (every rule of every
policy that keeps the snapshot); ``deciding_first`` puts the deciding one first, so the
report can show it and fold the rest away.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import markupsafe

from retention.core.model import Reason, describe
from retention.core.wording import printable

# Where a long identifier may wrap: after one of these.
SEPARATORS = "-_./:@"
_AFTER_SEPARATOR = re.compile(f"(?<=[{re.escape(SEPARATORS)}])")
# The rule of the note a release carries: it is what lifted the hold.
RELEASE_RULE = "release_protection"


def ident(value: object) -> markupsafe.Markup:
    """``value`` as an identifier: escaped, in ``<span class="ident">``, with ``<wbr>``
    after each separator."""
    text = printable(str(value), html=True)
    parts = [markupsafe.escape(part) for part in _AFTER_SEPARATOR.split(text)]
    return markupsafe.Markup('<span class="ident">{}</span>').format(
        markupsafe.Markup("<wbr>").join(parts)
    )


def deciding_first(reasons: Sequence[Reason], action: str) -> list[str]:
    """A change's reasons in words, the one that decided it first, the others in the plan's
    order: for a release the note that lifted the hold; for an extend the rule with the
    latest horizon (the new expiry is written for it); otherwise the plan's first, which
    the planner puts first (a protect rule, an ended hold record, "no keep rule")."""
    if not reasons:
        return []
    chosen = 0
    if action == "release":
        chosen = next((i for i, r in enumerate(reasons) if r["rule"] == RELEASE_RULE), 0)
    elif action == "extend":
        horizons = [(r["horizon"], -i) for i, r in enumerate(reasons) if r["horizon"]]
        chosen = -max(horizons)[1] if horizons else 0
    ordered = [reasons[chosen], *reasons[:chosen], *reasons[chosen + 1 :]]
    return [describe(r) for r in ordered]
