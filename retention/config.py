"""The job configuration: ``retention.yaml`` as pydantic models, plus environment and secrets.

The file comes from ``--config``, else ``RETENTION_CONFIG``, else ``./retention.yaml``. Relative
paths in it resolve against the file's folder, because cron and Kubernetes start the job
elsewhere. ``RETENTION_BASE_URL`` overrides ``api.base_url``. The API key pair comes only from
the environment (``RETENTION_PUBLIC_KEY``, ``RETENTION_PRIVATE_KEY`` or
``RETENTION_PRIVATE_KEY_FILE``) and the private key lives in a ``SecretStr``; a secret found in
the file is refused without echoing it. Every problem is collected and raised at once as one
``ConfigError`` (exit 2, nothing sent), each naming the file (or the environment), the line
when known, and the dotted field.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

import yaml
from croniter import croniter
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from retention.api import Credentials, OpsManagerClient, Timeouts, TLSConfig
from retention.errors import ConfigError
from retention.inventory import ProjectTargets
from retention.plan.horizon import lease

log = logging.getLogger("retention.config")

API_ROOT = "/api/public/v1.0"
DEFAULT_CONFIG = "retention.yaml"
REDACTED = "**********"
ENV_CONFIG = "RETENTION_CONFIG"
ENV_BASE_URL = "RETENTION_BASE_URL"
ENV_PUBLIC_KEY = "RETENTION_PUBLIC_KEY"
ENV_PRIVATE_KEY = "RETENTION_PRIVATE_KEY"
ENV_PRIVATE_KEY_FILE = "RETENTION_PRIVATE_KEY_FILE"
SECRET_HINT = (
    f"secrets are not read from the config file; use the environment variables {ENV_PUBLIC_KEY}"
    f" and {ENV_PRIVATE_KEY} or {ENV_PRIVATE_KEY_FILE} (for Kubernetes: a Secret mounted as a file)"
)
# No real setting contains these words, so a key that does is a secret in the wrong place.
_SECRET_WORDS = ("key", "password", "passwd", "secret", "token", "credential")

Loc = tuple[str | int, ...]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


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

    project: NonEmpty
    clusters: list[NonEmpty] | None = Field(None, description="null: discover every cluster")
    config_servers: list[NonEmpty] | None = Field(None, description="null: discover them")


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

    @model_validator(mode="before")
    @classmethod
    def _nested_defaults(cls, data: Any) -> Any:
        # Built from {} rather than default_factory so that their paths resolve with the context.
        if isinstance(data, dict):
            return {"reports": {}, "alerts": {}, **data}
        return data

    @field_validator("targets")
    @classmethod
    def _unique_projects(cls, targets: list[TargetSettings]) -> list[TargetSettings]:
        first: dict[str, int] = {}
        for index, target in enumerate(targets):
            if target.project in first:
                raise ValueError(
                    f"project {target.project} is listed twice (targets.{first[target.project]}"
                    f" and targets.{index}): give it one entry"
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
            raise ConfigError(f"no API credentials for {self.path}", problems=_MISSING_KEYS)
        return OpsManagerClient(**options)


_MISSING_KEYS = [
    f"environment: {ENV_PUBLIC_KEY}: not set (the public key of the programmatic API key)",
    f"environment: {ENV_PRIVATE_KEY} or {ENV_PRIVATE_KEY_FILE}: not set (the private key,"
    " or a file holding it)",
]


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    require_credentials: bool = True,
) -> LoadedConfig:
    """Load, validate and resolve the configuration; raise ConfigError listing every problem."""
    env = os.environ if env is None else env
    config_path, how = _choose_path(path, env)
    problems: list[str] = []
    warnings: list[str] = []
    sources = {"config": how}
    log.debug("reading configuration %s (%s)", config_path, how)
    config = _read_config(config_path, how, env, problems, sources)
    credentials = _read_credentials(env, require_credentials, problems, warnings, sources)
    if problems or config is None:
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        raise ConfigError(f"{count} in {config_path}", problems=problems)
    if not config.api.verify_tls:
        warnings.append("api.verify_tls is false: TLS is not verified, answers can be forged")
    warnings.extend(schedule_warnings(config.schedule, datetime.now(UTC)))
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


def _read_text(path: Path, where: str, problems: list[str], why: str = "") -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(f"{where}: cannot read {path}: {exc.strerror or type(exc).__name__}{why}")
    except UnicodeDecodeError:
        problems.append(f"{where}: {path} is not UTF-8 text")
    return None


def _parse_yaml(text: str, name: str, problems: list[str]) -> tuple[Any, yaml.Node | None]:
    """The document and its node tree (for line numbers), or (None, None) after a problem."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as exc:
        # Only the problem and its line: the YAML snippet could hold a secret.
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}" if mark else name
        problems.append(f"{where}: YAML syntax error: {exc.problem or exc.context}")
    except yaml.YAMLError as exc:
        problems.append(f"{name}: YAML error: {exc}")
    finally:
        loader.dispose()
    return None, None


def _read_config(
    path: Path, how: str, env: Mapping[str, str], problems: list[str], sources: dict[str, str]
) -> RetentionConfig | None:
    name = path.name
    if not path.exists():
        problems.append(
            f"{name}: {path} does not exist (from {how}); `retention init "
            f"{shlex.quote(str(path.parent))}` writes a commented one to start from, or give "
            "--config FILE"
        )
        return None
    text = _read_text(path, name, problems, f" (from {how})")
    if text is None:
        return None
    count = len(problems)
    data, node = _parse_yaml(text, name, problems)
    if len(problems) > count:
        return None
    if not isinstance(data, dict):
        kind = "an empty file" if data is None else f"a {type(data).__name__}"
        problems.append(f"{name}: the top level must be a mapping of settings, not {kind}")
        return None
    _duplicate_keys(node, (), name, problems)
    found: list[Loc] = []
    data = _take_secrets(data, (), found)
    problems.extend(f"{_where(name, node, loc)}: {_dotted(loc)}: {SECRET_HINT}" for loc in found)
    env_url = env.get(ENV_BASE_URL, "").strip()
    if env_url and isinstance(data.get("api", {}), dict):
        data["api"] = {**data.get("api", {}), "base_url": env_url}
    config = None
    try:
        config = RetentionConfig.model_validate(data, context={"base_dir": path.parent})
    except ValidationError as exc:
        for err in exc.errors(include_url=False, include_input=False):
            loc = tuple(err["loc"])
            message = _message(err, loc)
            if env_url and loc == ("api", "base_url"):
                problems.append(f"environment: {ENV_BASE_URL}: {message}")
            else:
                problems.append(f"{_where(name, node, loc)}: {_dotted(loc)}: {message}")
    # In the order of the file, which is how people fix them; the sort is stable.
    problems[count:] = sorted(problems[count:], key=_line_of)
    if config is None or found:
        return None
    sources.update((key, "file" if given else "default") for _, key, given in _walk(config) if key)
    if env_url:
        sources["api.base_url"] = f"env {ENV_BASE_URL}"
    return config


def _read_credentials(
    env: Mapping[str, str],
    required: bool,
    problems: list[str],
    warnings: list[str],
    sources: dict[str, str],
) -> Credentials | None:
    public = env.get(ENV_PUBLIC_KEY, "").strip()
    private_env = env.get(ENV_PRIVATE_KEY, "").strip()
    key_file = env.get(ENV_PRIVATE_KEY_FILE, "").strip()
    private: str | None = None
    sources["credentials.public_key"] = f"env {ENV_PUBLIC_KEY}" if public else "not set"
    sources["credentials.private_key"] = "not set"
    if private_env and key_file:
        problems.append(
            f"environment: both {ENV_PRIVATE_KEY} and {ENV_PRIVATE_KEY_FILE} are set: remove"
            f" {ENV_PRIVATE_KEY} and keep the file (a file does not show in the process"
            " environment)"
        )
    elif private_env:
        private = private_env
        sources["credentials.private_key"] = f"env {ENV_PRIVATE_KEY}"
    elif key_file:
        private = _read_key_file(Path(key_file), problems, warnings)
        sources["credentials.private_key"] = f"env {ENV_PRIVATE_KEY_FILE} ({key_file})"
    if required and not public:
        problems.append(_MISSING_KEYS[0])
    if required and not (private_env or key_file):
        problems.append(_MISSING_KEYS[1])
    if public and private:
        return Credentials(public, SecretStr(private))
    return None


def _read_key_file(path: Path, problems: list[str], warnings: list[str]) -> str | None:
    where = f"environment: {ENV_PRIVATE_KEY_FILE}"
    text = _read_text(path, where, problems)
    # Key files end in a newline (echo, kubectl create secret --from-file); keys never do.
    key = text.strip() if text is not None else None
    if key == "":
        problems.append(f"{where}: {path} is empty")
    elif key:
        try:
            info = path.stat()
        except OSError:
            return key
        if info.st_mode & 0o077 and not _own_group_read_only(info):
            warnings.append(
                f"{ENV_PRIVATE_KEY_FILE}: {path} is open to group or others "
                f"({stat.filemode(info.st_mode)}): chmod 600 {path} (Kubernetes: defaultMode: "
                "0400 on the Secret volume)"
            )
    return key or None


def _own_group_read_only(info: os.stat_result) -> bool:
    """Group-readable only, by a group this process is in: what Kubernetes makes of a Secret
    file with defaultMode 0400 once the pod sets fsGroup (it adds group read). Not a leak."""
    return info.st_mode & 0o077 == 0o040 and (
        info.st_gid == os.getgid() or info.st_gid in os.getgroups()
    )


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


def _duplicate_keys(node: yaml.Node | None, loc: Loc, name: str, problems: list[str]) -> None:
    # PyYAML keeps the last of two equal keys without a word: a second `api:` would silently
    # replace the first.
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            if key.value in seen:
                line = key.start_mark.line + 1
                problems.append(f"{name}:{line}: {_dotted((*loc, key.value))}: duplicate key")
            seen.add(key.value)
            _duplicate_keys(value, (*loc, key.value), name, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _duplicate_keys(item, (*loc, index), name, problems)


def _where(name: str, node: yaml.Node | None, loc: Loc) -> str:
    """``file:line`` of the deepest node of loc present in the YAML, or just ``file``."""
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next((kv for kv in reversed(node.value) if kv[0].value == str(part)), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return f"{name}:{line}" if line else name


def _line_of(problem: str) -> int:
    """The line number of a "file:line: ..." problem; 0 for one without."""
    line = problem.split(": ", 1)[0].rpartition(":")[2]
    return int(line) if line.isdigit() else 0


def _dotted(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


_MESSAGES = {
    "missing": "required",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string (quote it in YAML)",
    "string_too_short": "must not be empty",
    "list_type": "must be a list",
    **dict.fromkeys(("model_type", "dict_type"), "must be a mapping"),
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "must be a whole number"),
    **dict.fromkeys(("float_parsing", "float_type", "finite_number"), "must be a number"),
    **dict.fromkeys(("bool_parsing", "bool_type"), "must be true or false"),
}


def _message(err: ErrorDetails, loc: Loc) -> str:
    """A short message for one pydantic error; never the input (it could be a secret)."""
    kind, ctx = err["type"], err.get("ctx", {})
    message = _MESSAGES.get(kind) or err["msg"].removeprefix("Value error, ")
    if kind == "missing" and loc in (("api",), ("api", "base_url")):
        message = f"required (or set {ENV_BASE_URL})"
    elif kind == "too_short" and loc == ("targets",):
        message = "at least one target is required"
    elif kind in ("greater_than_equal", "less_than_equal"):
        low, high = _bounds(loc)
        if low is not None and high is not None:
            message = f"must be between {low:g} and {high:g}"
        else:
            message = (
                f"must be at least {low:g}" if low is not None else f"must be at most {high:g}"
            )
    elif kind == "greater_than":
        message = f"must be greater than {ctx['gt']:g}"
    elif kind == "literal_error":
        message = f"must be one of {ctx['expected']}"
    return message


def _bounds(loc: Loc) -> tuple[Any, Any]:
    """The (ge, le) bounds declared on the field at loc, so a message can state the range."""
    model: type[BaseModel] | None = RetentionConfig
    low = high = None
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            break
        info = model.model_fields[part]
        low = next((m.ge for m in info.metadata if hasattr(m, "ge")), None)
        high = next((m.le for m in info.metadata if hasattr(m, "le")), None)
        kinds = (info.annotation, *get_args(info.annotation))
        model = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
    return low, high


def _walk(
    model: BaseModel, prefix: str = "", indent: str = "", first: str | None = None
) -> Iterator[tuple[str, str, bool]]:
    """(YAML line, dotted key, given in the file) for every setting of model, in order."""
    for position, name in enumerate(type(model).model_fields):
        value, key = getattr(model, name), f"{prefix}{name}"
        lead = first if first is not None and position == 0 else indent
        given = name in model.model_fields_set
        if isinstance(value, BaseModel):
            yield f"{lead}{name}:", "", False
            yield from _walk(value, f"{key}.", f"{indent}  ")
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            yield f"{lead}{name}:", key, given
            for index, item in enumerate(value):
                yield from _walk(item, f"{key}.{index}.", f"{indent}    ", f"{indent}  - ")
        else:
            # JSON is YAML: quoting and escaping come out right for any string or path.
            yield f"{lead}{name}: {json.dumps(value, default=str, ensure_ascii=False)}", key, given


def render_config(loaded: LoadedConfig) -> str:
    """The effective configuration as YAML, each line's source noted, the private key redacted."""
    lines = [(text, loaded.sources.get(key, "")) for text, key, _ in _walk(loaded.config)]
    creds = loaded.credentials
    public = creds.public_key if creds else "not set"
    private = REDACTED if creds else "not set"
    lines += [
        ("# credentials come from the environment only, never from this file:", ""),
        (f"#   public_key: {public}", loaded.sources.get("credentials.public_key", "")),
        (f"#   private_key: {private}", loaded.sources.get("credentials.private_key", "")),
    ]
    width = max(len(text) for text, _ in lines) + 2
    header = [f"# effective configuration from {loaded.path} ({loaded.sources.get('config')})"]
    header += [f"# warning: {warning}" for warning in loaded.warnings]
    body = [f"{text.ljust(width)}# {source}" if source else text for text, source in lines]
    return "\n".join(header + body) + "\n"


def config_document(loaded: LoadedConfig) -> dict[str, Any]:
    """`config show --format json`: the effective settings, where each came from, and the
    credentials as set or not (the private key never, not even in part)."""
    creds = loaded.credentials
    return {
        "command": "config show",
        "exitCode": 0,
        "path": str(loaded.path),
        "config": loaded.config.model_dump(mode="json"),
        "sources": dict(sorted(loaded.sources.items())),
        "credentials": {
            "publicKey": creds.public_key if creds else None,
            "privateKey": REDACTED if creds else None,
        },
        "warnings": list(loaded.warnings),
    }


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of retention.yaml (for editors and `retention schema config`)."""
    schema = RetentionConfig.model_json_schema()
    schema.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "retention.yaml",
        **schema,
    }
