"""The job configuration: ``retention.yaml`` as pydantic models, plus environment and secrets.

The file comes from ``--config``, else ``RETENTION_CONFIG``, else ``./retention.yaml``. Relative
paths in it resolve against the file's folder, because cron and Kubernetes start the job
elsewhere. ``RETENTION_BASE_URL`` overrides ``api.base_url``. The API key pair comes only from
the environment (``RETENTION_PUBLIC_KEY``, ``RETENTION_PRIVATE_KEY`` or
``RETENTION_PRIVATE_KEY_FILE``) and the private key lives in a ``SecretStr``; a secret found in
the file is refused without echoing it. Notification URLs may come from
``RETENTION_NOTIFY_URLS`` or ``notify.urls_file`` instead of ``notify.urls``
(retention.notices.urls). Every problem is collected and raised at once as one
``ConfigError`` (exit 2, nothing sent), each naming the file (or the environment), the line
when known, and the dotted field.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from croniter import croniter
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from retention.api.client import OpsManagerClient
from retention.api.transport import Credentials, Timeouts, TLSConfig
from retention.config import yamldoc
from retention.config.credentials import (
    ENV_PRIVATE_KEY,
    ENV_PRIVATE_KEY_FILE,
    ENV_PUBLIC_KEY,
    MISSING_KEYS,
    read_credentials,
)
from retention.core import validation
from retention.core.horizon import lease
from retention.core.ids import id_problem
from retention.errors import ConfigError
from retention.notices.settings import NotifySettings
from retention.notices.urls import ENV_NOTIFY_URLS, GivenUrls, env_urls, resolve_notify
from retention.ops.clock import Clock, system_clock
from retention.planning.workers import available_cpus
from retention.walk.inventory import ProjectTargets

log = logging.getLogger("retention.config")

API_ROOT = "/api/public/v1.0"
DEFAULT_CONFIG = "retention.yaml"
ENV_CONFIG = "RETENTION_CONFIG"
ENV_BASE_URL = "RETENTION_BASE_URL"
SECRET_HINT = (
    f"secrets are not read from the config file; use the environment variables {ENV_PUBLIC_KEY}"
    f" and {ENV_PRIVATE_KEY} or {ENV_PRIVATE_KEY_FILE} (for Kubernetes: a Secret mounted as a file)"
)
# No real setting contains these words, so a key that does is a secret in the wrong place.
_SECRET_WORDS = ("key", "password", "passwd", "secret", "token", "credential")

Loc = tuple[str | int, ...]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def _usable_id(value: str) -> str:
    # The plan's rule (retention.core.ids), checked where the id is written: a project id
    # a plan cannot carry would make every plan of this file one apply refuses.
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(f"cannot be used as an id: {problem}")
    return value


TargetId = Annotated[NonEmpty, AfterValidator(_usable_id)]


def _resolve(value: Path, info: ValidationInfo) -> Path:
    """An absolute path against the config file's folder (the working directory without one)."""
    base = Path((info.context or {}).get("base_dir") or Path.cwd())
    # normpath, not resolve(): Kubernetes mounts ConfigMaps through symlinks into timestamped
    # folders, and the folder the operator named is the one that stays valid.
    return Path(os.path.normpath(base / value.expanduser()))


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# The most planning workers a plan starts unless api.workers says more: eight keep up with
# the walk's default eight connections, at about 40 MiB each.
DEFAULT_WORKERS_MAX = 8


class ApiSettings(_Settings):
    """How to reach the API: its root URL, timeouts, concurrency and TLS."""

    base_url: str = Field(description=f"API root, e.g. https://om.example.com:8443{API_ROOT}")
    timeout_seconds: float = Field(30.0, gt=0, allow_inf_nan=False, strict=True)
    concurrency: int = Field(8, ge=1, le=64, strict=True, description="Requests in flight")
    max_requests_per_second: float = Field(0.0, ge=0, allow_inf_nan=False, strict=True)
    verify_tls: bool = True
    ca_bundle: Path | None = Field(None, description="PEM file of trusted CAs")
    envelope: bool = Field(False, description="Ask for envelope=true (proxies hiding statuses)")
    workers: int | None = Field(
        None,
        ge=1,
        le=64,
        strict=True,
        description="Processes deciding clusters while the walk goes on (null: the CPUs available)",
    )

    def planning_workers(self) -> int:
        """The processes a plan decides on: ``workers``, else the CPUs this process may use
        (its affinity and the container's CPU limit), at most DEFAULT_WORKERS_MAX: 1 on a
        one-CPU pod, and not a hundred interpreters on an unlimited big host."""
        if self.workers is not None:
            return self.workers
        return min(available_cpus(), DEFAULT_WORKERS_MAX)

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        url = value.strip().rstrip("/")
        parts = urlsplit(url)
        # Reading .port raises ValueError (a clear message) for a port out of range.
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.port == 0:
            raise ValueError(f"must be an http(s) URL like https://om.example.com:8443{API_ROOT}")
        if parts.username or parts.password:
            raise ValueError(f"must not carry a user or password: {SECRET_HINT}")
        if parts.query or parts.fragment or not parts.path.endswith(API_ROOT):
            raise ValueError(f"must end in the API root {API_ROOT}")
        return url

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle_exists(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None:
            return None
        path = _resolve(value, info)
        if not path.is_file():
            raise ValueError(f"file not found: {path}")
        return path


class TargetSettings(_Settings):
    """One project; clusters and config servers are discovered when not listed (None)."""

    project: TargetId
    clusters: list[TargetId] | None = Field(None, description="null: discover every cluster")
    config_servers: list[TargetId] | None = Field(None, description="null: discover them")


class ReportsSettings(_Settings):
    """Where run reports go and in which formats."""

    dir: Path = Field(Path("reports"), validate_default=True)
    formats: list[Literal["html", "markdown"]] = ["html", "markdown"]

    @field_validator("dir")
    @classmethod
    def _resolve_dir(cls, value: Path, info: ValidationInfo) -> Path:
        return _resolve(value, info)


class AlertsSettings(_Settings):
    """What the job may do with alerts."""

    acknowledge_own_audit_alerts: bool = False


class RetentionConfig(_Settings):
    """The retention.yaml file (docs/configuration.md in the retention repository)."""

    api: ApiSettings
    targets: list[TargetSettings] = Field(min_length=1)
    policies: Path | list[Path] = Field(
        Path("policies"), validate_default=True, description="A directory or a list of files"
    )
    schedule: str | None = Field(None, description="Cron expression of the job's runs")
    reports: ReportsSettings = Field(default_factory=ReportsSettings)
    alerts: AlertsSettings = Field(default_factory=AlertsSettings)
    notify: NotifySettings | None = Field(
        None, description=f"null: no notices, unless {ENV_NOTIFY_URLS} is set"
    )

    @model_validator(mode="before")
    @classmethod
    def _nested_defaults(cls, data: Any) -> Any:
        # Built from {} rather than default_factory so that their paths resolve with the context.
        if isinstance(data, dict):
            return {"reports": {}, "alerts": {}, **data}
        return data

    @field_validator("notify")
    @classmethod
    def _resolve_urls_file(
        cls, value: NotifySettings | None, info: ValidationInfo
    ) -> NotifySettings | None:
        if value is None or value.urls_file is None:
            return value
        return value.model_copy(update={"urls_file": _resolve(value.urls_file, info)})

    @field_validator("targets")
    @classmethod
    def _unique_projects(cls, targets: list[TargetSettings]) -> list[TargetSettings]:
        first: dict[str, int] = {}
        for index, target in enumerate(targets):
            if target.project in first:
                raise ValueError(
                    f"project {target.project} is listed twice (targets[{first[target.project]}]"
                    f" and targets[{index}]): give it one entry"
                )
            first[target.project] = index
        return targets

    @field_validator("policies", mode="before")
    @classmethod
    def _resolve_policies(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
            return _resolve(Path(value), info)
        if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
            return [_resolve(Path(v), info) for v in value]
        raise ValueError("must be a directory or a non-empty list of files")

    @field_validator("schedule")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        if value is not None and not croniter.is_valid(value.strip()):
            raise ValueError(f'not a valid cron expression: {value!r} (e.g. "0 3 * * *")')
        return None if value is None else value.strip()

    def project_targets(self) -> list[ProjectTargets]:
        """What the walk covers in each target project (listed ids, or None to discover)."""
        return [ProjectTargets(t.project, t.clusters, t.config_servers) for t in self.targets]


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration, where it came from, the credentials and any warnings."""

    config: RetentionConfig
    path: Path
    credentials: Credentials | None = None
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def build_client(self, **overrides: Any) -> OpsManagerClient:
        """An OpsManagerClient for this configuration; keyword overrides win."""
        api = self.config.api
        options: dict[str, Any] = {
            "base_url": api.base_url,
            "credentials": self.credentials,
            "timeouts": Timeouts(read=api.timeout_seconds),
            "tls": TLSConfig(api.verify_tls, str(api.ca_bundle) if api.ca_bundle else None),
            "envelope": api.envelope,
            "pool_size": api.concurrency,
            "max_requests_per_second": api.max_requests_per_second,
        }
        options.update(overrides)
        if options["credentials"] is None:
            raise ConfigError(f"no API credentials for {self.path}", problems=MISSING_KEYS)
        return OpsManagerClient(**options)


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    require_credentials: bool = True,
    clock: Clock = system_clock,
) -> LoadedConfig:
    """Load, validate and resolve the configuration; raise ConfigError listing every problem.
    The schedule's warnings are as of ``clock``'s now."""
    env = os.environ if env is None else env
    config_path, how = _choose_path(path, env)
    problems: list[str] = []
    warnings: list[str] = []
    sources = {"config": how}
    log.debug("reading configuration %s (%s)", config_path, how)
    # Checked whatever the file holds, so that every problem is told at once.
    env_problems: list[str] = []
    from_env = env_urls(env, env_problems)
    config = _read_config(
        config_path, how, env, problems, sources, warnings=warnings, from_env=from_env
    )
    problems += env_problems
    credentials = read_credentials(env, require_credentials, problems, warnings, sources)
    if problems or config is None:
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        raise ConfigError(f"{count} in {config_path}", problems=problems)
    if not config.api.verify_tls:
        warnings.append("api.verify_tls is false: TLS is not verified, answers can be forged")
    warnings.extend(schedule_warnings(config.schedule, clock()))
    return LoadedConfig(config, config_path, credentials, sources, warnings)


WRITE_FIX = (
    "let the user that runs retention write there, or point {setting} at a folder it "
    "can write; on Kubernetes with a read-only root file system, mount a volume there (an "
    "emptyDir or a PersistentVolumeClaim)"
)


def unwritable(folder: Path) -> str | None:
    """Why retention could not write its files into ``folder``, or None when it can. An
    existing folder is tried with a temporary file (permissions, read-only mounts and
    full disks all show); a missing one needs its nearest existing parent to be a
    writable folder, since the run creates it. Nothing else is created."""
    if folder.exists():
        if not folder.is_dir():
            return f"{folder} is not a folder"
        try:
            with tempfile.TemporaryFile(dir=folder, prefix=".retention-write-check-"):
                return None
        except OSError as exc:
            return f"cannot write to {folder}: {exc.strerror or exc}"
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {folder}: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {folder}: {parent} is not writable"
    return None


def require_writable(folder: Path, setting: str) -> None:
    """ConfigError (exit 2, before any request) when ``folder`` cannot be written."""
    problem = unwritable(folder)
    if problem is not None:
        raise ConfigError(f"{setting}: {problem}", problems=[WRITE_FIX.format(setting=setting)])


SHORT_LEASE = timedelta(hours=1)


def schedule_warnings(schedule: str | None, now: datetime) -> list[str]:
    """A schedule so frequent that the lease of kept snapshots (the time to the job's
    second-next run) is under an hour: one missed run or a slow one and the service may
    delete a snapshot a rule keeps, because its expiry was only that far ahead."""
    if schedule is None:
        return []
    lease_for = lease(schedule, now)
    if lease_for >= SHORT_LEASE:
        return []
    return [
        f"schedule {schedule!r} gives kept snapshots a lease of only "
        f"{int(lease_for.total_seconds())} s (the time to the second-next run): a run that "
        "is missed or late lets the service delete what a rule keeps. Run the job at most "
        'hourly, e.g. "0 3 * * *" (daily) or "0 * * * *" (hourly)'
    ]


def _choose_path(path: str | Path | None, env: Mapping[str, str]) -> tuple[Path, str]:
    if path is not None and str(path):
        return Path(os.path.abspath(Path(path).expanduser())), "--config"
    named = env.get(ENV_CONFIG, "").strip()
    if named:
        return Path(os.path.abspath(Path(named).expanduser())), f"env {ENV_CONFIG}"
    return Path.cwd() / DEFAULT_CONFIG, f"default ./{DEFAULT_CONFIG}"


def _read_config(
    path: Path,
    how: str,
    env: Mapping[str, str],
    problems: list[str],
    sources: dict[str, str],
    *,
    warnings: list[str],
    from_env: GivenUrls | None,
) -> RetentionConfig | None:
    name = path.name
    if not path.exists():
        problems.append(
            f"{name}: {path} does not exist (from {how}); `retention init "
            f"{shlex.quote(str(path.parent))}` writes a commented one to start from, or give "
            "--config FILE"
        )
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"{name}: cannot read {path}: {exc.strerror or exc} (from {how})")
        return None
    document, found = yamldoc.parse(data, _EXPECTED)
    if document is None:
        problems += [problem.at(name) for problem in found]
        return None
    secrets: list[Loc] = []
    settings = _take_secrets(document.value, (), secrets)
    found += [document.lines.problem(loc, SECRET_HINT) for loc in secrets]
    env_url = env.get(ENV_BASE_URL, "").strip()
    if env_url and isinstance(settings.get("api", {}), dict):
        settings["api"] = {**settings.get("api", {}), "base_url": env_url}
    # Secret-looking keys are taken out above; echo=False keeps any other value out as well.
    config, invalid = validation.validate(
        RetentionConfig,
        settings,
        document.lines,
        context={"base_dir": path.parent},
        echo=False,
        hints=_HINTS,
    )
    for problem in invalid:
        if env_url and problem.field == "api.base_url":
            problems.append(f"environment: {ENV_BASE_URL}: {problem.message}")
        else:
            found.append(problem)
    problems += [problem.at(name) for problem in validation.in_file_order(found)]
    if config is None or secrets or found:
        return None
    notify_sources: dict[str, str] = {}
    notify = resolve_notify(
        config.notify,
        from_env=from_env,
        env_set=bool(env.get(ENV_NOTIFY_URLS, "").strip()),
        at=lambda loc, message: document.lines.problem(loc, message).at(name),
        problems=problems,
        warnings=warnings,
        sources=notify_sources,
    )
    if notify is None and (config.notify is not None or from_env is not None):
        return None  # a problem was found
    if notify is not config.notify:
        config = config.model_copy(update={"notify": notify})
    sources.update(
        (key, "file" if given else "default") for _, key, given in yaml_lines(config) if key
    )
    sources.update(notify_sources)
    if env_url:
        sources["api.base_url"] = f"env {ENV_BASE_URL}"
    return config


_EXPECTED = "a mapping of settings"
_HINTS: dict[Loc, str] = {
    ("api",): f"(or set {ENV_BASE_URL})",
    ("api", "base_url"): f"(or set {ENV_BASE_URL})",
}


def _take_secrets(data: Any, loc: Loc, found: list[Loc]) -> Any:
    """A copy of data without secret-looking keys, whose locations go to ``found``."""
    if isinstance(data, dict):
        kept: dict[Any, Any] = {}
        for key, value in data.items():
            normal = str(key).lower().replace("_", "").replace("-", "")
            if any(word in normal for word in _SECRET_WORDS):
                found.append((*loc, str(key)))
            else:
                kept[key] = _take_secrets(value, (*loc, key), found)
        return kept
    if isinstance(data, list):
        return [_take_secrets(item, (*loc, i), found) for i, item in enumerate(data)]
    return data


def yaml_lines(
    model: BaseModel, prefix: str = "", indent: str = "", first: str | None = None
) -> Iterator[tuple[str, str, bool]]:
    """(YAML line, dotted key, given in the file) for every setting of model, in order."""
    for position, name in enumerate(type(model).model_fields):
        value, key = getattr(model, name), f"{prefix}{name}"
        lead = first if first is not None and position == 0 else indent
        given = name in model.model_fields_set
        if isinstance(value, BaseModel):
            yield f"{lead}{name}:", "", False
            yield from yaml_lines(value, f"{key}.", f"{indent}  ")
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            yield f"{lead}{name}:", key, given
            for index, item in enumerate(value):
                yield from yaml_lines(item, f"{key}.{index}.", f"{indent}    ", f"{indent}  - ")
        else:
            # JSON is YAML: quoting and escaping come out right for any string or path.
            yield f"{lead}{name}: {json.dumps(value, default=str, ensure_ascii=False)}", key, given


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of retention.yaml (for editors and `retention schema config`)."""
    schema = RetentionConfig.model_json_schema()
    schema.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "retention.yaml",
        **schema,
    }
