"""The seams of the lifecycle: what a job is, what it is given to run with, what the
lifecycle needs of its result, and what the lifecycle hands back.

A job (run, apply, undo; next diff and forecast) says how it prepares once the
configuration is loaded, how it runs with a client, and how its result ends: its reports,
whether it held or changed anything (for the exit code and the notice), the log lines of
its own and the facts of its run-finished event, and its metrics. The lifecycle
(retention.library.lifecycle) does the rest, the same for every job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from retention.ops.clock import Clock, system_clock

if TYPE_CHECKING:
    from retention.api.client import OpsManagerClient
    from retention.apply.executor import Outcome
    from retention.config.settings import RetentionConfig
    from retention.notices.send import Delivery
    from retention.ops.metrics import RunMetrics
    from retention.ops.sharding import Shard
    from retention.ops.stopping import Stop
    from retention.prune.folders import Pruned
    from retention.report.model import RunInfo
    from retention.report.summary import RunSummary
    from retention.walk.inventory import Walk

Mode = Literal["run", "dry-run", "apply", "undo"]
# The facts of a run-finished event beyond those every job has (mode, run id, exit code).
Facts = dict[str, object]


class Progress(Protocol):
    """Who hears how a job goes (the command line's progress on a terminal)."""

    def walk(self, walk: Walk) -> None:
        """One more cluster walked."""

    def apply(self, total: int) -> None:
        """Applying starts: ``total`` PATCHes to send."""

    def outcome(self, outcome: Outcome) -> None:
        """One change done."""

    def close(self) -> None:
        """The job ended, however it ended."""


class Quiet:
    """The progress nobody hears: for a job called as a library."""

    def walk(self, walk: Walk) -> None:
        """Nothing to say."""

    def apply(self, total: int) -> None:
        """Nothing to say."""

    def outcome(self, outcome: Outcome) -> None:
        """Nothing to say."""

    def close(self) -> None:
        """Nothing to end."""


@dataclass(frozen=True)
class JobContext:
    """What a job runs with: the client (under the lock), the configuration, the stop of
    the signals, the clock and whoever hears its progress."""

    client: OpsManagerClient
    config: RetentionConfig
    stop: Stop
    clock: Clock
    progress: Progress


class Finished(Protocol):
    """What the lifecycle reads of any job's result, and its reports it fills in."""

    reports: list[Path]

    @property
    def run_id(self) -> str:
        """The run's id, the end of its folder's name."""

    @property
    def run_dir(self) -> Path:
        """The run's own folder under reports.dir."""

    @property
    def interrupted(self) -> str | None:
        """The signal that stopped the job before the end (SIGINT, SIGTERM), or None."""

    @property
    def failed(self) -> bool:
        """Something failed: exit 1."""


R = TypeVar("R", bound=Finished)


class Job(Protocol[R]):
    """One kind of job the lifecycle runs.

    ``check`` runs first (before the configuration is read: what the command line gave
    that needs no configuration), ``prepare`` once the configuration is read and before
    the lock (what needs no API: the policies), and what it returns runs under the lock
    with a client. The rest says how its result ends.
    """

    @property
    def mode(self) -> Mode:
        """run, dry-run, apply or undo: in the reports, notices, logs and metrics."""

    @property
    def shard(self) -> Shard | None:
        """The shard it works on (its lock and metrics), or None for the whole fleet."""

    @property
    def notifies(self) -> bool:
        """Whether its ending is notified (``notify:`` in retention.yaml)."""

    @property
    def prunes(self) -> bool:
        """Whether reports.keep prunes the reports folder at its end."""

    def check(self) -> None:
        """Refuse what the command line gave, before the configuration is read."""

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], R]:
        """Read what the job needs of the configuration; the step that runs it."""

    def held(self, result: R) -> bool:
        """A safety gate held destructive changes that nothing let through (exit 3)."""

    def changed(self, result: R) -> bool:
        """It changed something (or, a dry run, would have): a ``changes`` notice."""

    def write_reports(
        self, result: R, info: RunInfo, formats: Sequence[str]
    ) -> tuple[list[Path], RunSummary | None]:
        """Write its reports into its run folder; their paths, and the summary they were
        rendered from when its notice says it (None: it sends no notice)."""

    def log_end(self, result: R) -> Facts:
        """Log its own closing lines (failed changes...); the facts of its run-finished
        event."""

    def measure(self, result: R, metrics: RunMetrics) -> None:
        """Fill in its metrics."""


@dataclass(frozen=True)
class Setup:
    """How the lifecycle runs a job: the configuration file (None: $RETENTION_CONFIG, then
    ./retention.yaml), the clock, where the metrics go (nowhere unless asked), who hears
    the progress, and whether a person waits at a terminal (``interactive``: a refused
    first contact with the API fails after a short try instead of the full retries)."""

    config_path: str | Path | None = None
    clock: Clock = system_clock
    metrics_file: Path | None = None
    pushgateway: str | None = None
    progress: Progress = field(default_factory=Quiet)
    interactive: bool = False


@dataclass(frozen=True)
class Ended(Generic[R]):
    """How a job ended: its exit code, its result (its run folder and reports in it), the
    notices sent and the summary they said."""

    mode: Mode
    code: int
    result: R
    notices: list[Delivery] = field(default_factory=list)
    # The summary the reports and the notice were rendered from (None: an undo's).
    summary: RunSummary | None = None
    # What reports.keep removed at the end of a run (None: it did not prune).
    pruned: Pruned | None = None

    @property
    def run_dir(self) -> Path:
        """The job's run folder."""
        return self.result.run_dir

    @property
    def reports(self) -> list[Path]:
        """The reports written into it."""
        return self.result.reports
