"""Snapshots as a walk reads them: the fields a decision needs, decoded by msgspec.

A walk reads whole fleets (a 2,000-cluster fleet is 600,000 snapshots of about 960 bytes
each) and uses six fields of each. msgspec decodes a page straight into these structs in C,
skipping every other field without building it; pydantic's validate_json of the same page
into ``SnapshotState`` was the largest share of the client's CPU (benchmarks/parse.py). The
rules are those of ``retention.api.models``: unknown fields are ignored, a missing
``complete`` counts as incomplete and a missing ``doNotDelete`` as unprotected, timestamps
with an offset are normalised to UTC (one without is taken as UTC), and numbers or flags
sent as strings are read as pydantic's lax mode reads them (``strict=False``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import msgspec

from retention.core.timestamps import to_utc


class _Created(msgspec.Struct):
    """A BSON timestamp: only its wall time is read."""

    date: datetime


class _Part(msgspec.Struct, rename="camel"):
    storage_size_bytes: float | None = None


class _MissingShard(msgspec.Struct):
    # An entry without an id is a malformed answer, as for the full model.
    id: str


class WalkedSnapshot(msgspec.Struct, rename="camel"):
    """What a plan reads of a snapshot (cluster or config server), and nothing else."""

    id: str
    created: _Created
    cluster_name: str | None = None
    complete: bool = False
    do_not_delete: bool = False
    expires: datetime | None = None
    is_possibly_inconsistent: bool | None = None
    missing_shards: list[_MissingShard] | None = None
    parts: list[_Part] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        self.created.date = to_utc(self.created.date)
        if self.expires is not None:
            self.expires = to_utc(self.expires)

    @property
    def created_at(self) -> datetime:
        """When the snapshot was taken (UTC)."""
        return self.created.date

    @property
    def storage_bytes(self) -> int | None:
        """The space the snapshot takes: the sum of its parts' storageSizeBytes (None when
        no part says)."""
        return total_storage(p.storage_size_bytes for p in self.parts)

    @property
    def is_consistent(self) -> bool:
        """False when the service flags the snapshot possibly inconsistent or missing shards."""
        return not self.is_possibly_inconsistent and not self.missing_shards


def total_storage(sizes: Iterable[float | None]) -> int | None:
    """The space of a snapshot's parts in bytes, or None when no part gives a size (a size
    of 0 counts as none given); shared by the walked and the full snapshot."""
    known = [size for size in sizes if size]
    return int(sum(known)) if known else None


class WalkedPage(msgspec.Struct, rename="camel"):
    """One page of a snapshot list, as a walk reads it."""

    results: list[WalkedSnapshot] = msgspec.field(default_factory=list)
    total_count: int | None = None


class WalkDecoder:
    """Reads a page of snapshots (the raw body, or an envelope's content) into a
    ``WalkedPage``; raises msgspec.ValidationError or msgspec.DecodeError otherwise."""

    def __init__(self) -> None:
        self._json = msgspec.json.Decoder(WalkedPage, strict=False)

    def validate_json(self, raw: bytes) -> WalkedPage:
        """A page from the body as sent."""
        return self._json.decode(raw)

    def validate_python(self, content: Any) -> WalkedPage:
        """A page from an ``envelope=true`` answer's content, already parsed."""
        return msgspec.convert(content, WalkedPage, strict=False)


WALK_DECODER = WalkDecoder()


def problem_of(exc: msgspec.MsgspecError) -> tuple[str, str]:
    """(where, what) of a msgspec error, in the words pydantic's would have:
    ("results.0.created.date", "Field required")."""
    text = str(exc)
    message, _, path = text.partition(" - at `")
    where = path.rstrip("`").removeprefix("$").removeprefix(".")
    where = where.replace("[", ".").replace("]", "")
    missing = message.removeprefix("Object missing required field `")
    if missing != message:
        field = missing.rstrip("`")
        return (f"{where}.{field}" if where else field), "Field required"
    return where, message
