"""Log output: readable lines on a terminal, or one JSON object per line for collectors
(``--log-format json``), always on stderr so stdout stays the command's own output."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from retention.timestamps import format_timestamp


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message (and the error, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": format_timestamp(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and record.exc_info[1] is not None:
            entry["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        return json.dumps(entry)


def configure(*, debug: bool, log_format: str) -> None:
    """Send retention's logs to stderr in the chosen format (replacing earlier handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
