"""A snapshot in the core's words: what a decision reads of one, its state as the API
shows it, and the PATCH body that changes it.

The API package decodes snapshots (``retention.api.walked`` for a walk, the full models of
``retention.api.models`` for one read alone); both answer ``SnapshotFacts``, so the core
never imports them. ``SnapshotPatch`` is the one definition of a PATCH body: the core builds
it, the client sends it, undo and the simulator use its rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

import msgspec
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StringConstraints,
    model_serializer,
    model_validator,
    with_config,
)
from pydantic.alias_generators import to_camel
from typing_extensions import TypedDict

from retention.core.timestamps import (
    TIMESTAMP_PATTERN,
    UtcDatetime,
    ceil_to_second,
    format_timestamp,
)

# What a target of a plan is: a cluster, or a legacy mirrored config server (advisory).
Kind = Literal["cluster", "config-server"]


class SnapshotFacts(Protocol):
    """The fields of a snapshot (cluster or config server) a decision reads, as the API
    package's snapshots give them (walked or read alone)."""

    @property
    def id(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def do_not_delete(self) -> bool: ...

    @property
    def expires(self) -> datetime | None: ...

    @property
    def created_at(self) -> datetime: ...

    @property
    def is_consistent(self) -> bool: ...

    @property
    def storage_bytes(self) -> int | None: ...


# A timestamp kept as the text it is written as: YYYY-MM-DDTHH:MM:SSZ.
TimestampText = Annotated[str, StringConstraints(pattern=TIMESTAMP_PATTERN)]


@with_config(ConfigDict(extra="forbid"))
class StateText(TypedDict):
    """A snapshot's doNotDelete and expires as the API shows them, expires as text (None:
    no expiry): in the plan's observed state, undo's files and the simulator's PATCH log."""

    doNotDelete: bool
    expires: TimestampText | None


@with_config(ConfigDict(extra="forbid"))
class PatchText(TypedDict, total=False):
    """A PATCH body as sent, its expiry as text."""

    doNotDelete: bool
    expires: TimestampText


def state_document(do_not_delete: bool, expires: datetime | None) -> StateText:
    """The state in the API's words: what a plan observed, what undo restores, what the
    simulator's PATCH log records."""
    return StateText(
        doNotDelete=do_not_delete,
        expires=format_timestamp(expires) if expires is not None else None,
    )


def json_text(members: Mapping[str, object]) -> str:
    """A state or a PATCH body as JSON text for a message, the way the API spells it:
    ``{"doNotDelete": true, "expires": null}`` (never Python's True, None or quotes)."""
    return "{" + ", ".join(f"{_json(k)}: {_json(v)}" for k, v in members.items()) + "}"


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()


class SnapshotPatch(BaseModel):
    """The body of a snapshot PATCH: a value that cannot break the API's rules.

    It refuses ``doNotDelete: true`` together with ``expires`` (the API rejects that with
    "Cannot modify snapshot because of invalid fields") and an empty body. Build it with
    ``protect()``, ``expire_at()`` or ``release()``. ``expires`` is rounded up to a whole
    second, the precision of the wire format, so it is never earlier than asked for.
    """

    # The API's resource models' settings: camelCase on the wire, snake_case in Python.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    do_not_delete: bool | None = None
    # The wire form has whole seconds; rounding down would write an expiry earlier than
    # decided, inside the grace period, so round up.
    expires: Annotated[UtcDatetime, AfterValidator(ceil_to_second)] | None = None

    @model_validator(mode="after")
    def _obeys_api_rules(self) -> SnapshotPatch:
        if self.do_not_delete is True and self.expires is not None:
            raise ValueError("doNotDelete: true cannot be sent together with expires")
        if self.do_not_delete is None and self.expires is None:
            raise ValueError("a snapshot PATCH must set doNotDelete or expires")
        return self

    @model_serializer(mode="plain")
    def _wire_form(self) -> dict[str, Any]:
        return self.to_api()

    def to_api(self) -> dict[str, Any]:
        """The body as the API reads it (what the client sends)."""
        return dict(self.as_text())

    def as_text(self) -> PatchText:
        """The body as sent, its expiry as text (what undo journals)."""
        text: PatchText = {}
        if self.do_not_delete is not None:
            text["doNotDelete"] = self.do_not_delete
        if self.expires is not None:
            text["expires"] = format_timestamp(self.expires)
        return text

    @classmethod
    def protect(cls) -> SnapshotPatch:
        """``{"doNotDelete": true}``: never deleted, any expiry removed."""
        return cls(do_not_delete=True)

    @classmethod
    def expire_at(cls, when: datetime) -> SnapshotPatch:
        """``{"expires": when}``: may be deleted after ``when`` (at or before now: deleted)."""
        return cls(expires=when)

    @classmethod
    def release(cls, expires: datetime) -> SnapshotPatch:
        """``{"doNotDelete": false, "expires": ...}``: lift a hold and set an expiry."""
        return cls(do_not_delete=False, expires=expires)
