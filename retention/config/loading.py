"""Loading ``retention.yaml``: where it comes from, the environment, the secrets, every
problem at once.

The file comes from ``--config``, else ``RETENTION_CONFIG``, else ``./retention.yaml``. Relative
paths in it resolve against the file's folder, because cron and Kubernetes start the job
elsewhere. ``RETENTION_BASE_URL`` overrides ``api.base_url``. The API key pair comes only from
the environment (``RETENTION_PUBLIC_KEY``, ``RETENTION_PRIVATE_KEY`` or
``RETENTION_PRIVATE_KEY_FILE``) and the private key lives in a ``SecretStr``; a secret found in
the file is refused without echoing it. Notification URLs may come from
``RETENTION_NOTIFY_URLS`` or ``notify.urls_file`` instead of ``notify.urls``
(retention.config.notifyurls). Every problem is collected and raised at once as one
``ConfigError`` (exit 2, nothing sent), each naming the file (or the environment), the line
when known, and the dotted field.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retention.api.values import Credentials
from retention.config.credentials import read_credentials
from retention.config.findings import Findings
from retention.config.ledgerplace import ENV_LEDGER_URL, url_without_password
from retention.config.notifyurls import ENV_NOTIFY_URLS, GivenUrls, env_urls, resolve_notify
from retention.config.schedule import schedule_warnings
from retention.config.settings import (
    DEFAULT_CONFIG,
    ENV_BASE_URL,
    ENV_CONFIG,
    SECRET_HINT,
    RetentionConfig,
    yaml_lines,
)
from retention.core import validation, yamldoc
from retention.core.validation import Loc, Problem
from retention.core.wording import counted
from retention.errors import ConfigError
from retention.ops.clock import Clock

log = logging.getLogger("retention.config")

# No real setting contains these words, so a key that does is a secret in the wrong place.
_SECRET_WORDS = ("key", "password", "passwd", "secret", "token", "credential")
# The settings that name the file a secret is in (a mounted Secret), not the secret.
_SECRET_FILES = frozenset({("ledger", "password_file")})
_EXPECTED = "a mapping of settings"
_HINTS: dict[Loc, str] = {
    ("api",): f"(or set {ENV_BASE_URL})",
    ("api", "base_url"): f"(or set {ENV_BASE_URL})",
}


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration, where it came from, the credentials and any warnings."""

    config: RetentionConfig
    path: Path
    credentials: Credentials | None = None
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    require_credentials: bool = True,
    clock: Clock,
) -> LoadedConfig:
    """Load, validate and resolve the configuration; raise ConfigError listing every problem.
    The schedule's warnings are as of ``clock``'s now."""
    env = os.environ if env is None else env
    config_path, how = _choose_path(path, env)
    found = Findings(sources={"config": how})
    problems, warnings, sources = found.problems, found.warnings, found.sources
    log.debug("reading configuration %s (%s)", config_path, how)
    # Checked whatever the file holds, so that every problem is told at once.
    env_problems: list[str] = []
    from_env = env_urls(env, env_problems)
    config = _read_config(config_path, how, env, found, from_env=from_env)
    problems += env_problems
    credentials = read_credentials(env, require_credentials, problems, warnings, sources)
    if problems or config is None:
        count = counted(len(problems), "problem")
        raise ConfigError(f"{count} in {config_path}", problems=problems)
    if not config.api.verify_tls:
        warnings.append("api.verify_tls is false: TLS is not verified, answers can be forged")
    warnings.extend(schedule_warnings(config.schedule, clock(), config.lease_floor))
    return LoadedConfig(config, config_path, credentials, sources, warnings)


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
    found: Findings,
    *,
    from_env: GivenUrls | None,
) -> RetentionConfig | None:
    """The file's settings validated, the environment's base URL and notification URLs
    taken in, and where each setting came from in ``found``; None after a problem."""
    problems, sources = found.problems, found.sources
    document, in_file = _read_document(path, how, problems)
    if document is None:
        return None
    env_url = env.get(ENV_BASE_URL, "").strip()
    config = _validate(path, document, in_file, env_url, problems)
    if config is None:
        return None
    notify_found = Findings(problems, found.warnings)
    notify = resolve_notify(
        config.notify,
        from_env=from_env,
        env_set=bool(env.get(ENV_NOTIFY_URLS, "").strip()),
        at=lambda loc, message: document.lines.problem(loc, message).at(path.name),
        found=notify_found,
    )
    if notify is None and (config.notify is not None or from_env is not None):
        return None  # a problem was found
    if notify is not config.notify:
        config = config.model_copy(update={"notify": notify})
    sources.update(
        (key, "file" if given else "default") for _, key, given in yaml_lines(config) if key
    )
    sources.update(notify_found.sources)
    if env_url:
        sources["api.base_url"] = f"env {ENV_BASE_URL}"
    if env_ledger := env.get(ENV_LEDGER_URL, "").strip():
        # The effective ledger, as config show and every message name it: the environment
        # wins over the file (ledger_place reads it again, with the password taken out here
        # and used there).
        if (shown := url_without_password(env_ledger)) is not None:
            ledger = config.ledger.model_copy(update={"url": shown})
            config = config.model_copy(update={"ledger": ledger})
        sources["ledger.url"] = f"env {ENV_LEDGER_URL}"
    return config


def _read_document(
    path: Path, how: str, problems: list[str]
) -> tuple[yamldoc.Document | None, list[Problem]]:
    """The file parsed as a YAML mapping with its lines and the problems found in it, or
    None with the problem told."""
    name = path.name
    if not path.exists():
        problems.append(
            f"{name}: {path} does not exist (from {how}); `retention init "
            f"{shlex.quote(str(path.parent))}` writes a commented one to start from, or give "
            "--config FILE"
        )
        return None, []
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"{name}: cannot read {path}: {exc.strerror or exc} (from {how})")
        return None, []
    document, found = yamldoc.parse(data, _EXPECTED)
    if document is None:
        problems += [problem.at(name) for problem in found]
    return document, found


def _validate(
    path: Path,
    document: yamldoc.Document,
    found: list[Problem],
    env_url: str,
    problems: list[str],
) -> RetentionConfig | None:
    """The settings of ``document`` as a RetentionConfig (``env_url`` over api.base_url),
    or None with every problem told: ``found`` in the file, a secret-looking key, an
    invalid setting."""
    name = path.name
    secrets: list[Loc] = []
    settings = _take_secrets(document.value, (), secrets)
    found = found + [document.lines.problem(loc, SECRET_HINT) for loc in secrets]
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
    return config


def _take_secrets(data: Any, loc: Loc, found: list[Loc]) -> Any:
    """A copy of data without secret-looking keys, whose locations go to ``found``."""
    if isinstance(data, dict):
        kept: dict[Any, Any] = {}
        for key, value in data.items():
            normal = str(key).lower().replace("_", "").replace("-", "")
            named = any(word in normal for word in _SECRET_WORDS)
            if named and (*loc, str(key)) not in _SECRET_FILES:
                found.append((*loc, str(key)))
            else:
                kept[key] = _take_secrets(value, (*loc, key), found)
        return kept
    if isinstance(data, list):
        return [_take_secrets(item, (*loc, i), found) for i, item in enumerate(data)]
    return data
