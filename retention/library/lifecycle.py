"""The lifecycle every job goes through, the same for each command:

load the configuration → check the reports folder can be written → take the lock (a job
that changes something) → open the client (a job that asks the API) → run the job (SIGINT
and SIGTERM stop it: no new request starts, and the exit code says which signal) → write
the reports, send the notice, log the job's closing lines and the run-finished event (a
job that leaves a record: run, apply, undo) → prune old run folders (run) → write the
metrics, however the job ended.

A job says which of these it needs (``Job``): a plan, a review or a forecast only reads; a
prune takes the lock but asks no API. The lifecycle prints nothing and picks no exit code
of its own: the job's result says what happened (``Job.code``, through errors.exit_code_for
and its kin) and the command line prints what comes back (``Ended``). A library caller gets
the same reports, notices, logs and metrics as a command. Errors (``RetentionError``) leave
it, after the metrics and the failure notice are written, for the caller to report.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from retention.config.connect import open_client
from retention.config.ledgerplace import LedgerPlace
from retention.config.loading import LoadedConfig, load_config
from retention.config.writable import require_writable
from retention.core.policy.duration import RetentionDuration
from retention.core.wording import counted
from retention.errors import (
    ConfigError,
    LedgerError,
    LedgerSchemaError,
    RetentionError,
    StopRequestedError,
    exit_code_for,
)
from retention.ledger.database import Ledger, open_ledger
from retention.ledger.keeping import prune_ledger
from retention.ledger.recorder import RunEnd, RunStart
from retention.ledger.session import Recording
from retention.library.ending import Metrics, MetricsTarget, Notifier, log_run_finished
from retention.library.stages import Progress, Quiet, StageLog
from retention.ops.actor import actor
from retention.ops.clock import Clock
from retention.ops.lock import run_lock
from retention.ops.stopping import Stop, on_signals
from retention.prune.folders import Pruned
from retention.prune.pruning import prune_reports
from retention.report.summary import RunInfo
from retention.version import __version__

if TYPE_CHECKING:
    from retention.api.client import OpsManagerClient
    from retention.config.settings import RetentionConfig
    from retention.notices.send import Delivery
    from retention.ops.metrics import RunMetrics
    from retention.ops.sharding import Shard
    from retention.report.summary import RunSummary

# The facts of a run-finished event beyond those every job has (mode, run id, exit code).
Facts = dict[str, object]
R = TypeVar("R")


@dataclass(frozen=True)
class Setup:
    """How the lifecycle runs a job: the configuration file (None: $RETENTION_CONFIG, then
    ./retention.yaml), the clock, where the metrics go (nowhere unless asked), who hears
    the progress, and whether a person waits at a terminal (``interactive``: a refused
    first contact with the API fails after a short try instead of the full retries)."""

    config_path: str | Path | None
    clock: Clock
    metrics: MetricsTarget = field(default_factory=MetricsTarget)
    progress: Progress = field(default_factory=Quiet)
    interactive: bool = False
    actor: str | None = None  # who runs it, for the ledger (None: ops.actor's default)


@dataclass(frozen=True)
class JobContext:
    """What a job runs with: the configuration, the stop of the signals, the clock, who
    hears its progress, and the client (under the lock), for a job that asks the API."""

    config: RetentionConfig
    stop: Stop
    clock: Clock
    progress: Progress
    api: OpsManagerClient | None = None
    # The job's run in the ledger (a job that ``ledgers``): its step begins it with the
    # run's id, once it has made its run folder.
    ledger: Recording | None = None

    @property
    def client(self) -> OpsManagerClient:
        """The API client (a job that does not connect has none)."""
        if self.api is None:
            raise AssertionError("this job asks no API: it has no client")
        return self.api


class Job(Generic[R]):
    """One kind of job the lifecycle runs; a subclass says what it needs.

    ``check`` runs first (before the configuration is read: what the command line gave
    that needs no configuration), ``prepare`` once the configuration is read and before
    the lock (what needs no API: the policies), and what it returns runs under the lock,
    with a client when the job ``connects``. A job that ``records`` ends with its reports,
    notice and run-finished event (the methods below ``code``)."""

    locks = False  # takes the reports folder's lock (it changes something)
    connects = True  # opens the API client (it needs credentials)
    records = False  # ends with reports, a notice and the run-finished event
    notifies = False  # its ending is notified (``notify:`` in retention.yaml)
    prunes = False  # reports.keep prunes the reports folder at its end
    ledgers = False  # its run is recorded in the ledger (its step begins the record)
    # A ledger that cannot be opened stops it (exit 2 or 1, nothing sent); False: a warning,
    # and the job goes on unrecorded (a plan, which sends nothing).
    needs_ledger = True

    @property
    def mode(self) -> str:
        """Its name in the reports, notices, logs and metrics (run, plan, diff...)."""
        raise NotImplementedError

    @property
    def shard(self) -> Shard | None:
        """The shard it works on (its lock and metrics), or None for the whole fleet."""
        return None

    def check(self) -> None:
        """Refuse what the command line gave, before the configuration is read."""

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], R]:
        """Read what the job needs of the configuration; the step that runs it."""
        raise NotImplementedError

    def code(self, result: R) -> int:
        """The exit code of the job's result (errors.exit_code_for of what follows)."""
        return exit_code_for(
            failed=self.failed(result), held=self.held(result), stopped_by=self.interrupted(result)
        )

    def failed(self, result: R) -> bool:
        """Something failed: exit 1."""
        return False

    def interrupted(self, result: R) -> str | None:
        """The signal that stopped it before the end."""
        return None

    def held(self, result: R) -> bool:
        """A safety gate held destructive changes that nothing let through (exit 3)."""
        return False

    def changed(self, result: R) -> bool:
        """It changed something (or, a dry run, would have): a ``changes`` notice."""
        return False

    def folder(self, result: R) -> tuple[str, Path]:
        """Its run id and run folder (a job that records)."""
        raise NotImplementedError

    def write_reports(
        self, result: R, info: RunInfo, formats: Sequence[str]
    ) -> tuple[list[Path], RunSummary | None]:
        """Write its reports into its run folder; their paths, and the summary they were
        rendered from when its notice says it (None: it sends no notice)."""
        return [], None

    def log_end(self, result: R) -> Facts:
        """Log its own closing lines (failed changes...); the facts of its run-finished
        event."""
        return {}

    def measure(self, result: R, metrics: RunMetrics) -> None:
        """Fill in its metrics."""

    def ledger_end(self, result: R, code: int, ended: datetime) -> RunEnd:
        """How its run ends in the ledger (more than the exit code: a job says its plan's
        digest, approvals and counts)."""
        return RunEnd(ended=ended, exit_code=code, signal=self.interrupted(result))


@dataclass(frozen=True)
class Ended(Generic[R]):
    """How a job ended: its exit code, its result, the reports written, the notices sent
    and the summary they said, and what reports.keep removed (None: it did not prune)."""

    mode: str
    code: int
    result: R
    reports: list[Path] = field(default_factory=list)
    notices: list[Delivery] = field(default_factory=list)
    summary: RunSummary | None = None
    pruned: Pruned | None = None


def load(
    config_path: str | Path | None, *, clock: Clock, require_credentials: bool = True
) -> LoadedConfig:
    """The configuration, its warnings logged ("warning: ..." on a terminal, one JSON
    object each in json mode)."""
    loaded = load_config(config_path, require_credentials=require_credentials, clock=clock)
    log = logging.getLogger("retention.config")
    for warning in loaded.warnings:
        text, fields = f"warning: {warning}", {"event": "config-warning"}
        log.warning("%s", warning, extra={"text": text, "fields": fields})
    return loaded


def run_lifecycle(job: Job[R], setup: Setup) -> Ended[R]:
    """Run ``job`` from its configuration to its metrics (see the module's docstring)."""
    clock = setup.clock
    progress = StageLog(setup.progress, clock)  # and a log line as each stage ends
    started = clock()
    metrics = Metrics(started, job.shard, setup.metrics, clock)
    with on_signals(Stop()) as stop, metrics:
        job.check()
        loaded = load(setup.config_path, clock=clock, require_credentials=job.connects)
        config = loaded.config
        if job.notifies:
            metrics.notifier.configure(config.notify, job.mode)
        step = job.prepare(config)
        if job.locks:
            require_writable(config.reports.dir, "reports.dir")
        locked = run_lock(config.reports.dir, job.shard, clock=clock) if job.locks else None
        with locked or nullcontext(), _recording(job, loaded, setup) as recording:
            connected = (
                open_client(loaded, stop=stop, clock=clock, interactive=setup.interactive)
                if job.connects
                else None
            )
            with connected or nullcontext():
                metrics.client = connected
                try:
                    context = JobContext(config, stop, clock, progress, connected, recording)
                    result = step(context)
                finally:
                    progress.close()
            head = _finish(job, result, recording, connected, config, clock)
            formats = config.reports.formats
            ended = (
                conclude(job, result, started, formats, clock, notifier=metrics.notifier, head=head)
                if job.records
                else Ended(job.mode, job.code(result), result)
            )
            if job.prunes and config.reports.keep is not None:
                ended = replace(
                    ended, pruned=_prune(config.reports.dir, config.reports.keep, clock)
                )
        metrics.write(ended.code, lambda m: _measure(job, result, m, head))
    return ended


@contextmanager
def _recording(job: Job[R], loaded: LoadedConfig, setup: Setup) -> Iterator[Recording | None]:
    """The job's recording in the ledger (None: a job the ledger does not record), the
    ledger closed at the end. A job that raises is recorded as ended by its error's exit
    code or its signal; one killed outright stays unfinished."""
    if not (job.ledgers and loaded.config.ledger.enabled):
        yield None
        return
    place = loaded.config.ledger_place(os.environ)
    shard = job.shard
    start = RunStart(
        run_id="",
        mode=job.mode,
        shard="" if shard is None else shard.label,
        started=setup.clock(),
        actor=actor(setup.actor),
        key_name=loaded.credentials.public_key if loaded.credentials else None,
        base_url=loaded.config.api.base_url,
        config_sha256=_sha256(loaded.path),
        version=__version__,
    )
    opened = _open_ledger(place, loaded.config, required=job.needs_ledger)
    if opened is None:
        yield None
        return
    with opened as ledger:
        recording = Recording(ledger, start)
        try:
            yield recording
        except StopRequestedError as exc:
            _finish_failed(recording, setup.clock, exc.exit_code, exc.signal_name)
            raise
        except RetentionError as exc:
            _finish_failed(recording, setup.clock, exc.exit_code, None)
            raise


def _open_ledger(place: LedgerPlace, config: RetentionConfig, *, required: bool) -> Ledger | None:
    """The ledger, opened; a SQLite ledger's folder checked writable first (exit 2, as
    reports.dir is). A ledger that cannot be opened raises, or for a job that can go on
    without it is a warning and None."""
    try:
        if (file := place.sqlite_file) is not None:
            setting = "ledger.url" if config.ledger.url else "reports.dir"
            require_writable(file.parent, setting)
        return open_ledger(place)
    except (LedgerError, ConfigError) as exc:
        if required or isinstance(exc, LedgerSchemaError):
            raise
        text = (
            f"warning: {exc}: this job is not recorded, and changes made outside retention "
            "are not looked for"
        )
        logging.getLogger("retention.ledger").warning(
            "%s", text, extra={"text": text, "fields": {"event": "ledger-unavailable"}}
        )
        return None


def _finish_failed(recording: Recording, clock: Clock, code: int, signal: str | None) -> None:
    """Record a run a RetentionError ended; a ledger that fails now is logged, not raised
    over the error that ended the run."""
    try:
        recording.finish(RunEnd(clock(), code, signal))
    except LedgerError as exc:
        logging.getLogger("retention.ledger").error("%s", exc)  # noqa: TRY400 - said whole


def _finish(
    job: Job[R],
    result: R,
    recording: Recording | None,
    client: OpsManagerClient | None,
    config: RetentionConfig,
    clock: Clock,
) -> str | None:
    """Finish the job's run in the ledger (unless its step did), after ledger.keep removed
    what it lets go (a job that prunes: a run); the chain's head."""
    if recording is None:
        return None
    keep = config.ledger.keep
    if keep is not None and job.prunes and recording.record is not None and not recording.finished:
        pruned = prune_ledger(recording.ledger, keep, clock(), recording.record)
        if pruned.removed:
            text = f"ledger.keep removed {counted(pruned.runs, 'run')} older than {keep}"
            logging.getLogger("retention.ledger").info(
                "%s", text, extra={"text": text, "fields": {"event": "ledger-pruned"}}
            )
    end = replace(
        job.ledger_end(result, job.code(result), clock()),
        service_version=client.service_version if client is not None else None,
    )
    return recording.finish(end)


def _measure(job: Job[R], result: R, metrics: RunMetrics, head: str | None) -> None:
    """The job's metrics, and the ledger's head once its run was recorded."""
    job.measure(result, metrics)
    metrics.ledger_head = head


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _prune(reports: Path, keep: RetentionDuration, clock: Clock) -> Pruned | None:
    """reports.keep at the end of a run; a folder that cannot be read or removed is a
    warning, never the run's failure."""
    try:
        return prune_reports(reports, keep, now=clock())
    except OSError as exc:
        text = f"warning: reports.keep: cannot prune {reports}: {exc.strerror or exc}"
        fields = {"event": "prune-failed", "folder": str(reports)}
        logging.getLogger("retention.prune").warning(
            "%s", text, extra={"text": text, "fields": fields}
        )
        return None


def conclude(  # noqa: PLR0913 - the ledger's head is one more fact of the same ending
    job: Job[R],
    result: R,
    started: datetime,
    formats: Sequence[str],
    clock: Clock,
    *,
    notifier: Notifier | None = None,
    head: str | None = None,
) -> Ended[R]:
    """End a job that ran: its exit code, its reports, the notice, its closing log lines
    and the run-finished event. With a notice to send, report.md is written whatever
    ``reports.formats`` says: the notice is report.md's head, and its reader is promised the
    whole of it in the run folder (docs/configuration.md)."""
    held, code = job.held(result), job.code(result)
    run_id, run_dir = job.folder(result)
    info = RunInfo(run_id, job.mode, started, clock(), code, __version__, ledger_head=head)
    if notifier is not None and notifier.settings is not None and "markdown" not in formats:
        formats = [*formats, "markdown"]
    reports, summary = job.write_reports(result, info, formats)
    notices = []
    if notifier is not None and summary is not None:
        changed = job.changed(result)
        notices = notifier.after_run(run_id, run_dir, code, summary, changed=changed, held=held)
    facts = job.log_end(result)
    log_run_finished(job.mode, run_id, code, started, clock, **facts)
    return Ended(job.mode, code, result, reports, notices, summary)
