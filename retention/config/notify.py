"""The ``notify:`` settings of retention.yaml, and notification URLs as the secrets they are.

An Apprise URL carries its credentials (a webhook token, a password) in its host, path or
parameters, so it is kept as a secret and shown only as ``SCHEME://**********`` in every
output. The URLs may also come from ``RETENTION_NOTIFY_URLS`` or ``notify.urls_file`` (a
mounted Secret): retention.config.notifyurls reads those. retention.notices.send does the sending.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_serializer,
    model_validator,
)

NotifyWhen = Literal["changes", "holds", "failure", "stale-backups"]
NOTIFY_ON: tuple[NotifyWhen, ...] = ("changes", "holds", "failure", "stale-backups")
REDACTED = "**********"
# A scheme as apprise spells one (slack, workflows, mailto, jsons ...); anything else is not
# shown at all, since it might be part of the secret.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}")


def scheme_of(url: str) -> str | None:
    """The scheme of a notification URL in lower case (``slack``), or None when the text
    does not start with one."""
    scheme, sep, _ = url.strip().partition("://")
    return scheme.lower() if sep and _SCHEME.fullmatch(scheme) else None


def redacted_url(url: str) -> str:
    """A notification URL as every output shows it: ``slack://**********``. Its host, path
    and parameters are left out, since any of them can be the secret (a webhook token)."""
    scheme = scheme_of(url)
    return f"{scheme}://{REDACTED}" if scheme else REDACTED


class NotifyUrl(SecretStr):
    """An Apprise URL. Its tokens are secrets, so it shows only as ``SCHEME://**********``:
    in ``config show``, in logs, in reprs and in the run's outputs."""

    def __str__(self) -> str:
        return redacted_url(self.get_secret_value())

    def __repr__(self) -> str:
        return f"NotifyUrl({str(self)!r})"


EXAMPLE_URL = "json://alerts.example.net/retention"


def url_problem(url: str) -> str | None:
    """Why apprise cannot use ``url``, in words that never quote it (only its scheme), or
    None when it can."""
    scheme = scheme_of(url)
    if scheme is None:
        return f"not an Apprise URL: write SERVICE://..., e.g. {EXAMPLE_URL}"
    # Imported here: apprise takes a fifth of a second, paid only when URLs are given.
    from retention.config.notifycheck import apprise_problem  # noqa: PLC0415

    return apprise_problem(url, scheme)


def _usable_url(url: NotifyUrl) -> NotifyUrl:
    problem = url_problem(url.get_secret_value())
    if problem is not None:
        raise ValueError(problem)
    return url


class NotifySettings(BaseModel):
    """Notices at the end of `run` and `apply`: where to (Apprise URLs) and when."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # as every section of the file

    urls: list[Annotated[NotifyUrl, AfterValidator(_usable_url)]] | None = Field(
        None,
        min_length=1,
        description="Apprise URLs, e.g. slack://T000/B000/XXXX or json://host/path; "
        "shown only as SCHEME://**********. Replaced by urls_file or RETENTION_NOTIFY_URLS "
        "when either is given",
    )
    urls_file: Path | None = Field(
        None,
        description="A file of Apprise URLs, one a line (# comments), e.g. a mounted "
        "Secret; relative to this file. Replaces urls; RETENTION_NOTIFY_URLS replaces it",
    )
    on: list[NotifyWhen] = Field(
        list(NOTIFY_ON),
        min_length=1,
        description="When to send: changes (applied; planned in a dry run), holds (a safety "
        "gate held changes), failure (exit 1 or 5), stale-backups (the plan found clusters "
        "whose backups stopped)",
    )

    # Where each URL of ``urls`` was given, when not in retention.yaml (notify.urls[N]):
    # RETENTION_NOTIFY_URLS[N] or FILE:LINE. Set by with_urls.
    _places: tuple[str, ...] = PrivateAttr(default=())

    def with_urls(self, urls: list[NotifyUrl], places: list[str]) -> NotifySettings:
        """These settings with ``urls`` instead, each given at its place in ``places``
        (``RETENTION_NOTIFY_URLS[0]``, ``/run/secrets/notify-urls:3``)."""
        if len(urls) != len(places) or not urls:
            raise ValueError("one place for each URL, and at least one URL")
        settings = self.model_copy(update={"urls": list(urls)})
        settings._places = tuple(places)
        return settings

    def destinations(self) -> list[tuple[str, NotifyUrl]]:
        """Each URL with where it was given (``notify.urls[1]``): two URLs of one service
        look alike redacted, so a delivery or a warning names its place."""
        urls = self.urls or []
        places = self._places or tuple(f"notify.urls[{index}]" for index in range(len(urls)))
        return list(zip(places, urls, strict=True))

    @model_validator(mode="before")
    @classmethod
    def _on_is_a_word(cls, data: Any) -> Any:
        # YAML 1.1 (PyYAML) reads the key `on` as the boolean true.
        if isinstance(data, dict) and True in data and "on" not in data:
            return {("on" if key is True else key): value for key, value in data.items()}
        return data

    @field_serializer("urls", when_used="json")
    def _redacted(self, urls: list[NotifyUrl] | None) -> list[str] | None:
        return None if urls is None else [str(url) for url in urls]
