"""The API client a loaded configuration describes: the one place the settings of ``api:``
and the credentials become an OpsManagerClient."""

from __future__ import annotations

from typing import Any

from retention.api.client import OpsManagerClient
from retention.api.transport import Timeouts, TLSConfig
from retention.config.credentials import MISSING_KEYS
from retention.config.loading import LoadedConfig
from retention.errors import ConfigError


def open_client(loaded: LoadedConfig, **overrides: Any) -> OpsManagerClient:
    """An OpsManagerClient for ``loaded``'s settings and credentials; keyword overrides win
    (a stop, a clock, another base URL). ConfigError (exit 2) when there are no keys."""
    api = loaded.config.api
    options: dict[str, Any] = {
        "base_url": api.base_url,
        "credentials": loaded.credentials,
        "timeouts": Timeouts(read=api.timeout_seconds),
        "tls": TLSConfig(api.verify_tls, str(api.ca_bundle) if api.ca_bundle else None),
        "envelope": api.envelope,
        "pool_size": api.concurrency,
        "max_requests_per_second": api.max_requests_per_second,
    }
    options.update(overrides)
    if options["credentials"] is None:
        raise ConfigError(f"no API credentials for {loaded.path}", problems=MISSING_KEYS)
    return OpsManagerClient(**options)
