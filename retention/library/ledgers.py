"""The ledger's own jobs: ``retention ledger verify`` (recompute every chain, name the
first record that does not match) and ``retention ledger ack`` (a person looked at the
changes made outside retention of some clusters: they no longer hold them)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from functools import partial
from typing import TYPE_CHECKING, Any

from retention.core.model import Target
from retention.core.outside import Attention
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted
from retention.errors import EXIT_FAILURES, EXIT_OK, ChainBrokenError, ConfigError, UsageError
from retention.ledger.chain import ChainReport, shard_label, verify
from retention.ledger.database import open_ledger
from retention.ledger.recorder import RunEnd
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

        def step(run: JobContext) -> LedgerVerified:
            file = place.sqlite_file
            if file is not None and not file.exists():
                raise ConfigError(
                    f"ledger {place.shown}: no ledger there (nothing was recorded at this "
                    "path): check ledger.url, reports.dir or RETENTION_LEDGER_URL"
                )
            with open_ledger(place) as ledger, ledger.reading("verifying its chain") as conn:
                try:
                    heard = partial(run.stop.check, "verifying the next record")
                    return LedgerVerified(place.shown, verify(conn, heard))
                except ChainBrokenError as exc:
                    return LedgerVerified(place.shown, broken=str(exc), record=exc.record)

        return step

    def code(self, result: LedgerVerified) -> int:
        """0 the chain holds, 1 it does not."""
        return result.code


@dataclass(frozen=True)
class LedgerAckRequest:
    """The clusters a person looked at (names, globs or cluster ids), and what they noted."""

    clusters: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class LedgerAcked:
    """What ``ledger ack`` acknowledged: each cluster's first unacknowledged change, and
    the clusters chosen that had none."""

    ledger: str
    acknowledged: tuple[tuple[Target, Attention], ...] = ()
    nothing_open: tuple[Target, ...] = ()
    note: str | None = None

    def document(self) -> dict[str, Any]:
        """ledger ack --format json."""
        return {
            "command": "ledger ack",
            "exitCode": EXIT_OK,
            "ledger": self.ledger,
            "note": self.note,
            "acknowledged": [
                {
                    "clusterName": t.name,
                    "clusterId": t.cluster_id,
                    "projectId": t.project_id,
                    "sinceRun": a.run,
                    "since": format_timestamp(a.since) if a.since else None,
                }
                for t, a in self.acknowledged
            ],
            "nothingToAcknowledge": [t.name for t in self.nothing_open],
        }

    def lines(self) -> list[str]:
        """What a terminal shows."""
        lines = []
        for target, attention in self.acknowledged:
            when = f" on {format_timestamp(attention.since)}" if attention.since else ""
            lines.append(
                f"acknowledged {target.name}: the changes made outside retention found"
                f"{when} (ledger run {attention.run}) and since no longer hold it"
            )
        if self.nothing_open:
            names = ", ".join(t.name for t in self.nothing_open)
            lines.append(f"nothing to acknowledge for {names}")
        return lines


@dataclass(frozen=True)
class LedgerAckJob(Job[LedgerAcked]):
    """Acknowledge the outside changes of the clusters asked, as a run of its own in the
    ledger (its actor and note in the chain); it asks no API."""

    request: LedgerAckRequest
    connects = False
    locks = True  # beside a run that may be recording the same clusters
    ledgers = True
    mode = "ack"

    def check(self) -> None:
        """At least one cluster."""
        if not self.request.clusters:
            raise UsageError("ledger ack: name at least one cluster (a name, a glob or an id)")

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], LedgerAcked]:
        """The ledger must be on: acknowledging is a record in it."""
        if not config.ledger.enabled:
            raise ConfigError("ledger.enabled is false: there is no ledger to acknowledge in")
        shown = config.ledger_place(os.environ).shown
        request = self.request

        def step(run: JobContext) -> LedgerAcked:
            if run.ledger is None:
                raise AssertionError("a job that ledgers runs with its ledger")
            now = run.clock()
            record = run.ledger.begin(f"ack-{format_timestamp(now)}", now)
            chosen = _chosen(record.known_targets(), request.clusters)
            done = record.acknowledge(chosen, request.note, now)
            acked = {(t.project_id, t.cluster_id) for t, _ in done}
            rest = tuple(t for t in chosen if (t.project_id, t.cluster_id) not in acked)
            return LedgerAcked(shown, tuple(done), rest, request.note)

        return step

    def ledger_end(self, result: LedgerAcked, code: int, ended: datetime) -> RunEnd:
        """The clusters acknowledged, and the note."""
        summary: dict[str, Any] = {"acknowledged": [t.name for t, _ in result.acknowledged]}
        if result.note:
            summary["note"] = result.note
        return RunEnd(ended, code, summary=summary)


def _chosen(known: Sequence[Target], asked: Sequence[str]) -> list[Target]:
    """The known targets each pattern names (a name, a glob of names, or a cluster id);
    UsageError naming a pattern that names none."""
    chosen: dict[tuple[str, str], Target] = {}
    for pattern in asked:
        found = [t for t in known if fnmatchcase(t.name, pattern) or t.cluster_id == pattern]
        if not found:
            names = ", ".join(sorted({t.name for t in known})[:10]) or "none yet"
            raise UsageError(
                f"ledger ack: no cluster the ledger knows is named {pattern!r} (it knows: {names})"
            )
        chosen.update(((t.project_id, t.cluster_id), t) for t in found)
    return list(chosen.values())
