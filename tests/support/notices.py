"""A JSON webhook on 127.0.0.1 that notices (`notify:`) are sent to in tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Distinctive, so a leak into any output is found by a plain substring search.
TOKEN = "ntfy-5b2e9d-DO-NOT-LEAK-c41a"


class Receiver:
    """A JSON webhook on 127.0.0.1: every notice POSTed to it, with the path it came to."""

    def __init__(self) -> None:
        self.notices: list[dict[str, Any]] = []
        self.paths: list[str] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                received.notices.append(json.loads(self.rfile.read(length)))
                received.paths.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hooks/{TOKEN}"


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A running receiver, stopped when the block ends."""
    got = Receiver()
    # A short poll: the server stops at the next one, and a suite starts dozens.
    thread = threading.Thread(
        target=got.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield got
    finally:
        got.server.shutdown()
        got.server.server_close()
        thread.join()
