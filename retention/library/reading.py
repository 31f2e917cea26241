"""The jobs that change nothing on the service: a plan, a review of a policy change, a
forecast, a listing of the clusters (each reads the API, none takes the lock), and a prune
of old run folders (which takes the lock, when it removes, and asks no API).

None of them leaves a record of its own (reports, notice, run-finished event): what they
find goes to their result. A plan still writes its files, into a run folder of its own
unless told where; stopped by a signal, that folder says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retention.clusters.listing import Clusters, list_clusters
from retention.config.baseline import Baseline, both_sides, current_policies
from retention.config.policyfiles import load_policies
from retention.config.scope import Scope
from retention.config.writable import require_writable
from retention.core.policy.loader import PolicySet
from retention.core.timestamps import format_timestamp
from retention.core.wording import counted
from retention.diff import render as diff_render
from retention.diff.document import review_document
from retention.diff.review import Review, review
from retention.errors import (
    EXIT_FAILURES,
    EXIT_HELD,
    EXIT_OK,
    EXIT_USAGE,
    PolicyError,
    StopRequestedError,
    UsageError,
)
from retention.forecast.document import forecast_document
from retention.forecast.forecaster import Forecast, forecast_fleet
from retention.forecast.page import write_forecast_html
from retention.forecast.render import text_lines as forecast_lines
from retention.ledger.recorder import RunEnd
from retention.library.ledgered import plan_end, policy_refs, policy_texts
from retention.library.lifecycle import Job, JobContext
from retention.library.requests import (
    ClustersRequest,
    DiffRequest,
    ForecastRequest,
    PlanRequest,
    PruneRequest,
)
from retention.plan.planner import PlanResult, make_plan, planning_stopped
from retention.prune.pruning import PruneResult, prune_reports
from retention.report.render import render_plan
from retention.report.summary import RunInfo
from retention.runfolder.folder import RunFolder
from retention.version import __version__

if TYPE_CHECKING:
    from retention.config.settings import RetentionConfig
    from retention.ops.sharding import Shard

log = logging.getLogger("retention.plan")


def _plan_reports(result: PlanResult, info: RunInfo, formats: Sequence[str]) -> tuple[Path, ...]:
    """The plan's report.html and report.md, for a reviewer's browser; a report that cannot
    be written is a warning (the plan is written, and apply needs nothing more)."""
    try:
        return tuple(render_plan(result.plan.path, info, formats))
    except OSError as exc:
        text = f"warning: cannot write the plan's reports: {exc.strerror or exc}"
        log.warning("%s", text, extra={"text": text, "fields": {"event": "report-failed"}})
        return ()


@dataclass(frozen=True)
class PlanJob(Job[PlanResult]):
    """A plan on its own: written where the request says, nothing sent."""

    request: PlanRequest
    mode = "plan"
    ledgers = True
    needs_ledger = False  # a plan sends nothing: without its ledger it warns and goes on

    @property
    def shard(self) -> Shard | None:
        """The request's shard."""
        return self.request.shard

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], PlanResult]:
        """Load the policies, and choose where the plan goes (checked writable)."""
        scope = Scope.of(config, load_policies(config.policies), self.request.shard)
        out = self.request.out

        def step(run: JobContext) -> PlanResult:
            created = run.clock()
            plan_path = self._plan_path(config, created)
            run_id = RunFolder(plan_path.parent).run_id if out is None else plan_path.stem
            record = (
                run.ledger.begin(run_id, created, policy_refs(scope), policy_texts(scope))
                if run.ledger is not None
                else None
            )
            try:
                result = make_plan(
                    run.client,
                    scope,
                    plan_path=plan_path,
                    now=created,
                    at=self.request.at,
                    listener=run.progress,
                    record=record,
                )
            except StopRequestedError as exc:
                # A plan's own folder says it was stopped; a file named by --out is left as
                # it was (make_plan writes nothing in its place).
                if out is not None:
                    raise planning_stopped(exc, f"{plan_path} is as it was") from None
                where = RunFolder(plan_path.parent).mark_interrupted(
                    "plan", exc.signal_name, created, run.clock()
                )
                raise planning_stopped(exc, f"the run folder says so ({where})") from None
            head = (
                run.ledger.finish(plan_end(result.plan, self.code(result), run.clock()))
                if run.ledger is not None
                else None
            )
            result = replace(result, ledger_head=head)
            if out is not None and not self.request.report:
                return result
            info = RunInfo(
                run_id,
                self.mode,
                created,
                run.clock(),
                self.code(result),
                __version__,
                ledger_head=head,
            )
            return replace(result, reports=_plan_reports(result, info, config.reports.formats))

        return step

    def _plan_path(self, config: RetentionConfig, created: datetime) -> Path:
        """--out, or plan.json in a new run folder; ConfigError when it cannot be written."""
        out, report_dir = self.request.out, self.request.report_dir
        if out is not None:
            require_writable(out.parent, "--out")
            return out
        base = report_dir or config.reports.dir
        require_writable(base, "--report-dir" if report_dir else "reports.dir")
        return RunFolder.new(base, created).plan

    def code(self, result: PlanResult) -> int:
        """2 when --strict and the plan has policy warnings (the plan is written all the
        same, for a person to read), else as every job."""
        if self.request.strict and result.policy_warnings:
            return EXIT_USAGE
        return super().code(result)

    def failed(self, result: PlanResult) -> bool:
        """A cluster could not be walked."""
        return bool(result.errors)

    def held(self, result: PlanResult) -> bool:
        """A gate held destructive changes."""
        return result.held


@dataclass(frozen=True)
class Reviewed:
    """A finished review, what it compared and when."""

    review: Review
    base: Baseline
    current: PolicySet
    what_if: bool

    @property
    def code(self) -> int:
        """3 when the current policies stop keeping a snapshot the base keeps (what a
        reviewer must see wins over a cluster that could not be walked), else 1 for walk
        errors, else 0."""
        if self.review.keeps_less:
            return EXIT_HELD
        return EXIT_FAILURES if self.review.errors else EXIT_OK

    def document(self) -> dict[str, Any]:
        """diff --format json."""
        found, base, what_if = self.review, self.base, self.what_if
        return review_document(found, base, self.current, exit_code=self.code, what_if=what_if)

    def lines(self) -> list[str]:
        """The review for a terminal."""
        return diff_render.text_lines(self.review, self.base, what_if=self.what_if)

    def markdown(self) -> str:
        """The review as a pull-request comment (diff --format markdown)."""
        return diff_render.markdown(self.review, self.base, what_if=self.what_if)


@dataclass(frozen=True)
class DiffJob(Job[Reviewed]):
    """A review of a policy change: one read-only walk, two decisions per cluster."""

    request: DiffRequest
    mode = "diff"

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], Reviewed]:
        """Load both sides' policies (a problem on either named with its side)."""
        current, baseline = both_sides(config.policies, self.request.base)
        scope = Scope.of(config, current)
        at = self.request.at

        def step(run: JobContext) -> Reviewed:
            now = at or run.clock()
            with _read_only("reviewing", "the review was whole"):
                found = review(run.client, baseline.policies, scope, now=now, listener=run.progress)
            return Reviewed(found, baseline, current, what_if=at is not None)

        return step

    def code(self, result: Reviewed) -> int:
        """See Reviewed.code."""
        return result.code


@dataclass(frozen=True)
class Forecasted:
    """A finished forecast, the policies it ran (and the base's), and whether --at."""

    forecast: Forecast
    current: PolicySet
    base: Baseline | None
    what_if: bool

    @property
    def code(self) -> int:
        """1 when a cluster could not be walked, else 0."""
        return EXIT_FAILURES if self.forecast.errors else EXIT_OK

    def document(self) -> dict[str, Any]:
        """forecast --format json."""
        found, base, what_if = self.forecast, self.base, self.what_if
        return forecast_document(found, self.current, base, exit_code=self.code, what_if=what_if)

    def lines(self) -> list[str]:
        """The forecast for a terminal."""
        return forecast_lines(self.forecast, self.base, what_if=self.what_if)


@dataclass(frozen=True)
class ForecastJob(Job[Forecasted]):
    """A forecast of what the policies keep: one read-only walk, each cluster run forward
    under each side's policies."""

    request: ForecastRequest
    mode = "forecast"

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], Forecasted]:
        """Load the policies (and the base's, exactly as a review reads them)."""
        request = self.request
        if request.base is None:
            current, baseline = current_policies(config.policies), None
        else:
            current, baseline = both_sides(config.policies, request.base)
        scope = Scope.of(config, current)

        def step(run: JobContext) -> Forecasted:
            now = request.at or run.clock()
            base = None if baseline is None else baseline.policies
            with _read_only("forecasting", "the forecast was whole"):
                found = forecast_fleet(
                    run.client,
                    scope,
                    base,
                    now=now,
                    days=request.days,
                    step=request.step,
                    listener=run.progress,
                )
            forecasted = Forecasted(found, current, baseline, what_if=request.at is not None)
            if request.html is not None:
                _write_page(request.html, forecasted)
            return forecasted

        return step

    def code(self, result: Forecasted) -> int:
        """See Forecasted.code."""
        return result.code


@dataclass(frozen=True)
class ClustersJob(Job[Clusters]):
    """What discovery finds, each target walked for its snapshot count and newest snapshot
    and matched with the policies: one read-only pass, no lock."""

    request: ClustersRequest
    mode = "clusters"

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], Clusters]:
        """Load the policies; when they do not load, the clusters are listed without them
        (the listing is what a person needs to write their first match: clusters)."""
        unmatched = None
        try:
            policies = load_policies(config.policies)
        except PolicyError as exc:
            policies = PolicySet([])
            said = counted(len(exc.problems), "problem") if exc.problems else str(exc)
            unmatched = f"the policies do not load ({said}; retention validate lists them)"
        scope = Scope.of(config, policies)

        def step(run: JobContext) -> Clusters:
            with _read_only("listing the clusters", "the list was whole"):
                return list_clusters(run.client, scope, unmatched=unmatched, listener=run.progress)

        return step

    def code(self, result: Clusters) -> int:
        """See Clusters.code."""
        return result.code


def _write_page(path: Path, forecasted: Forecasted) -> None:
    """The forecast's HTML page at ``path`` (UsageError when it cannot be written)."""
    try:
        write_forecast_html(path, forecasted.forecast, forecasted.base, what_if=forecasted.what_if)
    except OSError as exc:
        raise UsageError(f"--html {path}: cannot write: {exc.strerror or exc}") from None


@contextmanager
def _read_only(doing: str, whole: str) -> Iterator[None]:
    """A stop of a command that writes and sends nothing, said in its words: "stopped by
    SIGTERM while reviewing: nothing was written and nothing was sent"."""
    try:
        yield
    except StopRequestedError as exc:
        raise StopRequestedError(
            exc.signal_name,
            whole,
            message=f"stopped by {exc.signal_name} while {doing}: nothing was written and "
            "nothing was sent",
        ) from None


@dataclass(frozen=True)
class PruneJob(Job[PruneResult]):
    """Remove the run folders reports.keep (or the request's keep) lets go, under the lock
    (a dry run only says which, without it)."""

    request: PruneRequest
    connects = False
    mode = "prune"

    @property
    def locks(self) -> bool:  # type: ignore[override] # a dry run removes nothing
        """Only when it removes."""
        return not self.request.dry_run

    @property
    def ledgers(self) -> bool:  # type: ignore[override] # a dry run removes nothing
        """Recorded in the ledger when it removes."""
        return not self.request.dry_run

    def prepare(self, config: RetentionConfig) -> Callable[[JobContext], PruneResult]:
        """The keep duration: the request's, else reports.keep (UsageError when neither)."""
        keep = self.request.keep or config.reports.keep
        if keep is None:
            raise UsageError(
                "prune needs a keep duration: set reports.keep in retention.yaml "
                "(e.g. keep: 30d) or give --keep 30d"
            )
        reports, dry_run = config.reports.dir, self.request.dry_run

        def step(run: JobContext) -> PruneResult:
            now = run.clock()
            if run.ledger is not None:
                run.ledger.begin(f"prune-{format_timestamp(now)}", now)
            pruned = prune_reports(reports, keep, now=now, dry_run=dry_run, listener=run.progress)
            return PruneResult(pruned, reports, keep, dry_run)

        return step

    def failed(self, result: PruneResult) -> bool:
        """A folder could not be removed."""
        return bool(result.pruned.failed)

    def ledger_end(self, result: PruneResult, code: int, ended: datetime) -> RunEnd:
        """The folders it removed, and those it could not."""
        summary = {
            "keep": str(result.keep),
            "removed": list(result.pruned.removed),
            "failed": [name for name, _ in result.pruned.failed],
        }
        return RunEnd(ended, code, summary=summary)
