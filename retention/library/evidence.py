"""``retention evidence``: the evidence of a period for auditors, from the ledger alone
(no API, no lock, nothing written to the ledger), in HTML, Markdown, JSON or CSV."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Generator, Iterable
from contextlib import ExitStack, closing
from dataclasses import dataclass
from datetime import UTC, date
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from sqlalchemy import Connection, func, select

from retention.core.wording import counted, printable
from retention.errors import UsageError
from retention.evidence.beside import verifying
from retention.evidence.build import document
from retention.evidence.gather import Period, Reading, Verified, verified_on
from retention.evidence.render import FORMATS, write
from retention.evidence.restorelog import RestoreTest, read_restore_log
from retention.evidence.steps import LOGGING, MAKING, STEPS, WRITING
from retention.ledger.database import open_to_read
from retention.ledger.tables import events
from retention.library.lifecycle import Job, JobContext
from retention.ops.stopping import Stop

if TYPE_CHECKING:
    from retention.config.settings import RetentionConfig


# Events from which the chain is verified beside the reading, in another process (the
# ledger-size benchmark's steady fleet writes about 4,000 a day).
BESIDE = 200_000
# Change log entries between two looks at the stop.
_HEARD_EVERY = 5_000


def _events_in(conn: Connection) -> int:
    """About how many events the ledger holds (its newest event's number: no count)."""
    return int(conn.execute(select(func.max(events.c.seq))).scalar() or 0)


@dataclass(frozen=True)
class EvidenceRequest:
    """The period (its first and last day, UTC), the clusters and projects (globs; none:
    all), the formats, where to write them (None: nowhere, the caller takes the text),
    and a team's record of restore tests. ``stream``: write the one format asked for
    there instead (the CLI's stdout for ``--out -``)."""

    first: date
    last: date
    clusters: tuple[str, ...] = ()
    projects: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("html",)
    out: Path | None = None
    restore_log: Path | None = None
    stream: TextIO | None = None


@dataclass(frozen=True)
class Evidence:
    """The evidence: its document (its change log the first entries only) and the files
    written."""

    doc: dict[str, Any]
    written: tuple[Path, ...] = ()

    @property
    def code(self) -> int:
        """0 everything met, 3 something not met, 1 the chain does not hold."""
        return int(self.doc["exitCode"])

    def lines(self) -> list[str]:
        """What a terminal shows."""
        doc = self.doc
        p = doc["period"]
        cov = doc["coverage"]
        lines = [
            f"Evidence {p['from']} to {p['to']}: {counted(len(cov), 'cluster')}, "
            f"{counted(doc['scope']['runs']['total'], 'run')}, "
            f"{counted(doc['changes']['sent'], 'change')} sent, "
            f"{counted(len(doc['changes']['outside']), 'change')} made outside retention",
        ]
        if doc["notMet"]:
            lines.append(f"Not met ({len(doc['notMet'])}):")
            for n in doc["notMet"][:20]:
                who = f"{n['cluster']}: " if n["cluster"] else ""
                lines.append(f"  {who}{n['section']}: {n['text']}")
            if len(doc["notMet"]) > 20:
                lines.append(f"  ... {len(doc['notMet']) - 20} more in the report")
        else:
            lines.append("Everything in scope was met: coverage, retention, the chain.")
        chain = doc["chain"]
        lines.append(
            "Chain: holds" if chain["verified"] else f"Chain: does NOT hold: {chain['problem']}"
        )
        lines += [f"Written: {path}" for path in self.written]
        # Names come from the API and the ledger: no control character reaches a terminal.
        return [printable(line) for line in lines]


@dataclass(frozen=True)
class EvidenceJob(Job[Evidence]):
    """Read the ledger, build the evidence, write its formats."""

    request: EvidenceRequest
    connects = False
    mode = "evidence"

    def check(self) -> None:
        """A period that ends before it starts, or a format we do not write."""
        r = self.request
        if r.last < r.first:
            raise UsageError(f"--to {r.last} is before --from {r.first}")
        unknown = [f for f in r.formats if f not in FORMATS]
        if unknown:
            raise UsageError(f"--format {unknown[0]}: one of {', '.join(FORMATS)}")

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], Evidence]:
        """Where the ledger is; the team's restore tests, read and checked now."""
        place = config.ledger_place(os.environ)
        r = self.request
        tests: list[RestoreTest] | None = (
            None if r.restore_log is None else read_restore_log(r.restore_log)
        )

        def step(run: JobContext) -> Evidence:
            now = run.clock()
            today = now.astimezone(UTC).date()
            if r.first > today or r.last > today:
                late = r.first if r.first > today else r.last
                flag = "--from" if r.first > today else "--to"
                raise UsageError(f"{flag} {late} is in the future (today is {today}, UTC)")
            period = Period(r.first, r.last)
            # One read-only transaction for the period: the JSON and the CSV stream the
            # change log from the ledger as they are written. A large ledger's chain is
            # verified in a process of its own meanwhile: a year of a fleet is two
            # million lines to hash, as long as the rest of the evidence takes.
            with (
                open_to_read(place) as ledger,
                ledger.reading("reading the evidence") as conn,
                ExitStack() as stack,  # ends first: the log's cursor while conn is open
            ):
                log_first = r.stream is None and r.out is not None and _logged(r.formats)
                run.progress.sections(len(STEPS) - (0 if log_first else 1))
                heard = partial(run.stop.check, "verifying the next record")
                chain: Callable[[], Verified] = partial(verified_on, conn, heard)
                if _events_in(conn) >= BESIDE:
                    chain = stack.enter_context(verifying(place, run.stop))
                reading = Reading(conn, period, r.clusters, r.projects)
                facts = reading.gather(chain)
                run.stop.check("making the evidence")
                # Closed before the connection, however the writing ends.
                log = stack.enter_context(closing(_stoppable(reading.change_log(), run.stop)))

                def make() -> dict[str, Any]:
                    run.stop.check("making the document")
                    run.progress.section(MAKING)
                    made = document(facts, now, place.shown, reading, tests)
                    run.stop.check("writing the files")
                    run.progress.section(WRITING)
                    return made

                if log_first:
                    run.progress.section(LOGGING)
                written: tuple[Path, ...] = ()
                if r.stream is not None:
                    doc = write(make, {r.formats[0]: r.stream}, log)
                elif r.out is not None:
                    doc, written = _write(make, r, period, log)
                else:
                    doc = make()
                run.progress.section("")
            return Evidence(doc, written)

        return step

    def code(self, result: Evidence) -> int:
        """0 met, 3 not met, 1 the chain does not hold."""
        return result.code


def _logged(formats: tuple[str, ...]) -> bool:
    """Whether ``formats`` have the whole change log (the JSON and the CSV do)."""
    return "json" in formats or "csv" in formats


def _stoppable(
    log: Generator[dict[str, Any], None, None], stop: Stop
) -> Generator[dict[str, Any], None, None]:
    """The change log, a stop heard every few thousand entries (a year's has hundreds of
    thousands: a Ctrl-C is not left waiting for the last). Closed, it closes the log's
    cursor at once, while its connection is open."""
    try:
        for n, entry in enumerate(log):
            if n % _HEARD_EVERY == 0:
                stop.check("writing the change log")
            yield entry
    finally:
        log.close()


def _write(
    make: Callable[[], dict[str, Any]],
    r: EvidenceRequest,
    period: Period,
    log: Iterable[dict[str, Any]],
) -> tuple[dict[str, Any], tuple[Path, ...]]:
    """Each format to its file in ``r.out`` (the change log read once for all, first: the
    JSON's spilled to a temporary file until the document is made), each through a
    temporary file renamed into place: a reader never finds half of one. The document
    and the files."""
    out = r.out
    if out is None:
        return make(), ()
    paths = {fmt: out / f"evidence-{period.first}-{period.last}.{fmt}" for fmt in r.formats}
    temporary = {fmt: path.with_name(path.name + ".tmp") for fmt, path in paths.items()}
    try:
        out.mkdir(parents=True, exist_ok=True)
        with ExitStack() as files:
            streams = {
                fmt: files.enter_context(tmp.open("w", encoding="utf-8", newline=""))
                for fmt, tmp in temporary.items()
            }

            def spill() -> BinaryIO:
                # Unlinked at once: nothing is left of it, whatever stops the evidence.
                return files.enter_context(tempfile.TemporaryFile("w+b", dir=out))

            doc = write(make, streams, log, spill)
        for fmt, tmp in temporary.items():
            tmp.replace(paths[fmt])
    except BaseException as exc:
        # Nothing half written is left, whatever stopped it: a full disk, the chain's
        # process, Ctrl-C while the change log was written.
        for tmp in temporary.values():
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UsageError(
                f"--out {out}: cannot write the evidence ({exc.strerror or exc})"
            ) from None
        raise
    return doc, tuple(paths.values())
