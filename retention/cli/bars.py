"""The bars of retention.cli.progress, drawn by rich on stderr: one line a stage (its
name, a bar, ``13/13 clusters``, what it has done so far, the time left), redrawn a few
times a second and cleared when the job ends. Imported only when progress shows.

While they are on the screen, log lines go above them (through rich's console) instead
of being drawn over.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.table import Column
from rich.text import Text

# The time left shows only once the rate has been measured: over this many seconds of the
# stage and this many items done. A rate from the first item or two is a guess: the first
# requests pay for the connections and the first pages, and an apply's workers start
# together (an ETA of 1:06 for an apply of 45 s).
SETTLE_SECONDS = 3.0
SETTLE_ITEMS = 5


def time_left(task: Task) -> float | None:
    """Seconds left for ``task`` at the rate measured so far (rich's: items done per
    second over its last 30 s), or None until there is a rate to measure (SETTLE_SECONDS,
    SETTLE_ITEMS)."""
    if task.total is None or task.finished:
        return None
    elapsed = task.elapsed
    if elapsed is None or elapsed < SETTLE_SECONDS or task.completed < SETTLE_ITEMS:
        return None
    rate = task.speed
    if not rate:
        return None
    return (task.total - task.completed) / rate


def clock_text(seconds: float) -> str:
    """``0:45``, ``12:03`` or ``1:02:03``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class TimeLeft(ProgressColumn):
    """``ETA 0:45`` once the rate is measured (time_left), else nothing."""

    def render(self, task: Task) -> Text:
        """The time left of ``task``."""
        left = time_left(task)
        return Text("" if left is None else f"ETA {clock_text(left)}", style="progress.remaining")


class Done(ProgressColumn):
    """``12/13 clusters``: the items done of the stage's total, and what they are."""

    def render(self, task: Task) -> Text:
        """The count of ``task``."""
        unit = task.fields.get("unit", "")
        total = int(task.total or 0)
        return Text(f"{int(task.completed):,}/{total:,} {unit}", style="progress.download")


def columns() -> list[ProgressColumn]:
    """A stage's line: its name, the bar, the count, what it has done, the time left."""
    # One line each, never wrapped (a wrapped line is redrawn badly): on a narrow terminal
    # the bar gives way first, then the end of what the stage has done is cut with "…".
    return [
        TextColumn("{task.description}", markup=False, table_column=Column(no_wrap=True)),
        BarColumn(bar_width=24),
        Done(table_column=Column(no_wrap=True)),
        TextColumn(
            "{task.fields[detail]}",
            markup=False,
            table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
        ),
        TimeLeft(table_column=Column(no_wrap=True)),
    ]


class Bars:
    """rich's Progress on stderr, transient: a task a stage, the last one advancing."""

    def __init__(self, get_time: Callable[[], float] | None = None) -> None:
        console = Console(stderr=True)
        self._progress = Progress(
            *columns(),
            console=console,
            transient=True,
            refresh_per_second=5,
            get_time=get_time,
            # stdout is the command's output, perhaps a pipe: never drawn into, never
            # taken over (rich would send what is written to it to the terminal).
            redirect_stdout=False,
            # A terminal that cannot redraw a line (TERM=dumb) would get every frame.
            disable=not console.is_interactive,
        )
        self._task: TaskID | None = None
        self._logs: list[tuple[logging.StreamHandler[IO[str]], IO[str]]] = []
        stderr = sys.stderr
        self._progress.start()
        self._logs_above(stderr)

    def stage(self, name: str, total: int, unit: str, detail: str) -> None:
        """A new stage of ``total`` items (the stages before stay, finished)."""
        self._task = self._progress.add_task(name, total=total, unit=unit, detail=detail)

    def advance(self, detail: str) -> None:
        """One more item of the current stage done; ``detail`` says what is done so far."""
        if self._task is not None:
            self._progress.update(self._task, advance=1, detail=detail)

    def stop(self) -> None:
        """Clear the bars from the screen; the log lines go to stderr again."""
        for handler, stream in self._logs:
            handler.setStream(stream)
        self._logs = []
        self._progress.stop()

    def _logs_above(self, stderr: IO[str]) -> None:
        """Log handlers writing to ``stderr`` write through rich's console while it draws
        (rich put it in sys.stderr's place), so that a warning goes above the bars."""
        console = sys.stderr
        if console is stderr:
            return
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is stderr:
                self._logs.append((handler, stderr))
                handler.setStream(console)
