"""What each job of the library is asked: one value object a job, made by the command line
from its arguments or by a script, and taken whole by ``Retention``'s method of that job.

Every field has the command line's default; times are aware datetimes (a what-if ``at``),
durations timedeltas, paths Paths. Nothing here reads a file or the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retention.apply.applying import SavedPlan
from retention.core.guard import Asked
from retention.core.policy.duration import RetentionDuration
from retention.library.ending import MetricsTarget
from retention.ops.sharding import Shard
from retention.runfolder.approvelist import read_approve_list


@dataclass(frozen=True)
class PlanRequest:
    """A plan (nothing is sent): to ``out`` (None: plan.json in a new run folder under
    ``report_dir``, else reports.dir), as of ``at`` (a what-if plan, which apply refuses)
    or now, for ``shard`` of the fleet (None: all of it); ``strict``: the plan is written,
    and its policy warnings make the exit code 2. A plan in its run folder gets its reports
    there; ``report`` writes those of a plan ``out`` beside it too."""

    out: Path | None = None
    report_dir: Path | None = None
    at: datetime | None = None
    shard: Shard | None = None
    strict: bool = False
    report: bool = False


@dataclass(frozen=True)
class RunRequest:
    """What cron runs: plan, check the gates, apply (unless ``dry_run``) and report;
    ``strict``: policy warnings stop it once its plan is written, before it sends
    anything (StrictError, exit 2)."""

    dry_run: bool = False
    shard: Shard | None = None
    metrics: MetricsTarget = field(default_factory=MetricsTarget)
    strict: bool = False


@dataclass(frozen=True)
class ApplyRequest:
    """Apply exactly a saved plan (a plan file, or a run folder: its plan.json), refused
    when older than ``max_age``; ``approve`` (cluster names or ids), the clusters the file
    ``approve_from`` lists (approve.txt beside a plan) and ``approve_all`` let through the
    changes held only by max_expire_fraction."""

    plan: Path
    max_age: timedelta = timedelta(hours=24)
    approve: tuple[str, ...] = ()
    approve_all: bool = False
    metrics: MetricsTarget = field(default_factory=MetricsTarget)
    approve_from: Path | None = None

    @property
    def plan_file(self) -> Path:
        """The plan file: ``plan``, or the plan.json of the run folder ``plan``."""
        return self.plan / "plan.json" if self.plan.is_dir() else self.plan

    def saved(self) -> SavedPlan:
        """The saved plan for the apply step, with every approval asked for; UsageError
        naming the file when the approve list cannot be read or lists no cluster."""
        listed = read_approve_list(self.approve_from) if self.approve_from else {}
        approve = tuple(dict.fromkeys((*self.approve, *listed)))
        said = {name: where for name, where in listed.items() if name not in self.approve}
        return SavedPlan(self.plan_file, Asked(self.max_age, approve, self.approve_all, said))


@dataclass(frozen=True)
class UndoRequest:
    """Put back what the run in ``run_dir`` shortened (``dry_run``: say what would be)."""

    run_dir: Path
    dry_run: bool = False
    metrics: MetricsTarget = field(default_factory=MetricsTarget)


@dataclass(frozen=True)
class DiffRequest:
    """Compare the configuration's policies with those ``base`` names ("git:REF", a folder
    or a file) over the whole fleet, as of ``at`` or now (read-only)."""

    base: str
    at: datetime | None = None


@dataclass(frozen=True)
class ForecastRequest:
    """Forecast the configuration's policies (and ``base``'s) ``days`` days ahead in steps
    of ``step``, from ``at`` or now (read-only); ``html``: also write the page with its
    charts there."""

    days: int = 365
    step: timedelta = timedelta(days=1)
    base: str | None = None
    at: datetime | None = None
    html: Path | None = None


@dataclass(frozen=True)
class PruneRequest:
    """Remove the run folders older than ``keep`` (None: reports.keep) that nothing can
    still undo; ``dry_run``: only say which."""

    keep: RetentionDuration | None = None
    dry_run: bool = False


@dataclass(frozen=True)
class ExplainRequest:
    """Explain one snapshot of a plan (a plan file, or a run folder: its plan.json; None:
    the newest in reports.dir), tracing the rules with ``policies`` (None: the
    configuration's)."""

    snapshot_id: str
    plan: Path | None = None
    policies: Path | None = None


@dataclass(frozen=True)
class ClustersRequest:
    """List what discovery finds in the configuration's projects: every cluster and legacy
    config server, its snapshots counted, and the policies that match it (read-only). It
    asks for nothing more yet; it is a value so that a script's call stays the same when
    it does."""


@dataclass(frozen=True)
class DoctorRequest:
    """Check everything the job needs; ``strict``: a warning of the policies is exit 2."""

    strict: bool = False


@dataclass(frozen=True)
class ValidateRequest:
    """Check the policies at ``policies`` (None: the configuration's) without the API."""

    policies: Path | None = None
