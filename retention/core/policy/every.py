"""The ``every`` rule: keep the newest snapshot in each interval between two ticks of a cron
expression, for ``count`` intervals.

One class for both sides: a policy file's ``every`` entries are validated into it (its
fields and their checks are the policy schema's ``EveryRule``), and the engine walks it as
it is. The ticks themselves come from ``retention.core.policy.cron``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from croniter import CroniterError, croniter
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, WithJsonSchema

from retention.core.policy import rules

_CRON_FIELDS = 5
# A fixed start for the "does it ever fire" probe: the core never reads the clock.
_CRON_PROBE = datetime(2000, 1, 1)


def checked_count(value: int, least: int = 0) -> int:
    """A rule's count: -1 (unlimited) or at least ``least``."""
    if value < least and value != -1:
        raise ValueError(f"must be -1 (unlimited) or a number >= {least}")
    return value


def _cron(value: str) -> str:
    fields = value.split()
    if len(fields) != _CRON_FIELDS or not croniter.is_valid(value):
        raise ValueError(
            f"{value!r} is not a valid cron expression (5 fields: minute hour day month weekday)"
        )
    try:
        croniter(value, _CRON_PROBE).get_next(datetime)
    except (CroniterError, ValueError, OverflowError):
        raise ValueError(f"{value!r} never fires (no such date)") from None
    return " ".join(fields)


EveryCount = Annotated[
    int,
    Strict(),
    AfterValidator(lambda value: checked_count(value, least=1)),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"const": -1}]}),
]


class EveryRule(BaseModel):
    """Keep the newest snapshot in each interval between two ticks of a cron expression."""

    # Spelt out in each model so the mypy plugin sees frozen=True.
    model_config = ConfigDict(extra="forbid", frozen=True)

    cron: Annotated[str, AfterValidator(_cron)] = Field(
        description="Five-field cron expression (minute hour day month weekday), e.g. "
        "'0 0 1 1,4,7,10 *' for quarterly; ticks in the policy's time zone."
    )
    count: EveryCount = Field(description="How many intervals to keep; -1 = unlimited.")

    if TYPE_CHECKING:

        def __init__(self, cron: str, count: int) -> None: ...

    else:
        # Built as EveryRule(cron, count) too, as the engine's callers write a rule; pydantic
        # calls this with a policy file's keys, unknown ones included, so it takes any.
        def __init__(self, *args, **data):
            super().__init__(**dict(zip(("cron", "count"), args, strict=False)), **data)

    @property
    def reason(self) -> str:
        """The reason text, e.g. ``cron 0 0 1 1,4,7,10 *``."""
        return rules.EVERY.reason.format(cron=self.cron)
