"""The client's settings as value objects: the key pair, the timeouts and TLS. Below the
client and the transport that use them, so that the configuration, which reads them from
retention.yaml and the environment, needs nothing else of the API."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

# Where a client's base URL was set, as the messages that blame the URL name it ("check
# ...", "use http:// in ..."): api.base_url unless the configuration says more (it knows
# when RETENTION_BASE_URL overrides it: retention.config.connect).
BASE_URL_SETTING = "api.base_url"


@dataclass(frozen=True)
class Credentials:
    """A programmatic API key pair; the private key is a SecretStr, so no repr shows it."""

    public_key: str
    private_key: SecretStr

    def __repr__(self) -> str:
        return f"Credentials(public_key={self.public_key!r}, private_key=SecretStr('**********'))"


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection and for each read of an answer."""

    connect: float = 10.0
    read: float = 30.0

    def as_requests(self) -> tuple[float, float]:
        """The (connect, read) tuple requests takes."""
        return (self.connect, self.read)


@dataclass(frozen=True)
class TLSConfig:
    """TLS verification: on by default; ``ca_bundle`` names a PEM file of trusted CAs."""

    verify: bool = True
    ca_bundle: str | None = None

    def requests_verify(self) -> bool | str:
        """The value for requests' ``verify``."""
        if not self.verify:
            return False
        return self.ca_bundle or True
