"""The simulator on a socket: an HTTP/1.1 server with keep-alive and a thread per connection.

It is the standard library's ``http.server`` rather than Werkzeug: Werkzeug 3's server sends
``Connection: close`` on every answer, and the simulator must keep connections alive the way
the API does (clients answer one digest challenge per connection and thread). Every answer
has a Content-Length and every request body is read in full, which is what keep-alive needs.

    with Simulator(SimulatorConfig(fleet="demo", seed=7)) as sim:
        sim.base_url, sim.public_key, sim.private_key
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from retention.simulator.app import BASE_PATH, SimulatorApp
from retention.simulator.digest import DigestAuthority
from retention.simulator.faults import FaultInjector, FaultSpec
from retention.simulator.fleetfile import build_fleet
from retention.simulator.messages import SimRequest
from retention.simulator.store import Fleet, SimClock

log = logging.getLogger("retention.simulator")


@dataclass(frozen=True)
class SimulatorConfig:
    """How to run a simulator; ``private_key`` None draws a random one."""

    fleet: str = "demo"
    seed: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    latency_ms: float = 0.0
    faults: str | None = None
    public_key: str = "sim-public-key"
    private_key: str | None = None
    literal_op: bool = False
    nonce_ttl: float = 300.0
    reap_delay: timedelta = timedelta(hours=6)
    now: datetime | None = None
    frozen: bool = False
    # The service-version header's name: the real service's, or the API document's
    # (X-Server-Service-Version), so that clients are tested against both.
    version_header: str = "X-MongoDB-Service-Version"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, a small body waits for the
    # client's delayed ACK of the headers: 40 ms for every small answer.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = SimRequest(self.command, self.path, dict(self.headers.items()), body)
        try:
            response = self.server.app.handle(request)
        except Exception:
            log.exception("simulator failed on %s %s", self.command, self.path)
            self._write(500, [("Content-Type", "application/json")], b'{"error":500}')
            return
        if response.delay > 0:
            time.sleep(response.delay)
        if response.reset:
            # SO_LINGER 0 turns close() into a TCP reset, as a crashed proxy would.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        self._write(response.status, response.headers, response.body)

    def _write(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        try:
            self.send_response_only(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    do_GET = _serve  # noqa: N815 - http.server's naming
    do_PATCH = _serve  # noqa: N815
    do_POST = _serve  # noqa: N815
    do_PUT = _serve  # noqa: N815
    do_DELETE = _serve  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    app: SimulatorApp

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.open_sockets: set[socket.socket] = set()
        self._sockets_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def close_open_sockets(self) -> None:
        with self._sockets_lock:
            sockets = list(self.open_sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class Simulator:
    """A running simulator: start() binds and serves in a thread, stop() ends it cleanly."""

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        *,
        fleet_factory: Callable[[datetime], Fleet] | None = None,
    ) -> None:
        self.config = config or SimulatorConfig()
        self._fleet_factory = fleet_factory
        self.public_key = self.config.public_key
        self.private_key = self.config.private_key or secrets.token_hex(12)
        self.clock = SimClock()
        if self.config.now is not None:
            self.clock.set(self.config.now, frozen=self.config.frozen)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.app: SimulatorApp | None = None

    def start(self) -> Simulator:
        """Build the fleet, bind the port and serve in a background thread."""
        config = self.config
        spec = FaultSpec.parse(config.faults)
        # Bind first: the fleet's links (alerts, missing shards) carry the real base URL.
        server = _Server((config.host, config.port))
        host, port = server.server_address[:2]
        base_url = f"http://{_url_host(str(host))}:{port}{BASE_PATH}"
        factory = self._fleet_factory or (
            lambda now: build_fleet(config.fleet, seed=config.seed, now=now, base_url=base_url)
        )
        try:
            app = self._build_app(factory, spec)
        except BaseException:
            server.server_close()
            raise
        app.base_url = base_url
        server.app = app
        self.app, self._server = app, server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self

    def _build_app(self, factory: Callable[[datetime], Fleet], spec: FaultSpec) -> SimulatorApp:
        config = self.config
        born = self.clock.now()  # a reset rebuilds this very fleet, ids and all
        return SimulatorApp(
            lambda: factory(born),
            auth=DigestAuthority(
                self.public_key,
                self.private_key,
                literal_op=config.literal_op,
                nonce_ttl=config.nonce_ttl,
            ),
            clock=self.clock,
            faults=FaultInjector(spec, seed=config.seed),
            latency_ms=config.latency_ms,
            reap_delay=config.reap_delay,
            version_header=config.version_header,
        )

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        if self._server is None:
            return
        _shut_down(self._server)
        self._server.close_open_sockets()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None

    def __enter__(self) -> Simulator:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The API base URL, ``http://host:port/api/public/v1.0``."""
        if self.app is None:
            raise RuntimeError("the simulator is not started")
        return self.app.base_url

    @property
    def admin_url(self) -> str:
        """The root of the admin surface."""
        return self.base_url[: -len(BASE_PATH)] + "/__admin"

    def admin(self, path: str, payload: dict[str, Any] | None = None) -> Any:
        """GET (or POST ``payload`` to) an admin resource and return its JSON."""
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(  # noqa: S310 - our own loopback URL
            f"{self.admin_url}/{path.lstrip('/')}",
            data=data,
            method="POST" if data is not None else "GET",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            return json.loads(answer.read())


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _shut_down(server: _Server) -> None:
    """Stop ``server``'s loop now: it looks at its stop flag only when its poll ends or a
    connection comes in, so connections come in until it has stopped (a test suite stops
    hundreds of simulators, each of which would otherwise wait out its poll)."""
    stopping = threading.Thread(target=server.shutdown, daemon=True)
    stopping.start()
    host, port = server.server_address[:2]
    while stopping.is_alive():
        # A connection refused or slow: the loop ends at its next poll all the same.
        with contextlib.suppress(OSError):
            socket.create_connection((str(host), int(port)), timeout=1).close()
        stopping.join(0.01)
