"""Log output: readable lines on a terminal, or one JSON object per line for collectors
(``--log-format json``), always on stderr so stdout stays the command's own output.

In json mode every line retention writes to stderr is a JSON object: log records (with the
structured ``fields`` a record carries as top-level keys), and the one ``fatal`` event that
ends a failed command (``fatal``, which the CLI calls instead of printing its error).

A record may carry, through ``extra=``:

- ``fields``: a dict of structured values (``event``, ``runId``, ``exitCode`` ...), top-level
  keys of the JSON object; the text format leaves them out.
- ``text``: the line the text format prints instead of ``LEVEL logger: message``, for
  messages people have always read in that form (``warning: ...``).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from retention.core.timestamps import format_timestamp
from retention.errors import EXIT_MEANINGS
from retention.ops.clock import Clock

LOG_FORMAT_ENV = "RETENTION_LOG_FORMAT"
# The run-finished event goes to this logger (INFO): a collector's record of every run.
RUN_LOGGER = "retention.run"
# urllib3 logs a WARNING with the repr of its Retry object before each retry of a broken
# connection; retention.api.transport logs its own line instead.
URLLIB3_POOL_LOGGER = "urllib3.connectionpool"
_CLEAR_LINE = "\r\x1b[K"  # back to the start of the line, and erase it


def _encode(entry: Mapping[str, Any]) -> str:
    # default=str: a Path or a datetime among the fields must not cost the line.
    return json.dumps(entry, default=str)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, event (if any), message, the
    record's structured ``fields`` and the error, if any. The time is the command's clock
    (retention.ops.clock), read as the record is written, so that a command run at a given
    time logs that time."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": format_timestamp(self.clock()),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        fields = fields if isinstance(fields, Mapping) else {}
        if "event" in fields:
            entry["event"] = fields["event"]
        entry["message"] = record.getMessage()
        for key, value in fields.items():
            entry.setdefault(str(key), value)
        if record.exc_info and record.exc_info[1] is not None:
            entry["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        return _encode(entry)


class TextFormatter(logging.Formatter):
    """``LEVEL logger: message``, or the record's own ``text`` line when it has one."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = getattr(record, "text", None)
        if isinstance(text, str):
            return text
        return super().format(record)


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg] # Generic only in typeshed
    """A StreamHandler that, on a terminal and when asked to, starts each line on a clean
    line: a progress count left without its newline (``\\rwalked 12 clusters``) is erased
    instead of having the log line run into it."""

    def __init__(self, stream: IO[str], *, clear_line: bool = False) -> None:
        super().__init__(stream)
        isatty = getattr(stream, "isatty", None)
        self.clear_line = clear_line and callable(isatty) and bool(isatty())

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return _CLEAR_LINE + text if self.clear_line else text


class DropUrllib3RetryWarnings(logging.Filter):
    """Drops urllib3's ``Retrying (Retry(total=4, ...)) after connection broken by ...``
    warnings; BoundedRetry logs one line of ours per retry (its other records pass)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if hasattr(record, "__urllib3-retry-warning"):
            return False
        return not str(record.msg).startswith("Retrying (")


def configure(*, debug: bool, log_format: str, clock: Clock) -> None:
    """Send retention's logs to stderr in the chosen format (replacing earlier handlers).

    The level is WARNING (DEBUG with ``debug``). In json mode the run-finished event (INFO
    on ``retention.run``) is logged too; in text mode it shows only with ``debug``, as the
    command prints its own summary on stdout. urllib3's retry warnings are dropped (ours
    say the same in one line); in json mode Python warnings are logged (py.warnings), each
    line with ``clock``'s time."""
    as_json = log_format == "json"
    handler = StderrHandler(sys.stderr, clear_line=not as_json)
    handler.setFormatter(JsonFormatter(clock) if as_json else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    run_level = logging.INFO if as_json and not debug else logging.NOTSET
    logging.getLogger(RUN_LOGGER).setLevel(run_level)
    if as_json:
        # A Python warning (a library's) would be raw text on stderr: log it instead.
        logging.captureWarnings(True)
    pool = logging.getLogger(URLLIB3_POOL_LOGGER)
    if not any(isinstance(f, DropUrllib3RetryWarnings) for f in pool.filters):
        pool.addFilter(DropUrllib3RetryWarnings())


def requested_format(argv: Sequence[str], environ: Mapping[str, str]) -> str:
    """The log format a command line asks for, read before click parses it (so that even a
    usage error can be reported in it): the last ``--log-format X`` (or ``=X``) of
    ``argv``, else ``RETENTION_LOG_FORMAT``; "json" or "text"."""
    chosen: str | None = None
    for n, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--log-format" and n + 1 < len(argv):
            chosen = argv[n + 1]
        elif arg.startswith("--log-format="):
            chosen = arg.partition("=")[2]
    if chosen is None:
        chosen = environ.get(LOG_FORMAT_ENV, "")
    return "json" if chosen.strip().lower() == "json" else "text"


def fatal(
    message: str,
    *,
    exit_code: int,
    clock: Clock,
    stream: IO[str] | None = None,
    **fields: Any,
) -> None:
    """Write the error that ends a command as one JSON object line (json log format):
    ``{"time", "level": "error", "logger": "retention", "event": "fatal", "message",
    "exitCode", "meaning", ...fields}``; fields that are None are left out.

    Written straight to ``stream`` (stderr), not through logging: a usage error comes
    before logging is configured, and the last line must get out whatever the handlers.
    """
    entry: dict[str, Any] = {
        "time": format_timestamp(clock()),
        "level": "error",
        "logger": "retention",
        "event": "fatal",
        "message": message,
        "exitCode": exit_code,
    }
    meaning = EXIT_MEANINGS.get(exit_code)
    if meaning is not None:
        entry["meaning"] = meaning
    for key, value in fields.items():
        if value is not None:
            entry.setdefault(key, value)
    out = stream if stream is not None else sys.stderr
    out.write(_encode(entry) + "\n")
    out.flush()
