"""A review of a policy change (`retention diff`): the lifecycle's first steps, read-only.

load the configuration → load the current policies and the base policies (both checked, a
problem on either side named with its side) → open the client → one walk, two decisions
per cluster, the difference kept (retention.diff.review), SIGINT and SIGTERM stopping it.

No lock (nothing is changed, so a review may run beside a run), no run folder, no reports,
no metrics, no notice: what a review finds goes to its output, for the pull request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from retention.api.client import OpsManagerClient
from retention.config.baseline import Baseline, current_policies, load_baseline
from retention.config.connect import open_client
from retention.config.loading import LoadedConfig
from retention.core.policy.loader import PolicySet
from retention.diff.review import Review, review
from retention.errors import PolicyError, StopRequestedError
from retention.library.job import Setup
from retention.library.lifecycle import load
from retention.ops.stopping import Stop, on_signals
from retention.walk.inventory import project_targets


@dataclass(frozen=True)
class Reviewed:
    """A finished review, what it compared and when."""

    review: Review
    base: Baseline
    current: PolicySet
    what_if: bool


def review_change(setup: Setup, *, base: str, at: datetime | None = None) -> Reviewed:
    """Compare the configuration's policies with those ``base`` names ("git:REF", a folder
    or a file) over the whole fleet, as of ``at`` or the clock's now."""
    loaded = load(setup.config_path, clock=setup.clock)
    config = loaded.config
    current, baseline = both_sides(config.policies, base)
    projects = project_targets(config)
    now = at or setup.clock()
    with read_only_client(setup, loaded, "reviewing", "the review was whole") as (client, stop):
        found = review(
            client,
            baseline.policies,
            current,
            projects,
            now=now,
            schedule=config.schedule,
            lease_minimum=config.lease_floor,
            concurrency=config.api.concurrency,
            stop=stop,
        )
    return Reviewed(found, baseline, current, what_if=at is not None)


@contextmanager
def read_only_client(
    setup: Setup, loaded: LoadedConfig, doing: str, whole: str
) -> Iterator[tuple[OpsManagerClient, Stop]]:
    """The client of a command that writes and sends nothing (diff, forecast), SIGINT and
    SIGTERM stopping it; a stop ends the command in its words: "stopped by SIGTERM while
    reviewing: nothing was written and nothing was sent"."""
    with (
        on_signals(Stop()) as stop,
        open_client(loaded, stop=stop, clock=setup.clock, interactive=setup.interactive) as client,
    ):
        try:
            yield client, stop
        except StopRequestedError as exc:
            raise StopRequestedError(
                exc.signal_name,
                whole,
                message=f"stopped by {exc.signal_name} while {doing}: nothing was written and "
                "nothing was sent",
            ) from None


def both_sides(source: Path | list[Path], base: str) -> tuple[PolicySet, Baseline]:
    """The current and the base policies; when both sides have problems, one PolicyError
    lists them all, each named with its side."""
    current: PolicySet | None = None
    baseline: Baseline | None = None
    failed: list[PolicyError] = []
    try:
        current = current_policies(source)
    except PolicyError as exc:
        failed.append(exc)
    try:
        baseline = load_baseline(base, source)
    except PolicyError as exc:
        failed.append(exc)
    if failed:
        message = "; ".join(str(exc) for exc in failed)
        raise PolicyError(message, [p for exc in failed for p in exc.problems])
    if current is None or baseline is None:  # only when failed, handled above
        raise AssertionError("a side of the review was not loaded")
    return current, baseline
