"""A real HTTP/1.1 server in a thread for wire-level client tests (keep-alive, digest auth,
scripted faults). Smaller than the simulator (retention.simulator) and scripted answer by
answer, so the tests exercise urllib3's real retry loop, sockets, timeouts and TLS failures
down to a reset connection or a half-written body."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.support.digest import UNAUTHORIZED_BODY, UNAUTHORIZED_HEADERS, DigestChecker

BASE_PATH = "/api/public/v1.0"


@dataclass
class Fault:
    """What the server does to the next authenticated request instead of answering normally."""

    kind: str  # "reset" | "status" | "sleep"
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class WireState:
    """The server's script and what it saw."""

    checker: DigestChecker
    body: dict[str, Any]
    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, int | str]] = field(default_factory=list)
    connections: set[tuple[str, int]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_fault(self) -> Fault | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None


class JsonHandler(BaseHTTPRequestHandler):
    """A keep-alive HTTP/1.1 handler for GET and PATCH; subclasses answer in ``_handle``,
    with what the server was started with in ``self.server.payload``."""

    protocol_version = "HTTP/1.1"
    server: ThreadedServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _handle(self) -> None:
        raise NotImplementedError

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "keep-alive")
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        """Answer a GET."""
        self._handle()

    def do_PATCH(self) -> None:
        """Answer a PATCH."""
        self._handle()


class ThreadedServer(ThreadingHTTPServer):
    """A server whose handlers find what it was started with in ``payload``."""

    daemon_threads = True
    payload: Any


@contextmanager
def run_server(
    handler: type[JsonHandler], payload: Any, tls: ssl.SSLContext | None = None
) -> Iterator[str]:
    """Run ``handler`` on a free loopback port, behind TLS when given a server ``tls``
    context (holding its certificate); yield its base URL; stop it afterwards."""
    server = ThreadedServer(("127.0.0.1", 0), handler)
    server.payload = payload
    if tls is not None:
        # The handshake happens at accept; one the client refuses is an OSError the server
        # drops (socketserver's accept loop), so the next connection is served as usual.
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        host, port = server.server_address[:2]
        scheme = "http" if tls is None else "https"
        yield f"{scheme}://{host!s}:{port}{BASE_PATH}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Handler(JsonHandler):
    def _handle(self) -> None:
        state: WireState = self.server.payload
        state.connections.add(self.client_address)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        # A request through a proxy names the whole URL; its digest signs the path alone.
        signed = urlsplit(self.path)._replace(scheme="", netloc="").geturl()
        verdict = state.checker.verify(self.command, signed, self.headers.get("Authorization"))
        if verdict != "ok":
            challenge = state.checker.challenge(stale=verdict == "stale")
            state.log.append((self.command, self.path, 401))
            self._send(
                401, {**UNAUTHORIZED_HEADERS, "WWW-Authenticate": challenge}, UNAUTHORIZED_BODY
            )
            return
        fault = state.next_fault()
        if fault is not None and fault.kind == "reset":
            state.log.append((self.command, self.path, "reset"))
            # SO_LINGER 0: close with RST, the way a crashed proxy drops a connection.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if fault is not None and fault.kind == "sleep":
            time.sleep(fault.seconds)
        if fault is not None and fault.kind == "status":
            state.log.append((self.command, self.path, fault.status))
            body = json.dumps({"detail": "scripted fault", "error": fault.status}).encode()
            self._send(fault.status, {"Content-Type": "application/json", **fault.headers}, body)
            return
        state.log.append((self.command, self.path, 200))
        self._send(
            200,
            {
                "Content-Type": "application/json",
                "X-Server-Service-Version": "gitHash=feedbeef; versionString=8.0.1",
            },
            json.dumps(state.body).encode(),
        )


@contextmanager
def serve(state: WireState) -> Iterator[str]:
    """Run the wire server on a free loopback port; yield its base URL; stop it afterwards."""
    with run_server(_Handler, state) as base_url:
        yield base_url


def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def serve_tls(state: WireState, context: ssl.SSLContext) -> Iterator[str]:
    """Run the wire server behind TLS on a free loopback port (``context``: a server
    context holding its certificate); yield its https base URL; stop it afterwards."""
    with run_server(_Handler, state, context) as base_url:
        yield base_url
