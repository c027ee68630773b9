"""A headless Chromium driven over the Chrome DevTools Protocol, for tests that open a page.

The protocol runs over a pipe (`--remote-debugging-pipe`: commands in on fd 3, replies out on fd
4, each message JSON ended by a NUL byte), so there is no port to pick, nothing to listen on, and
no package to install: Debian's `chromium` is enough. The browser runs in a process group of its
own, which `close` ends whatever happens, so no process is left behind.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The Chromium program on PATH (Debian's `chromium`), or None."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


class CdpError(RuntimeError):
    """The browser answered a command with an error, or stopped answering."""


class Chromium:
    """One headless browser with one page; `with Chromium() as browser:` closes it."""

    def __init__(self, program: str | None = None, *, timeout: float = 30.0) -> None:
        program = program or find_chromium()
        if program is None:
            raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="conform-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads our commands, its fd 4 writes replies
            read = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            write = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(read, 3, inheritable=True)
            os.dup2(write, 4, inheritable=True)

        self.process = subprocess.Popen(
            [program, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=wire,
            close_fds=False,  # keeps fds 3 and 4 (made inheritable); Python's own fds are not
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        try:
            self._attach()
        except BaseException:
            self.close()
            raise

    # -- the protocol -----------------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise CdpError("the browser did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError("the browser closed its pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        found: dict[str, Any] = json.loads(message)
        return found

    def send(self, method: str, params: dict[str, Any] | None = None, *, page: bool = True) -> Any:
        """Send one command (to the page's session unless `page` is False) and wait for its
        result; events that arrive meanwhile are kept in `events`."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if page and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The first event `method` (kept or still to come), removed from `events`."""
        deadline = time.monotonic() + self.timeout
        while True:
            for n, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[n]
                    return event
            self.events.append(self._read_message(deadline))

    def _attach(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            pages = [
                t
                for t in self.send("Target.getTargets", page=False)["targetInfos"]
                if t["type"] == "page"
            ]
            if pages:
                break
            if time.monotonic() > deadline:
                raise CdpError("the browser opened no page")
            time.sleep(0.05)
        attached = self.send(
            "Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True}, page=False
        )
        self.session = attached["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")

    # -- what tests do ----------------------------------------------------------------------------

    def size(self, width: int, height: int) -> None:
        """Make the page's viewport `width` x `height` CSS pixels."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event."""
        self.events.clear()
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        found = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in found:
            raise CdpError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def mouse(self, kind: str, x: float, y: float) -> None:
        """A real mouse event at page coordinates: `mouseMoved`, or a left click (`click`)."""
        if kind == "click":
            for step in ("mousePressed", "mouseReleased"):
                self.send(
                    "Input.dispatchMouseEvent",
                    {"type": step, "x": x, "y": y, "button": "left", "clickCount": 1},
                )
        else:
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y})

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """Save what the page shows as PNG (the whole page with `full_page`)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": metrics["width"],
                "height": metrics["height"],
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    # -- ending -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the browser, then kill its process group whatever is left of it."""
        with contextlib.suppress(Exception):
            self.send("Browser.close", page=False)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
