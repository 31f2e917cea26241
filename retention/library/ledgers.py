"""The ledger's own jobs: ``retention ledger verify`` (recompute every chain, name the
first record that does not match)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retention.core.wording import counted
from retention.errors import EXIT_FAILURES, EXIT_OK, ChainBrokenError, ConfigError
from retention.ledger.chain import ChainReport, shard_label, verify
from retention.ledger.database import open_ledger
from retention.library.lifecycle import Job, JobContext

if TYPE_CHECKING:
    from retention.config.settings import RetentionConfig


@dataclass(frozen=True)
class LedgerVerifyRequest:
    """Verify the ledger of the configuration (nothing asked beyond it)."""


@dataclass(frozen=True)
class LedgerVerified:
    """What ``ledger verify`` found: the chains, or the first record that breaks one."""

    ledger: str  # its URL as outputs show it
    report: ChainReport = field(default_factory=ChainReport)
    broken: str | None = None  # why the chain does not hold
    record: str | None = None  # the first record that does not match

    @property
    def code(self) -> int:
        """0 when every chain holds, 1 when one does not."""
        return EXIT_FAILURES if self.broken else EXIT_OK

    def document(self) -> dict[str, Any]:
        """ledger verify --format json."""
        return {
            "command": "ledger verify",
            "exitCode": self.code,
            "ledger": self.ledger,
            "verified": self.broken is None,
            "brokenAt": self.record,
            "problem": self.broken,
            "records": self.report.records,
            "shards": [
                {"shard": shard, "records": records, "head": head}
                for shard, (records, head) in sorted(self.report.shards.items())
            ],
            "unfinished": list(self.report.unfinished),
        }

    def lines(self) -> list[str]:
        """What a terminal shows."""
        if self.broken is not None:
            return [f"ledger {self.ledger}: the chain does not hold", f"  {self.broken}"]
        report = self.report
        lines = [
            f"ledger {self.ledger}: {counted(report.records, 'record')} verified, the chain holds"
        ]
        for shard, (records, head) in sorted(report.shards.items()):
            lines.append(f"  {shard_label(shard)}: {counted(records, 'record')}, head {head}")
        if report.unfinished:
            lines.append(
                f"  {counted(len(report.unfinished), 'run')} never finished (killed, or running "
                "now): "
                + ", ".join(report.unfinished[:5])
                + (", ..." if len(report.unfinished) > 5 else "")
            )
        return lines


@dataclass(frozen=True)
class LedgerVerifyJob(Job[LedgerVerified]):
    """Recompute the ledger's chains; it asks no API and takes no lock."""

    request: LedgerVerifyRequest
    connects = False
    mode = "ledger-verify"

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], LedgerVerified]:
        """Where the ledger is (its password from the environment or a file)."""
        place = config.ledger_place(os.environ)

        def step(_run: JobContext) -> LedgerVerified:
            file = place.sqlite_file
            if file is not None and not file.exists():
                raise ConfigError(
                    f"ledger {place.shown}: no ledger there (nothing was recorded at this "
                    "path): check ledger.url, reports.dir or RETENTION_LEDGER_URL"
                )
            with open_ledger(place) as ledger, ledger.reading("verifying its chain") as conn:
                try:
                    return LedgerVerified(place.shown, verify(conn))
                except ChainBrokenError as exc:
                    return LedgerVerified(place.shown, broken=str(exc), record=exc.record)

        return step

    def code(self, result: LedgerVerified) -> int:
        """0 the chain holds, 1 it does not."""
        return result.code
