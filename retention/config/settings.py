"""The job configuration: ``retention.yaml`` as pydantic models, its JSON Schema, and the
settings as YAML lines (``config show``). retention.config.loading reads the file into them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import timedelta
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

from retention.config.credentials import ENV_PRIVATE_KEY, ENV_PRIVATE_KEY_FILE, ENV_PUBLIC_KEY
from retention.config.ledgerplace import LedgerPlace, checked_ledger_url, ledger_place
from retention.config.notify import NotifySettings
from retention.config.notifyurls import ENV_NOTIFY_URLS
from retention.core.horizon import LEASE_MINIMUM
from retention.core.ids import id_problem
from retention.core.policy.duration import RetentionDuration
from retention.core.policy.model import Duration, OptionalDuration

API_ROOT = "/api/public/v1.0"
DEFAULT_CONFIG = "retention.yaml"
ENV_CONFIG = "RETENTION_CONFIG"
ENV_BASE_URL = "RETENTION_BASE_URL"
SECRET_HINT = (
    f"secrets are not read from the config file; use the environment variables {ENV_PUBLIC_KEY}"
    f" and {ENV_PRIVATE_KEY} or {ENV_PRIVATE_KEY_FILE} (for Kubernetes: a Secret mounted as a file)"
)

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
    keep: OptionalDuration = Field(
        None,
        description="Remove run folders older than this at the end of each run (e.g. 30d), "
        "never one that can still be undone nor the newest successful one; null: keep all",
    )

    @field_validator("dir")
    @classmethod
    def _resolve_dir(cls, value: Path, info: ValidationInfo) -> Path:
        return _resolve(value, info)

    @field_validator("keep")
    @classmethod
    def _some_time(cls, value: RetentionDuration | None) -> RetentionDuration | None:
        if value is not None and value.zero:
            raise ValueError("a keep of 0h would remove every folder: use null to keep them all")
        return value


class LedgerSettings(_Settings):
    """Where the ledger is: a SQLite file (the default, beside the run folders) or a
    PostgreSQL database; its password never here (RETENTION_LEDGER_PASSWORD, or a file)."""

    enabled: bool = Field(
        True,
        description="false: no ledger (nothing recorded, changes made outside retention not "
        "looked for): for a throwaway audit or a benchmark, never for the scheduled job",
    )
    url: str | None = Field(
        None,
        description="sqlite:///path/ledger.db or postgresql://user@host:5432/db; "
        "null: sqlite:///<reports.dir>/ledger.db",
    )
    password_file: Path | None = Field(
        None, description="A file holding the PostgreSQL password (a mounted Secret)"
    )
    keep: OptionalDuration = Field(
        None,
        description="Remove runs older than this from the ledger at the end of each run "
        "(e.g. 400d), never a shard's newest; null: keep every run. reports.keep never "
        "touches the ledger",
    )

    @field_validator("keep")
    @classmethod
    def _some_time(cls, value: RetentionDuration | None) -> RetentionDuration | None:
        if value is not None and value.zero:
            raise ValueError("a keep of 0h would empty the ledger: use null to keep every run")
        return value

    @field_validator("url")
    @classmethod
    def _database_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        return checked_ledger_url(value.strip(), Path((info.context or {}).get("base_dir") or "."))

    @field_validator("password_file")
    @classmethod
    def _resolve_password_file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        return None if value is None else _resolve(value, info)


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
    lease_minimum: Duration = Field(
        RetentionDuration(days=LEASE_MINIMUM.days),
        description="The least time ahead a kept snapshot expires after a run (days and hours, "
        "e.g. 7d): how long a stopped job and a stopped service lose no kept snapshot",
    )
    reports: ReportsSettings = Field(default_factory=ReportsSettings)
    alerts: AlertsSettings = Field(default_factory=AlertsSettings)
    ledger: LedgerSettings = Field(default_factory=LedgerSettings)
    notify: NotifySettings | None = Field(
        None, description=f"null: no notices, unless {ENV_NOTIFY_URLS} is set"
    )

    @model_validator(mode="before")
    @classmethod
    def _nested_defaults(cls, data: Any) -> Any:
        # Built from {} rather than default_factory so that their paths resolve with the context.
        if isinstance(data, dict):
            return {"reports": {}, "alerts": {}, "ledger": {}, **data}
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

    @field_validator("lease_minimum")
    @classmethod
    def _fixed_length(cls, value: RetentionDuration) -> RetentionDuration:
        if value.years or value.months:
            raise ValueError(
                f"{value}: give the lease in days and hours (e.g. 7d or 36h): months and years "
                "have no fixed length"
            )
        return value

    def ledger_place(self, env: Mapping[str, str]) -> LedgerPlace:
        """Where the ledger is (ledger.url, else ledger.db in reports.dir; the environment
        over both), with its password."""
        return ledger_place(self.ledger.url, self.ledger.password_file, self.reports.dir, env)

    @property
    def lease_floor(self) -> timedelta:
        """lease_minimum as a length of time."""
        return timedelta(days=self.lease_minimum.days, hours=self.lease_minimum.hours)

    @field_validator("schedule")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        if value is not None and not croniter.is_valid(value.strip()):
            raise ValueError(f'not a valid cron expression: {value!r} (e.g. "0 3 * * *")')
        return None if value is None else value.strip()


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
