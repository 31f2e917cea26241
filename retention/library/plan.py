"""A plan on its own (`retention plan`): the lifecycle's first steps, without a lock, a
journal or reports, since nothing is sent.

load the configuration and the policies → choose where the plan goes (a file, or a new
run folder under reports.dir) and check it can be written → open the client → walk,
decide and write plan.json with decisions.jsonl beside it, SIGINT and SIGTERM stopping it
(a run folder then says so in interrupted.json; a file given is left as it was).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from retention.config.connect import open_client
from retention.config.policyfiles import load_policies
from retention.config.settings import RetentionConfig
from retention.config.writable import require_writable
from retention.errors import StopRequestedError
from retention.library.job import Setup
from retention.library.jobs import mark_interrupted, planning_stopped
from retention.library.lifecycle import load
from retention.ops.stopping import Stop, on_signals
from retention.plan.planner import PlanResult, make_plan
from retention.plan.workers import planning_workers
from retention.runfolder.folder import RunFolder
from retention.walk.inventory import project_targets

if TYPE_CHECKING:
    from retention.ops.sharding import Shard


def plan_fleet(
    setup: Setup,
    *,
    out: Path | None = None,
    report_dir: Path | None = None,
    at: datetime | None = None,
    shard: Shard | None = None,
) -> PlanResult:
    """Write a plan to ``out``, or (None) into a new run folder under ``report_dir`` (None:
    reports.dir), as of ``at`` (a what-if plan) or the clock's now, for ``shard`` (None:
    the whole fleet). StopRequestedError when a signal stops it before the plan is whole."""
    loaded = load(setup.config_path, clock=setup.clock)
    config = loaded.config
    policies = load_policies(config.policies)
    created = setup.clock()
    plan_path = _plan_path(config, out, report_dir, created)
    projects = project_targets(config)
    with (
        on_signals(Stop()) as stop,
        open_client(loaded, stop=stop, clock=setup.clock, interactive=setup.interactive) as client,
    ):
        try:
            return make_plan(
                client,
                policies,
                projects,
                now=at or created,
                created_at=created,
                schedule=config.schedule,
                lease_minimum=config.lease_floor,
                concurrency=config.api.concurrency,
                plan_path=plan_path,
                shard=shard,
                what_if=at is not None,
                workers=planning_workers(config.api),
            )
        except StopRequestedError as exc:
            # A plan's own folder says it was stopped; a file named by --out is left as
            # it was (make_plan writes nothing in its place).
            if out is not None:
                raise planning_stopped(exc, f"{plan_path} is as it was") from None
            stopped = setup.clock()
            where = mark_interrupted(plan_path.parent, "plan", exc.signal_name, created, stopped)
            raise planning_stopped(exc, f"the run folder says so ({where})") from None


def _plan_path(
    config: RetentionConfig, out: Path | None, report_dir: Path | None, created: datetime
) -> Path:
    """``out``, or plan.json in a new run folder; ConfigError when it cannot be written."""
    if out is not None:
        require_writable(out.parent, "--out")
        return out
    base = report_dir or config.reports.dir
    require_writable(base, "--report-dir" if report_dir else "reports.dir")
    return RunFolder.new(base, created).plan
