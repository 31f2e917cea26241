"""``retention doctor``: the preflight an operator runs before scheduling the job.

One check per line, each passed, warning or failed, with a remedy when it is not passed:
configuration and policies; where the notices go (redacted, nothing sent to them); the API
reachable with TLS verified; the credentials accepted; the service version; the clock skew
from the Date header (expiry decisions depend on the clock); backups that stopped, as the
newest plan in the reports folder found them; the ledger (it opens, its schema, its runs);
and per target project the backup agents'
link, discovery, one snapshot page and the alerts; what the policies warn about (as
``validate`` and a plan say it, with each glob that matches nothing discovery found).
Returns the checks, with their exit code and their words; the CLI prints them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from retention.api.client import OpsManagerClient
from retention.config.connect import open_client
from retention.config.loading import LoadedConfig, load_config
from retention.config.notifyurls import ENV_NOTIFY_URLS
from retention.config.policyfiles import validate_policies
from retention.config.scope import ProjectTargets, project_targets
from retention.config.writable import WRITE_FIX, unwritable
from retention.core.freshness import age_words
from retention.core.horizon import lease, schedule_lease
from retention.core.model import Target
from retention.core.outage import span_words, tolerance_text
from retention.core.planfile import ClusterEntry
from retention.core.policy.globs import glob_warnings
from retention.core.policy.loader import PolicySet
from retention.core.wording import counted, unmanaged_text
from retention.errors import (
    EXIT_FAILURES,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    ApiError,
    AuthenticationError,
    ConfigError,
    LedgerError,
    PermissionDeniedError,
    PlanFileError,
    TLSError,
    TransportError,
)
from retention.ledger.chain import ledger_status
from retention.ledger.database import open_ledger
from retention.ops.clock import Clock
from retention.report.summary import StaleCluster, stale_clusters, stale_text
from retention.runfolder.lineage import newest_plans
from retention.runfolder.planread import PlanFile, open_plan
from retention.walk.inventory import discover

Status = Literal["pass", "warn", "fail"]
SKEW_WARN = timedelta(seconds=60)
SKEW_FAIL = timedelta(minutes=10)


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    remedy: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The check for --format json."""
        return asdict(self)


@dataclass
class Report:
    """All checks, and why they stopped early, if they did: "configuration" (the
    configuration, the policies or the reports folder failed: exit 2) or "unreachable" (the
    API cannot be reached or refuses the keys: exit 5). ``strict`` (--strict): a warning of
    the policies (``policy_warnings``: what validate says, and each glob that matches
    nothing, as a plan counts them) is exit 2."""

    checks: list[Check]
    stopped: Literal["configuration", "unreachable"] | None = None
    strict: bool = False
    policy_warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True when any check failed."""
        return any(c.status == "fail" for c in self.checks)

    @property
    def code(self) -> int:
        """2 or 5 when the checks stopped early (see the class), 2 with ``strict`` and a
        policy warning, 1 when any failed, else 0."""
        stopped = {"configuration": EXIT_USAGE, "unreachable": EXIT_UNREACHABLE}
        if self.stopped is None and self.strict and self.policy_warnings:
            return EXIT_USAGE
        return stopped.get(self.stopped or "", EXIT_FAILURES if self.failed else 0)

    def document(self) -> dict[str, Any]:
        """doctor --format json."""
        checks = [c.as_json() for c in self.checks]
        return {"command": "doctor", "exitCode": self.code, "strict": self.strict, "checks": checks}

    def lines(self) -> list[str]:
        """One line a check (and what to do, when it did not pass), then the totals."""
        marks = {"pass": "ok  ", "warn": "WARN", "fail": "FAIL"}
        lines = []
        for check in self.checks:
            lines.append(f"{marks[check.status]}  {check.name}: {check.detail}")
            if check.remedy and check.status != "pass":
                lines.append(f"      -> {check.remedy}")
        failed = sum(c.status == "fail" for c in self.checks)
        warned = sum(c.status == "warn" for c in self.checks)
        checks, warnings = counted(len(self.checks), "check"), counted(warned, "warning")
        lines.append(f"\n{checks}: {failed} failed, {warnings}.")
        if self.stopped is None and self.strict and self.policy_warnings:
            said = counted(len(self.policy_warnings), "policy warning")
            lines.append(f"--strict: {said} (WARN policies lines above): exit {self.code}.")
        return lines


def run_doctor(
    config_path: str | Path | None, *, clock: Clock, interactive: bool = False, strict: bool = False
) -> Report:
    """Run every check that can run; stop early when a later check could not mean anything.
    The clock check compares the API's Date header with ``clock``; ``interactive`` (a
    person waits at a terminal): a refused connection fails after a short try; ``strict``:
    a warning of the policies is exit 2 (Report.code)."""
    checks: list[Check] = []
    warned: list[str] = []
    report = _checks(
        config_path, clock=clock, interactive=interactive, checks=checks, warned=warned
    )
    report.strict, report.policy_warnings = strict, warned
    return report


def _checks(
    config_path: str | Path | None,
    *,
    clock: Clock,
    interactive: bool,
    checks: list[Check],
    warned: list[str],
) -> Report:
    """The checks of run_doctor, into ``checks``; the policies' warnings (those --strict
    counts) into ``warned`` too. A policy that matches nothing is a warning but not one of
    them: a glob that misses is said by its own warning, and a plan counts the same."""
    try:
        loaded = load_config(config_path, clock=clock)
    except ConfigError as exc:
        detail = "; ".join(exc.problems) or str(exc)
        checks.append(Check("configuration", "fail", detail, "fix the file or environment named"))
        return Report(checks, "configuration")
    checks.append(
        Check(
            "configuration",
            "pass",
            f"{loaded.path} ({counted(len(loaded.config.targets), 'target')})",
        )
    )
    for warning in loaded.warnings:
        checks.append(Check("configuration", "warn", warning))
    checks.append(_notices(loaded))
    checks.append(_outage(loaded, clock))
    try:
        validated = validate_policies(loaded.config.policies, clock())
    except ConfigError as exc:
        checks.append(
            Check("policies", "fail", "; ".join(exc.problems), "retention validate lists them")
        )
        return Report(checks, "configuration")
    policies = validated.policies
    checks.append(
        Check("policies", "pass", f"{len(policies)} valid: {', '.join(p.name for p in policies)}")
    )
    # What validate warns about, which a plan warns about too: doctor is not "ok" over it.
    warned += [warning for warning, _ in validated.warnings]
    checks.extend(Check("policies", "warn", warning) for warning in warned)
    reports = loaded.config.reports.dir
    problem = unwritable(reports)
    if problem is not None:
        checks.append(Check("reports", "fail", problem, WRITE_FIX.format(setting="reports.dir")))
        return Report(checks, "configuration")
    checks.append(Check("reports", "pass", f"{reports} is writable"))
    checks.append(_backups(reports, clock))
    checks.append(_ledger(loaded))
    with open_client(loaded, clock=clock, interactive=interactive) as client:
        if not _connection(client, loaded, checks):
            return Report(checks, "unreachable")
        _tls(loaded, client.base_url_setting, checks)
        _version_and_clock(client, checks)
        targets: list[Target] | None = []
        named: list[Target] = []  # those whose names discovery knows
        wanted_projects = project_targets(loaded.config)
        for wanted in wanted_projects:
            found = _project(client, wanted, checks)
            targets = None if found is None or targets is None else [*targets, *found]
            # A cluster listed by id is named by its snapshots, which doctor does not walk.
            listed = wanted.clusters is not None
            named += [t for t in found or [] if not (listed and t.kind == "cluster")]
        if targets is not None:
            projects = [wanted.project_id for wanted in wanted_projects]
            # Nor can a glob be judged in a project whose clusters are listed by id.
            unnamed = [wanted.project_id for wanted in wanted_projects if wanted.clusters]
            misses = glob_warnings(policies, named, projects, unnamed)
            warned += misses
            checks.extend(Check("policies", "warn", warning) for warning in misses)
            _coverage(policies, targets, checks)
    return Report(checks)


def _backups(reports: Path, clock: Clock) -> Check:
    """Backups that stopped, as the newest plan in ``reports`` found them (not a what-if
    plan): the doctor reads its plan.json and never walks the snapshots, which only a plan
    does in full. A warning, as in the plan: backups are not retention's to fix."""
    for path in newest_plans(reports):
        try:
            plan = open_plan(path)
        except (OSError, PlanFileError):
            continue  # half written, or not a plan: an older one says as much
        head = plan.head
        if head["whatIf"]:
            continue
        seconds = int((clock() - head["evaluatedAt"]).total_seconds())
        ago = f"{age_words(seconds)} ago" if seconds >= 60 else "just now"
        where = f"the newest plan ({path}, evaluated {ago})"
        try:
            checked, stale = _freshness(plan)
        except (OSError, PlanFileError):
            continue
        if not stale:
            detail = f"{where}: {counted(checked, 'cluster')} checked, none stopped"
            return Check("backups", "pass", detail)
        return Check(
            "backups",
            "warn",
            f"{where}: {stale_text(stale)}",
            "check these clusters' backup in the service; a plan or run checks again",
        )
    return Check("backups", "pass", f"not checked: no plan in {reports} yet")


def _freshness(plan: PlanFile) -> tuple[int, tuple[StaleCluster, ...]]:
    """How many of the plan's clusters it checked for backups that stopped, and those whose
    backups had (one pass over the clusters)."""
    checked = 0

    def counting(entries: Iterable[ClusterEntry]) -> Iterator[ClusterEntry]:
        nonlocal checked
        for entry in entries:
            checked += "newestRestorable" in entry
            yield entry

    stale = stale_clusters(plan.head, counting(plan.read_clusters()))
    return checked, stale


def _outage(loaded: LoadedConfig, clock: Clock) -> Check:
    """The outage the fleet survives as configured: the lease a run now would give."""
    config = loaded.config
    now = clock()
    lease_for = lease(config.schedule, now, config.lease_floor)
    own = schedule_lease(config.schedule, now)
    alone = span_words(own.total_seconds())
    if own < config.lease_floor:
        source = f"lease_minimum {config.lease_minimum}; the schedule alone gives {alone}"
    else:
        source = "the schedule's lease" if config.schedule else f"no schedule: a lease of {alone}"
    detail = f"{tolerance_text(lease_for.total_seconds())} ({source})"
    return Check("outage tolerance", "pass", detail)


def _notices(loaded: LoadedConfig) -> Check:
    """Where the notices go: each URL redacted, with its place, and where they came from.
    Nothing is sent: a test notice would reach a channel people read."""
    notify = loaded.config.notify
    if notify is None:
        return Check(
            "notices", "pass", f"off (no notify: in {loaded.path.name}, {ENV_NOTIFY_URLS} not set)"
        )
    shown = "; ".join(f"{url} ({place})" for place, url in notify.destinations())
    source = loaded.sources.get("notify.urls", "file")
    source = loaded.path.name if source == "file" else source
    detail = f"on {', '.join(notify.on)}, from {source}: {shown}"
    return Check("notices", "pass", detail)


def _connection(client: OpsManagerClient, loaded: LoadedConfig, checks: list[Check]) -> bool:
    base = client.base_url
    try:
        client.get_agent_links(loaded.config.targets[0].project)
    except TLSError as exc:
        # The error's own remedy, the one for what failed: a plain-HTTP port behind https://
        # needs http://, not a CA bundle.
        checks.append(Check("reachable", "fail", f"{exc.endpoint}: {exc.diagnosis}", exc.remedy))
        return False
    except TransportError as exc:
        remedy = f"check {client.base_url_setting} (and DNS, proxies and firewalls)"
        checks.append(Check("reachable", "fail", f"{exc.endpoint}: {exc.diagnosis}", remedy))
        return False
    except (AuthenticationError, PermissionDeniedError) as exc:
        remedy = (
            "check RETENTION_PUBLIC_KEY and the private key, and that this host's address "
            "is on the API key's access list"
            if isinstance(exc, AuthenticationError)
            else "give the API key the project's backup roles"
        )
        checks.append(Check("reachable", "pass", base))
        checks.append(Check("credentials", "fail", str(exc), remedy))
        return False
    except ApiError:
        pass  # reached and authenticated; the project's own checks say what is wrong
    checks.append(Check("reachable", "pass", base))
    accepted = f"digest accepted for public key {_public_key(loaded)}"
    checks.append(Check("credentials", "pass", accepted))
    return True


def _public_key(loaded: LoadedConfig) -> str:
    return loaded.credentials.public_key if loaded.credentials else "?"


def _tls(loaded: LoadedConfig, setting: str, checks: list[Check]) -> None:
    api = loaded.config.api
    if not api.base_url.startswith("https://"):
        plain = "plain HTTP: answers are neither encrypted nor verified"
        remedy = f"use the https:// address of the API in {setting}"
        checks.append(Check("tls", "warn", plain, remedy))
    elif not api.verify_tls:
        off = "verification is off (verify_tls: false)"
        checks.append(Check("tls", "warn", off, "set verify_tls: true and api.ca_bundle"))
    else:
        verified = f"certificate verified ({api.ca_bundle or 'system CAs'})"
        checks.append(Check("tls", "pass", verified))


def _version_and_clock(client: OpsManagerClient, checks: list[Check]) -> None:
    if client.service_version:
        checks.append(Check("service version", "pass", client.service_version))
    else:
        missing = "no X-MongoDB-Service-Version (or X-Server-Service-Version) header"
        remedy = "is a proxy answering instead of the API?"
        checks.append(Check("service version", "warn", missing, remedy))
    if client.server_date is None:
        checks.append(Check("clock", "warn", "no Date header to compare clocks with"))
        return
    server, local = client.server_date
    skew = local - server
    seconds = abs(skew.total_seconds())
    ahead = "ahead of" if skew.total_seconds() > 0 else "behind"
    detail = f"this host is {seconds:.0f}s {ahead} the API's clock"
    remedy = "run NTP (chrony, systemd-timesyncd) here: expiries are computed from this clock"
    if abs(skew) > SKEW_FAIL:
        checks.append(Check("clock", "fail", detail, remedy))
    elif abs(skew) > SKEW_WARN:
        checks.append(Check("clock", "warn", detail, remedy))
    else:
        checks.append(Check("clock", "pass", detail))


def _project(
    client: OpsManagerClient, wanted: ProjectTargets, checks: list[Check]
) -> list[Target] | None:
    """The project's checks; its targets, or None when it could not be read in full."""
    name = f"project {wanted.project_id}"
    try:
        links = client.get_agent_links(wanted.project_id)
        if links.relation("backupAgents") is None:
            remedy = "is backup enabled for this project?"
            checks.append(Check(f"{name}: agents", "fail", "no backupAgents link", remedy))
        else:
            checks.append(Check(f"{name}: agents", "pass", "backup agents link present"))
        found = discover(client, wanted)
        clusters = [t for t in found.targets if t.kind == "cluster"]
        servers = [t for t in found.targets if t.kind == "config-server"]
        members = sum(len(t.members) for t in clusters)
        sharded = sum(1 for t in clusters if t.members)
        detail = (
            f"{counted(len(clusters), 'cluster')}, {counted(len(servers), 'legacy config server')}"
        )
        if sharded:
            detail += (
                f"; {sharded} sharded, with {counted(members, 'shard and config row')} as members"
            )
        checks.append(Check(f"{name}: discovery", "pass", detail))
        for warning in found.warnings:
            checks.append(Check(f"{name}: discovery", "warn", warning, "check the clusters list"))
        walkable = [t for t in clusters if t.id_problem() is None]  # the others are warned of
        if walkable:
            first = walkable[0]
            listing = client.list_snapshots(first.project_id, first.cluster_id, "all")
            list(islice(iter(listing), 1))  # reads one page, no more
            checks.append(Check(f"{name}: snapshots", "pass", f"one page of {first.name} read"))
        alerts = client.list_alerts(wanted.project_id, status="OPEN")
        list(islice(iter(alerts), 1))
        checks.append(Check(f"{name}: alerts", "pass", "open alerts readable"))
    except ApiError as exc:
        checks.append(
            Check(f"{name}", "fail", str(exc), "check the project id and the key's roles in it")
        )
        return None
    return found.targets


def _coverage(policies: PolicySet, targets: list[Target], checks: list[Check]) -> None:
    """What no policy manages, and policies that match nothing: the plan would warn about
    both, and a glob that misses takes clusters out of management without an error."""
    used: set[str] = set()
    unmanaged = []
    for target in targets:
        names = [p.name for p in policies.matching(target.project_id, target.name, target.kind)]
        used.update(names)
        if not names:
            unmanaged.append(target.name)
    for loaded in policies:
        if loaded.name not in used:
            unused = f"policy {loaded.name!r} ({loaded.path}) matches no cluster or config server"
            remedy = (
                "check its match: projects, cluster globs, kinds (retention clusters lists them)"
            )
            checks.append(Check("policies", "warn", unused, remedy))
    if unmanaged:
        remedy = "add a policy that matches them, or leave them out of management on purpose"
        checks.append(Check("coverage", "warn", unmanaged_text(unmanaged), remedy))
    else:
        checks.append(
            Check("coverage", "pass", f"a policy matches each of {counted(len(targets), 'target')}")
        )


def _ledger(loaded: LoadedConfig) -> Check:
    """The ledger opens (its schema brought up to date), and how many runs it holds; it is
    not verified here (`retention ledger verify` reads every record)."""
    settings = loaded.config.ledger
    if not settings.enabled:
        return Check(
            "ledger",
            "warn",
            "ledger.enabled is false: runs are not recorded and changes made outside "
            "retention are not looked for",
            "set ledger.enabled: true (the default) for the scheduled job",
        )
    try:
        place = loaded.config.ledger_place(os.environ)
        with open_ledger(place) as ledger, ledger.reading("reading its status") as conn:
            found = ledger_status(conn)
    except (LedgerError, ConfigError) as exc:
        return Check(
            "ledger",
            "fail",
            str(exc),
            "check ledger.url (or RETENTION_LEDGER_URL), the server and the password "
            "(RETENTION_LEDGER_PASSWORD or its file)",
        )
    head = f", head {found.head[:16]}..." if found.head else ""
    return Check(
        "ledger",
        "pass",
        f"{place.shown}: schema {found.revision}, {counted(found.runs, 'run')}"
        f"{f', {found.unfinished} never finished' if found.unfinished else ''}{head}",
    )
