"""The API client a loaded configuration describes: the one place the settings of ``api:``
and the credentials become an OpsManagerClient."""

from __future__ import annotations

from retention.api.client import OpsManagerClient
from retention.api.values import BASE_URL_SETTING, Timeouts, TLSConfig
from retention.config.credentials import MISSING_KEYS
from retention.config.loading import LoadedConfig
from retention.config.settings import ENV_BASE_URL
from retention.errors import ConfigError
from retention.ops.clock import Clock
from retention.ops.stopping import Stop


def open_client(
    loaded: LoadedConfig,
    *,
    stop: Stop | None = None,
    clock: Clock,
    base_url: str | None = None,
    interactive: bool = False,
) -> OpsManagerClient:
    """An OpsManagerClient for ``loaded``'s settings and credentials, stopped by ``stop``
    and telling the time by ``clock``; ``base_url`` overrides ``api.base_url``;
    ``interactive``: a person waits at a terminal (a refused first contact fails fast).
    ConfigError (exit 2) when there are no keys."""
    if loaded.credentials is None:
        raise ConfigError(f"no API credentials for {loaded.path}", problems=MISSING_KEYS)
    api = loaded.config.api
    return OpsManagerClient(
        base_url or api.base_url,
        loaded.credentials,
        timeouts=Timeouts(read=api.timeout_seconds),
        tls=TLSConfig(api.verify_tls, str(api.ca_bundle) if api.ca_bundle else None),
        envelope=api.envelope,
        pool_size=api.concurrency,
        max_requests_per_second=api.max_requests_per_second,
        stop=stop,
        clock=clock,
        interactive=interactive,
        base_url_setting=BASE_URL_SETTING if base_url else base_url_setting(loaded),
    )


def base_url_setting(loaded: LoadedConfig) -> str:
    """Where the base URL of ``loaded`` was set, in the words of a message that blames it:
    RETENTION_BASE_URL when it is set (it overrides the file, which a person would otherwise
    edit in vain), else api.base_url of the configuration file."""
    if loaded.sources.get("api.base_url") == f"env {ENV_BASE_URL}":
        return f"{ENV_BASE_URL}, set in the environment where it overrides api.base_url"
    return f"api.base_url of {loaded.path}"
