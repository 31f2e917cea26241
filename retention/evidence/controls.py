"""Which controls the evidence supports, and how far: each named by its framework, with
the sections that bear on it, "evidenced", "partly" or "not evidenced", and why. Pure:
the document's other sections in, the table out."""

from __future__ import annotations

from typing import Any

EVIDENCED, PARTLY, NOT_EVIDENCED = "evidenced", "partly", "not evidenced"


def controls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The controls table of ``doc``."""
    coverage_met = all(c["met"] for c in doc["coverage"])
    retention_met = all(r["met"] for r in doc["retention"])
    chain_ok = bool(doc["chain"]["verified"])
    unfinished = len(doc["chain"]["unfinished"])
    texts_kept = all(p["textKept"] for p in doc["scope"]["policies"])
    tests = doc["restoreTests"]
    tested = bool(tests)

    backups = (
        (EVIDENCED, "every cluster in scope met its coverage and its policies' ladder")
        if coverage_met and retention_met
        else (PARTLY, "some clusters missed coverage or retention: see what was not met")
    )
    testing = (
        (EVIDENCED, f"{len(tests)} restore tests recorded by the team (--restore-log)")
        if tested
        else (
            NOT_EVIDENCED,
            "retention does not run restore tests; give the team's record with --restore-log",
        )
    )
    trail = (
        (NOT_EVIDENCED, "the ledger's chain does not hold: records were edited or removed")
        if not chain_ok
        else (PARTLY, f"{unfinished} runs never finished: they are outside the chain")
        if unfinished
        else (EVIDENCED, "every change with time, run, actor and approval; the chain holds")
    )
    scope = (
        (EVIDENCED, "the policies in force, their file digests and texts, and each run")
        if texts_kept and coverage_met
        else (
            PARTLY,
            "some policy texts were not kept (runs before schema 0005)"
            if not texts_kept
            else "the minimum frequency was not met every day",
        )
    )
    monitoring = (
        (EVIDENCED, "changes made outside retention were looked for on every plan and listed")
        if chain_ok
        else (NOT_EVIDENCED, "the chain does not hold")
    )
    return [
        _row("ISO/IEC 27001:2022 A.8.13", "Backups maintained according to the backup policy",
             ["coverage", "retention"], backups),
        _row("ISO/IEC 27001:2022 A.8.13", "Backups tested (restore tests)",
             ["restoreTests"], testing),
        _row("SOC 2 A1.2", "Backup and recovery infrastructure operated as designed",
             ["coverage", "retention"], backups),
        _row("SOC 2 CC7", "Changes and anomalies detected and recorded",
             ["changes", "chain"], monitoring),
        _row("DORA art. 12", "Backup policy: documented scope and minimum frequency",
             ["scope", "coverage"], scope),
        _row("SEC 17a-4(f) audit trail", "Every modification and deletion with time and author",
             ["changes", "chain"], trail),
    ]  # fmt: skip


def _row(control: str, asks: str, sections: list[str], verdict: tuple[str, str]) -> dict[str, Any]:
    return {
        "control": control,
        "asks": asks,
        "sections": sections,
        "status": verdict[0],
        "why": verdict[1],
    }
