"""How any job ends, whatever it did: the notices (``notify:``), the run-finished event in
the logs, and the metrics, however the job ends (an error included)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from retention.errors import EXIT_FAILURES, EXIT_INTERRUPTED, RetentionError, exit_meaning
from retention.ops.clock import Clock
from retention.ops.logs import RUN_LOGGER
from retention.ops.metrics import RunMetrics, push, write_textfile

if TYPE_CHECKING:
    from retention.api.client import OpsManagerClient
    from retention.config.notify import NotifySettings
    from retention.notices.send import Delivery
    from retention.ops.sharding import Shard
    from retention.report.summary import RunSummary


def log_run_finished(
    mode: str, run_id: str, code: int, started: datetime, clock: Clock, **facts: object
) -> None:
    """The run-finished event of a run, apply or undo, for log collectors (json logs): on a
    terminal the summary says it all, so in text mode this INFO line shows only with --debug
    (retention.ops.logs.configure)."""
    fields: dict[str, object] = {
        "event": "run-finished",
        "mode": mode,
        "runId": run_id,
        "exitCode": code,
        "meaning": exit_meaning(code),
        **facts,
        "durationSeconds": round((clock() - started).total_seconds(), 3),
    }
    logging.getLogger(RUN_LOGGER).info(
        "%s %s finished: exit %d, %s",
        mode,
        run_id,
        code,
        exit_meaning(code),
        extra={"fields": fields},
    )


class Notifier:
    """The notices of one job (``notify:`` in retention.yaml): sent once, by the lifecycle
    when the job finishes, or by Metrics when it stops on an error after the configuration
    was loaded. What was sent is kept for the summary and the metrics."""

    def __init__(self) -> None:
        self.settings: NotifySettings | None = None
        self.mode = "run"
        self.deliveries: list[Delivery] = []
        self.done = False

    def configure(self, settings: NotifySettings | None, mode: str) -> None:
        """The configuration is loaded: from here on, the job's ending is notified."""
        self.settings, self.mode = settings, mode

    def after_run(
        self,
        run_id: str,
        run_dir: Path,
        code: int,
        summary: RunSummary,
        *,
        changed: bool,
        held: bool,
    ) -> list[Delivery]:
        """Send the notice of a finished job when ``notify.on`` names a kind of its
        ending: ``changed`` (applied, or for a dry run planned), ``held`` by a gate, a
        failure by its exit ``code``, or clusters whose backups stopped (``summary``'s
        plan). The deliveries (none when nothing was sent)."""
        if self.done or self.settings is None:
            return []
        self.done = True
        # Imported when a notice may go out: apprise costs most runs 80 ms for nothing.
        from retention.notices.send import reasons, run_notice, send  # noqa: PLC0415

        why = reasons(code=code, changed=changed, held=held, stale=bool(summary.stale))
        if not why.intersection(self.settings.on):
            return []
        notice = run_notice(
            mode=self.mode,
            run_id=run_id,
            code=code,
            why=why,
            summary=summary,
            run_dir=run_dir,
        )
        self.deliveries = send(self.settings.destinations(), notice)
        return self.deliveries

    def after_error(self, code: int, error: BaseException) -> None:
        """Send the failure notice of a job that stopped on an error with exit 1 or 5
        (``failure`` in ``notify.on``)."""
        if self.done or self.settings is None:
            return
        from retention.notices.send import FAILURE_EXITS, error_notice, send  # noqa: PLC0415

        if code not in FAILURE_EXITS:
            return
        self.done = True
        if "failure" not in self.settings.on:
            return
        # Our errors are worded to be shown (no credential in any); a bug's text is not.
        message = (
            str(error)
            if isinstance(error, RetentionError)
            else f"internal error: {type(error).__name__} (a bug in retention)"
        )
        notice = error_notice(mode=self.mode, code=code, error=message)
        self.deliveries = send(self.settings.destinations(), notice)


@dataclass(frozen=True)
class MetricsTarget:
    """Where a job's metrics go: a node exporter's textfile, a Pushgateway, or both."""

    file: Path | None = None
    pushgateway: str | None = None


class Metrics:
    """Writes the job's metrics, however it ends (when asked to): the block calls write()
    when it finishes, and leaving it with a RetentionError writes its exit code. Its
    ``notifier`` sends the failure notice of a job that stops on an error (exit 1 or 5),
    before the metrics, which count the notices."""

    def __init__(
        self,
        started: datetime,
        shard: Shard | None,
        target: MetricsTarget,
        clock: Clock,
    ) -> None:
        self.started, self.shard, self.target, self.clock = started, shard, target, clock
        self.client: OpsManagerClient | None = None
        self.notifier = Notifier()

    def __enter__(self) -> Metrics:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        # However the job ends, the exit-code gauge must not keep the previous run's value.
        if isinstance(error, RetentionError):
            self.notifier.after_error(error.exit_code, error)
            self.write(error.exit_code)
        elif isinstance(error, KeyboardInterrupt):
            self.write(EXIT_INTERRUPTED)
        elif isinstance(error, Exception):
            self.notifier.after_error(EXIT_FAILURES, error)
            self.write(EXIT_FAILURES)  # an internal error: the CLI says what it was

    def write(self, code: int, measure: Callable[[RunMetrics], None] | None = None) -> None:
        """Write the metrics of a job that ended with ``code``, ``measure`` filling in
        what it did, when a metrics file or a Pushgateway was asked for."""
        target = self.target
        if not (target.file or target.pushgateway):
            return
        label = self.shard.label if self.shard else None
        m = RunMetrics(self.started, self.clock(), code, shard=label)
        if measure is not None:
            measure(m)
        if self.client is not None:
            m.api_requests, m.api_retries = self.client.stats.requests, self.client.stats.retries
        m.notices_sent = sum(1 for n in self.notifier.deliveries if n.sent)
        m.notices_failed = sum(1 for n in self.notifier.deliveries if not n.sent)
        try:
            if target.file:
                write_textfile(target.file, m)
            if target.pushgateway:
                push(target.pushgateway, m)
        except OSError as exc:  # metrics must not turn a finished run into a crash
            # Through logging, so it is a JSON object in json mode; the same line in text.
            text = f"warning: could not write metrics: {exc}"
            logging.getLogger("retention.metrics").warning(
                "could not write metrics: %s",
                exc,
                extra={"text": text, "fields": {"event": "metrics-not-written"}},
            )
