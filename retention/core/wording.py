"""Phrases the terminal, the report and doctor share: a count with its noun, words as a list,
a byte count, a share against the limit it passed, a list of unmanaged clusters, text from
the service made safe to show, a value from a document in a message."""

from __future__ import annotations

import re
from collections.abc import Sequence

# C0, DEL and C1: what can move a terminal's cursor, recolour it or hide text in a report.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# The same but tab, line feed and carriage return, which HTML takes as plain white space
# (an SVG tooltip breaks its lines on "\n").
_CONTROL_IN_HTML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def printable(text: str, *, html: bool = False) -> str:
    """``text`` with each control character written as its escape (``\\x1b``, ``\\n``), so
    names and ids from the service cannot act on the terminal or the page that shows them.
    ``html``: tab and line breaks stay, as the white space they are there."""
    pattern = _CONTROL_IN_HTML if html else _CONTROL
    return pattern.sub(lambda found: repr(found.group())[1:-1], text)


def plural(noun: str, count: float) -> str:
    """``noun`` as it goes with ``count``: "check" for 1, "checks" for 0 or 2; "policy",
    "policies"; "PATCH", "PATCHes". ``noun`` is the singular; its last word takes the
    ending, by the English rules the nouns of this project follow."""
    if count == 1:
        return noun
    lower = noun.lower()
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "o", "u", ""):
        return noun[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def counted(count: int, noun: str) -> str:
    """A count and its noun: "1 check", "3 checks", "0 policies" (see ``plural``)."""
    return f"{count} {plural(noun, count)}"


def joined(words: Sequence[str], last: str = "and") -> str:
    """Words as a list in a sentence: "a", "a and b", "a, b and c" (``last``: "or")."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def size(count: int) -> str:
    """A byte count for people: 1.2 TiB, 340.0 MiB, 0 B."""
    if count < 1024:
        return f"{count} B"
    value = count / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def decimal_text(value: float) -> str:
    """A fraction from a document as its author wrote it: 0.95 as "0.95", 1.0 as "1" (the
    shortest text that reads back as the same float, not ``:g``'s six digits)."""
    digits, scale = _decimal(value)
    return _scaled_text(digits, scale)


def share_above(part: int, whole: int, limit: float) -> str:
    """``part`` of ``whole`` as a percentage with just the decimals that show it is more
    than ``limit`` (a fraction that ``part / whole`` exceeds): 296 of 311 against 0.95 is
    "95.2%", not "95%"; 32 of 39 against 0.5 is "82%". Rounded half up, and never "100%"
    unless ``part`` is all of ``whole``. The comparison is exact, in integers: ``limit`` is
    read as the decimal its text gives (0.95 is 95/100, not the float beside it)."""
    digits, scale = _decimal(limit)
    for places in range(_MOST_PLACES + 1):
        # The percentage at ``places`` decimals, as an integer count of 10**-places percent.
        shown = (2 * part * 100 * 10**places + whole) // (2 * whole)
        above = shown * 10**scale > digits * 10 ** (places + 2)
        if above and (part == whole or shown < 100 * 10**places):
            return _scaled_text(shown, places, keep_zeros=True) + "%"
    return f"{100 * part / whole}%"


# Past this many decimals the share is said as the float it is (a limit of 17 digits).
_MOST_PLACES = 20


def _decimal(value: float) -> tuple[int, int]:
    """``value`` as the decimal its shortest text gives: digits and a power of ten to divide
    by (0.95: (95, 2); 1e-05: (1, 5); 2.0: (20, 1))."""
    mantissa, _, exponent = repr(float(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits, scale = int(whole + fraction), len(fraction) - int(exponent or 0)
    if scale < 0:
        return digits * 10**-scale, 0
    return digits, scale


def _scaled_text(digits: int, scale: int, *, keep_zeros: bool = False) -> str:
    """``digits`` / 10**``scale`` in decimal: (952, 1) "95.2"; (950, 3) "0.95" (trailing
    zeros dropped unless ``keep_zeros``)."""
    sign, digits = ("-", -digits) if digits < 0 else ("", digits)
    text = str(digits).rjust(scale + 1, "0")
    whole, fraction = text[: len(text) - scale], text[len(text) - scale :]
    if not keep_zeros:
        fraction = fraction.rstrip("0")
    return sign + whole + ("." + fraction if fraction else "")


def unmanaged_text(names: Sequence[str], listed: int = 10) -> str:
    """ "3 unmanaged (no policy matches, never changed): a, b, c", the first ``listed``
    names and how many more."""
    more = f" and {len(names) - listed} more" if len(names) > listed else ""
    return f"{len(names)} unmanaged (no policy matches, never changed): " + (
        ", ".join(names[:listed]) + more
    )


def show_value(value: object) -> str:
    """A value roughly as the YAML author wrote it, for messages."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, dict | list | tuple | str):
        return "a mapping" if isinstance(value, dict) else repr(value)[:60]
    return str(value)
