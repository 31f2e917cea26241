"""Headless Chromium driven over the DevTools protocol on a pipe, with no Python package and
no driver: the browser reads commands on its file descriptor 3 and writes answers and
events on 4, each a JSON object ended by a NUL byte (``--remote-debugging-pipe``).

One browser serves a whole test: ``Browser.page(width)`` opens a tab with that viewport,
``Page.load`` opens a file in it and waits for its load event, ``Page.evaluate`` runs an
expression in the page and returns its JSON value, ``Page.screenshot`` takes a PNG.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

# The browser's names on Debian (chromium), Ubuntu's old package and Google's build.
NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL = "apt-get install chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",  # root in a container has no user namespace for the sandbox
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-pipe",
)
TIMEOUT = 60.0


class BrowserError(RuntimeError):
    """The browser died, timed out or answered a command with an error."""


def find_chromium() -> str | None:
    """The path of an installed Chromium, or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _high(fd: int) -> int:
    """``fd`` moved to a number of 10 or more, so putting one pipe end on 3 cannot close
    the other before it is put on 4."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Browser:
    """A headless Chromium for the life of a ``with`` block."""

    def __init__(self, executable: str) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="retention-chromium-")
        to_browser_r, self._to_browser = (_high(fd) for fd in os.pipe())
        self._from_browser, from_browser_w = (_high(fd) for fd in os.pipe())
        args = [executable, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"]
        # posix_spawn puts the pipe ends on 3 and 4, where --remote-debugging-pipe looks,
        # without a shell (dash takes single-digit descriptors only) or a preexec_fn (unsafe
        # beside threads); a session of its own, so a browser that hangs ends with its helpers.
        self._pid = os.posix_spawn(
            executable,
            args,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, to_browser_r, 3),
                (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
            setsid=True,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ask the browser to quit, then end it if it does not; remove its profile."""
        with contextlib.suppress(BrowserError, OSError):  # already gone
            self.send("Browser.close", timeout=5)
        if not self._exited(within=10.0):
            os.killpg(self._pid, signal.SIGKILL)  # the session posix_spawn made for it
            os.waitpid(self._pid, 0)
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._profile.cleanup()

    def _exited(self, within: float) -> bool:
        """Wait up to ``within`` seconds for the browser to end; True when it has."""
        deadline = time.monotonic() + within
        while True:
            pid, _ = os.waitpid(self._pid, os.WNOHANG)
            if pid:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _read(self) -> None:
        """Split the browser's output into messages: answers to their command, events to the
        event queue; at the end of the pipe, an empty event says the browser is gone."""
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._events.put({})
                for waiting in list(self._answers.values()):
                    waiting.put({"error": {"message": "the browser closed its pipe"}})
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message and message["id"] in self._answers:
                    self._answers[message["id"]].put(message)
                else:
                    self._events.put(message)

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = TIMEOUT,
    ) -> dict[str, Any]:
        """Send one command and wait for its answer's result."""
        with self._lock:
            self._next_id += 1
            number = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            self._answers[number] = answer
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            reply = answer.get(timeout=timeout)
        except queue.Empty:
            raise BrowserError(f"{method}: no answer from Chromium in {timeout:.0f} s") from None
        finally:
            del self._answers[number]
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_for(self, method: str, session: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next event ``method`` of the session (other events are dropped)."""
        while True:
            try:
                event = self._events.get(timeout=timeout)
            except queue.Empty:
                raise BrowserError(f"no {method} from Chromium in {timeout:.0f} s") from None
            if not event:
                raise BrowserError(f"Chromium ended while waiting for {method}")
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def page(self, width: int, height: int = 1000) -> Page:
        """A new tab whose viewport is ``width`` x ``height`` CSS pixels at scale 1."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, session["sessionId"])
        page.send("Page.enable")
        page.resize(width, height)
        return page


class Page:
    """One tab of a ``Browser``."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to this tab."""
        return self.browser.send(method, params, self.session)

    def resize(self, width: int, height: int) -> None:
        """Set the viewport, as a window of that size would have it."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.send("Emulation.setDeviceMetricsOverride", metrics)

    def load(self, path: Path) -> None:
        """Open a local file and wait until it has loaded."""
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        self.browser.wait_for("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        result = self.send("Runtime.evaluate", params)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"the page's script failed: {text}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        """Write a PNG of the viewport."""
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
