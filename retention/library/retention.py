"""The library's one entry: ``Retention``, a configuration file and a clock, with a method
per job of the command line. Each method takes one request (retention.library.requests)
and returns one result; the command line is a thin layer over it.

    from retention import ApplyRequest, PlanRequest, Retention

    retention = Retention.from_config("retention.yaml")
    planned = retention.plan(PlanRequest())
    applied = retention.apply(ApplyRequest(planned.result.plan.path, approve=("prod-orders",)))
    applied.code, applied.reports  # the exit code the command would give, its reports

A job goes through the one lifecycle (retention.library.lifecycle): the configuration
loaded, the client opened, the lock, the stop of SIGINT and SIGTERM, the reports, the
notice and the metrics, as its kind needs. Two are not jobs: ``explain`` reads a plan
(and the configuration only when it has to), ``doctor`` checks each of those steps in turn
and reports each failure as a check rather than stopping at the first.
"""

from __future__ import annotations

import logging
from pathlib import Path

from retention.apply.applying import RunResult
from retention.clusters.listing import Clusters
from retention.config.loading import LoadedConfig
from retention.config.policyfiles import Validated, load_policies, validate_policies
from retention.doctor.preflight import Report, run_doctor
from retention.errors import ConfigError, UsageError
from retention.explain.explanation import Explained, Policies, explain_snapshot
from retention.library.changing import ApplyJob, RunJob, UndoJob
from retention.library.ending import MetricsTarget
from retention.library.evidence import Evidence, EvidenceJob, EvidenceRequest
from retention.library.ledgers import (
    LedgerAcked,
    LedgerAckJob,
    LedgerAckRequest,
    LedgerVerified,
    LedgerVerifyJob,
    LedgerVerifyRequest,
)
from retention.library.lifecycle import Ended, Job, R, Setup, load, run_lifecycle
from retention.library.reading import (
    ClustersJob,
    DiffJob,
    Forecasted,
    ForecastJob,
    PlanJob,
    PruneJob,
    Reviewed,
)
from retention.library.requests import (
    ApplyRequest,
    ClustersRequest,
    DiffRequest,
    DoctorRequest,
    ExplainRequest,
    ForecastRequest,
    PlanRequest,
    PruneRequest,
    RunRequest,
    UndoRequest,
    ValidateRequest,
)
from retention.library.stages import Progress, Quiet
from retention.ops.clock import Clock, system_clock
from retention.plan.planner import PlanResult
from retention.prune.pruning import PruneResult
from retention.runfolder.lineage import newest_plans, plan_file
from retention.undo.restoring import UndoResult


class Retention:
    """retention as a library: the configuration at ``config`` (None: $RETENTION_CONFIG,
    then ./retention.yaml), read afresh by each job; the time of every job from ``clock``;
    ``progress`` hears how a job goes; ``interactive``: a person waits at a terminal (a
    refused first contact with the API fails after a short try, not the full retries);
    ``actor``: who runs the jobs, for the ledger (None: ops.actor's default)."""

    def __init__(
        self,
        config: str | Path | None = None,
        *,
        clock: Clock = system_clock,
        progress: Progress | None = None,
        interactive: bool = False,
        actor: str | None = None,
    ) -> None:
        self.config, self.clock = config, clock
        self.progress = progress or Quiet()
        self.interactive = interactive
        self.actor = actor

    @classmethod
    def from_config(
        cls, path: str | Path | None = None, *, clock: Clock = system_clock
    ) -> Retention:
        """retention over the configuration at ``path``, telling the time by ``clock``."""
        return cls(path, clock=clock)

    def _run(self, job: Job[R], metrics: MetricsTarget | None = None) -> Ended[R]:
        target = metrics or MetricsTarget()
        setup = Setup(self.config, self.clock, target, self.progress, self.interactive, self.actor)
        return run_lifecycle(job, setup)

    def plan(self, request: PlanRequest | None = None) -> Ended[PlanResult]:
        """Walk every snapshot, decide, and write a plan; nothing is sent."""
        return self._run(PlanJob(request or PlanRequest()))

    def run(self, request: RunRequest | None = None) -> Ended[RunResult]:
        """Plan, check the gates, apply (unless a dry run) and report: what cron runs."""
        request = request or RunRequest()
        return self._run(RunJob(request), request.metrics)

    def apply(self, request: ApplyRequest) -> Ended[RunResult]:
        """Apply exactly a saved plan, with the approvals asked for."""
        return self._run(ApplyJob(request), request.metrics)

    def undo(self, request: UndoRequest) -> Ended[UndoResult]:
        """Put back what a run shortened."""
        return self._run(UndoJob(request), request.metrics)

    def diff(self, request: DiffRequest) -> Ended[Reviewed]:
        """What the configuration's policies change against a base's, read-only."""
        return self._run(DiffJob(request))

    def forecast(self, request: ForecastRequest | None = None) -> Ended[Forecasted]:
        """What the policies keep in the months ahead, read-only."""
        return self._run(ForecastJob(request or ForecastRequest()))

    def clusters(self, request: ClustersRequest | None = None) -> Ended[Clusters]:
        """What discovery finds: every cluster and config server, its kind, typeName,
        snapshots and newest snapshot, and the policies that match it; read-only."""
        return self._run(ClustersJob(request or ClustersRequest()))

    def prune(self, request: PruneRequest | None = None) -> Ended[PruneResult]:
        """Remove old run folders that nothing can still undo."""
        return self._run(PruneJob(request or PruneRequest()))

    def evidence(self, request: EvidenceRequest) -> Ended[Evidence]:
        """The evidence of a period for auditors, from the ledger alone."""
        return self._run(EvidenceJob(request))

    def verify_ledger(self, request: LedgerVerifyRequest | None = None) -> Ended[LedgerVerified]:
        """Recompute the ledger's chains and name the first record that does not match."""
        return self._run(LedgerVerifyJob(request or LedgerVerifyRequest()))

    def ack_ledger(self, request: LedgerAckRequest) -> Ended[LedgerAcked]:
        """Acknowledge the changes made outside retention of the clusters asked: they no
        longer hold them (safety.hold_on_outside_change)."""
        return self._run(LedgerAckJob(request))

    def loaded(self, *, require_credentials: bool = False) -> LoadedConfig:
        """The configuration as loaded now (its warnings logged)."""
        return load(self.config, clock=self.clock, require_credentials=require_credentials)

    def validate(self, request: ValidateRequest | None = None) -> Validated:
        """Check the policies without the API; their warnings are logged."""
        request = request or ValidateRequest()
        source = request.policies or self.loaded().config.policies
        validated = validate_policies(source, self.clock())
        log = logging.getLogger("retention.policy")
        for warning, event in validated.warnings:
            # "warning: ..." on stderr, as the configuration's; a JSON object in json mode.
            text, fields = f"warning: {warning}", {"event": event}
            log.warning("%s", warning, extra={"text": text, "fields": fields})
        return validated

    def explain(self, request: ExplainRequest) -> Explained:
        """What a plan decided for one snapshot, and what each rule did with it."""
        loaded: list[LoadedConfig] = []
        path = None if request.plan is None else plan_file(request.plan, "--plan")
        if path is None:
            loaded.append(self.loaded())
            reports = Path(loaded[0].config.reports.dir)
            plans = newest_plans(reports)  # as doctor finds it
            if not plans:
                raise UsageError(f"no plan in {reports}; run 'retention plan' or give --plan")
            path = plans[0]
        return explain_snapshot(path, request.snapshot_id, lambda: self._policies(request, loaded))

    def _policies(self, request: ExplainRequest, loaded: list[LoadedConfig]) -> Policies:
        """The policies explain traces with: the request's, else the configuration's.
        Without either, explain still says what the plan recorded (a plan is often read
        elsewhere)."""
        if request.policies is not None:
            return Policies(load_policies(request.policies), str(request.policies))
        if not loaded:
            try:
                loaded.append(self.loaded())
            except ConfigError as exc:
                first = exc.problems[0] if exc.problems else str(exc)
                return Policies(None, "", f"no policies ({first}); give --policies PATH")
        source = loaded[0].config.policies
        shown = ", ".join(map(str, source)) if isinstance(source, list) else str(source)
        return Policies(load_policies(source), shown)

    def doctor(self, request: DoctorRequest | None = None) -> Report:
        """Check everything the job needs before it is scheduled, one check a line."""
        strict = (request or DoctorRequest()).strict
        return run_doctor(
            self.config, clock=self.clock, interactive=self.interactive, strict=strict
        )
