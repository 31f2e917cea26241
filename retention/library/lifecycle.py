"""The lifecycle every job goes through, the same for run, apply and undo:

load the configuration → check the reports folder can be written → take the lock → open
the client → run the job (SIGINT and SIGTERM stop it: no new request starts, and the exit
code says which signal) → write the reports → send the notice → log the job's closing lines
and the run-finished event → write the metrics, however the job ended.

It prints nothing and picks no exit code of its own: the command line prints what comes
back (``Ended``) and returns its code; a library caller gets the same reports, notices,
logs and metrics as a command. Errors (``RetentionError``) leave it, after the metrics and
the failure notice are written, for the caller to report.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from retention import __version__
from retention.config.connect import open_client
from retention.config.loading import LoadedConfig, load_config
from retention.config.writable import require_writable
from retention.core.policy.duration import RetentionDuration
from retention.errors import exit_code_for
from retention.library.ending import Metrics, Notifier, log_run_finished
from retention.library.job import Ended, Job, JobContext, R, Setup
from retention.ops.clock import Clock, system_clock
from retention.ops.lock import run_lock
from retention.ops.stopping import Stop, on_signals
from retention.prune.folders import Pruned
from retention.prune.pruning import prune_reports
from retention.report.model import RunInfo


def load(
    config_path: str | Path | None, *, clock: Clock = system_clock, require_credentials: bool = True
) -> LoadedConfig:
    """The configuration, its warnings logged ("warning: ..." on a terminal, one JSON
    object each in json mode)."""
    loaded = load_config(config_path, require_credentials=require_credentials, clock=clock)
    log = logging.getLogger("retention.config")
    for warning in loaded.warnings:
        text, fields = f"warning: {warning}", {"event": "config-warning"}
        log.warning("%s", warning, extra={"text": text, "fields": fields})
    return loaded


def run_lifecycle(job: Job[R], setup: Setup | None = None) -> Ended[R]:
    """Run ``job`` from its configuration to its metrics (see the module's docstring)."""
    setup = setup or Setup()
    clock, progress = setup.clock, setup.progress
    started = clock()
    metrics = Metrics(started, job.shard, setup.metrics_file, setup.pushgateway, clock)
    with on_signals(Stop()) as stop, metrics:
        job.check()
        loaded = load(setup.config_path, clock=clock)
        config = loaded.config
        if job.notifies:
            metrics.notifier.configure(config.notify, job.mode)
        step = job.prepare(config)
        require_writable(config.reports.dir, "reports.dir")
        with run_lock(config.reports.dir, job.shard, clock=clock):
            with open_client(
                loaded, stop=stop, clock=clock, interactive=setup.interactive
            ) as client:
                metrics.client = client
                try:
                    result = step(JobContext(client, config, stop, clock, progress))
                finally:
                    progress.close()
            formats = config.reports.formats
            ended = conclude(job, result, started, formats, clock, notifier=metrics.notifier)
            if job.prunes and config.reports.keep is not None:
                ended = replace(
                    ended, pruned=_prune(config.reports.dir, config.reports.keep, clock)
                )
        metrics.write(ended.code, lambda m: job.measure(result, m))
    return ended


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


def conclude(
    job: Job[R],
    result: R,
    started: datetime,
    formats: Sequence[str],
    clock: Clock = system_clock,
    *,
    notifier: Notifier | None = None,
) -> Ended[R]:
    """End a job that ran: its exit code, its reports, the notice, its closing log lines
    and the run-finished event. With a notice to send, report.md is written whatever
    ``reports.formats`` says: the notice is report.md's head, and its reader is promised the
    whole of it in the run folder (docs/configuration.md)."""
    held = job.held(result)
    code = exit_code_for(failed=result.failed, held=held, stopped_by=result.interrupted)
    info = RunInfo(result.run_id, job.mode, started, clock(), code, __version__)
    if notifier is not None and notifier.settings is not None and "markdown" not in formats:
        formats = [*formats, "markdown"]
    result.reports, summary = job.write_reports(result, info, formats)
    notices = []
    if notifier is not None and summary is not None:
        changed = job.changed(result)
        notices = notifier.after_run(
            result.run_id, result.run_dir, code, summary, changed=changed, held=held
        )
    facts = job.log_end(result)
    log_run_finished(job.mode, result.run_id, code, started, clock, **facts)
    return Ended(job.mode, code, result, notices, summary)
