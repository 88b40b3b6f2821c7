"""A small driver for headless Chromium through the DevTools protocol (CDP), for tests and benchmarks.

Nothing but the standard library and the ``websockets`` package::

    with Chromium() as browser:
        browser.open(page)                      # a Path (loaded as file://) or a URL; waits for "load"
        browser.wait_for("document.body.dataset.ready === '1'")
        browser.select("#status-filter", "failed")
        browser.click("tr.task")                # a real mouse click at the element's centre
        browser.screenshot(tmp_path / "page.png")
        assert not browser.errors               # console errors, uncaught exceptions, error log entries

How it works: Chromium is started as ``--headless=new --remote-debugging-port=0`` with a private
``--user-data-dir``; it writes the port it chose and the browser's WebSocket path to
``<user-data-dir>/DevToolsActivePort``. The driver connects to that browser endpoint, opens one tab
(``Target.createTarget``), attaches to it with a flat session (``Target.attachToTarget``,
``flatten``) and sends every page command with that ``sessionId``. Replies are matched by ``id``;
events read while waiting for a reply are kept (console errors, exceptions, dialogs). A JavaScript
dialog (``alert``) is recorded and dismissed at once, so a page never blocks on one.

Every wait is bounded (``timeout`` seconds per command, by default 30); the browser's process group
is always killed on ``close()`` / leaving the ``with`` block, and its profile directory removed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BrowserError", "Chromium", "Problem", "chromium_path"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell")


def chromium_path() -> str | None:
    """The Chromium (or Chrome) executable: ``$VERIFY_CHROMIUM`` if set, else the first on ``PATH``; else None."""
    env = os.environ.get("VERIFY_CHROMIUM")
    if env:
        return env if Path(env).is_file() and os.access(env, os.X_OK) else None
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    """The browser did not start, a command failed or timed out, or a page-side evaluation threw."""


@dataclass(frozen=True)
class Problem:
    """Something that went wrong on the page: ``kind`` is ``console``, ``exception`` or ``log``."""

    kind: str
    text: str
    url: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f" ({self.url}:{self.line})" if self.url else ""
        return f"{self.kind}: {self.text}{where}"


@dataclass
class _Events:
    problems: list[Problem] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)  # (type, text), every console call
    dialogs: list[dict[str, Any]] = field(default_factory=list)
    loads: int = 0


#: Flags that keep a headless run quiet and self-contained (no network, no first-run UI, no GPU).
_FLAGS = (
    "--headless=new",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--disable-gpu",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--metrics-recording-only",
    "--mute-audio",
    "--password-store=basic",
    "--hide-scrollbars",
)


class Chromium:
    """One headless Chromium with one tab. Use as a context manager; every method is synchronous."""

    def __init__(self, *, executable: str | None = None, width: int = 1280, height: int = 900,
                 timeout: float = 30.0, start_timeout: float = 30.0) -> None:
        exe = executable or chromium_path()
        if exe is None:
            raise BrowserError("no chromium found (install it, or set VERIFY_CHROMIUM)")
        self.timeout = timeout
        self.width, self.height = width, height
        self._events = _Events()
        self._next_id = 0
        self._session: str | None = None
        self._ws: Any = None
        self._profile = Path(tempfile.mkdtemp(prefix="verify-chromium-"))
        self._log = (self._profile / "chromium.log").open("wb")
        args = [exe, *_FLAGS, f"--user-data-dir={self._profile / 'profile'}", f"--window-size={width},{height}"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        args.append("about:blank")
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        try:
            self._connect(start_timeout)
        except BaseException:
            self.close()
            raise

    # --- life cycle -------------------------------------------------------------------------------

    def _connect(self, start_timeout: float) -> None:
        from websockets.sync.client import connect

        port_file = self._profile / "profile" / "DevToolsActivePort"
        deadline = time.monotonic() + start_timeout
        while True:
            if self._proc.poll() is not None:
                raise BrowserError(f"chromium exited with {self._proc.returncode} before it listened:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                lines = port_file.read_text().split("\n")
                if len(lines) >= 2 and lines[0].strip().isdigit() and lines[1].strip():
                    port, path = int(lines[0]), lines[1].strip()
                    break
            if time.monotonic() > deadline:
                raise BrowserError(f"chromium did not write DevToolsActivePort in {start_timeout} s:\n{self.log_tail()}")
            time.sleep(0.05)
        connection = connect(f"ws://127.0.0.1:{port}{path}", proxy=None, max_size=None, compression=None,
                             open_timeout=min(10.0, start_timeout), ping_interval=None, close_timeout=2)
        self._ws = connection.__enter__()  # the context-manager form, without its block (closed in close())
        target = self._call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                   session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self._call(f"{domain}.enable")
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})

    def close(self) -> None:
        """Close the connection, kill the browser's process group, remove its profile. Safe to call twice."""
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._send("Browser.close", {}, session=False)
            with contextlib.suppress(Exception):
                self._ws.close()
            self._ws = None
        proc = self._proc
        if proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=3)  # Browser.close usually ends it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group we started: renderers, zygotes, the wrapper
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        with contextlib.suppress(Exception):
            self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log_tail(self, chars: int = 2000) -> str:
        """The end of Chromium's own stdout/stderr (for error messages)."""
        with contextlib.suppress(OSError):
            self._log.flush()
            return (self._profile / "chromium.log").read_bytes()[-chars:].decode("utf-8", "replace")
        return ""

    # --- protocol ---------------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any], *, session: bool = True) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session and self._session is not None:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        return self._next_id

    def _call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None,
              session: bool = True) -> dict[str, Any]:
        """Send a command and wait (bounded) for its reply; events read meanwhile are handled."""
        if self._ws is None:
            raise BrowserError("the browser is closed")
        wanted = self._send(method, params or {}, session=session)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            message = self._read(deadline, f"{method} did not answer")
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error'].get('message')} {message['error'].get('data', '')}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def _read(self, deadline: float, what: str) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrowserError(f"timed out: {what}")
        try:
            raw = self._ws.recv(timeout=remaining)
        except TimeoutError:
            raise BrowserError(f"timed out: {what}") from None
        except Exception as exc:  # connection closed: the browser died
            raise BrowserError(f"lost the browser ({exc}); {what}:\n{self.log_tail()}") from exc
        message: dict[str, Any] = json.loads(raw)
        if "method" in message:
            self._on_event(message["method"], message.get("params", {}))
        return message

    def _pump(self, seconds: float) -> None:
        """Read and handle events for up to ``seconds`` (no command pending)."""
        deadline = time.monotonic() + seconds
        with contextlib.suppress(BrowserError):
            while time.monotonic() < deadline:
                self._read(deadline, "events")

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        events = self._events
        if method == "Runtime.consoleAPICalled":
            text = " ".join(_remote_text(a) for a in params.get("args", []))
            events.console.append((params.get("type", ""), text))
            if params.get("type") in ("error", "assert"):
                frame = (params.get("stackTrace") or {}).get("callFrames") or [{}]
                events.problems.append(Problem("console", text, frame[0].get("url"), frame[0].get("lineNumber")))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = _remote_text(details["exception"]) if details.get("exception") else details.get("text", "")
            events.problems.append(Problem("exception", text or details.get("text", ""), details.get("url"),
                                           details.get("lineNumber")))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                events.problems.append(Problem("log", entry.get("text", ""), entry.get("url"), entry.get("lineNumber")))
        elif method == "Page.javascriptDialogOpening":
            events.dialogs.append(dict(params))
            self._send("Page.handleJavaScriptDialog", {"accept": False})  # never block on a dialog
        elif method == "Page.loadEventFired":
            events.loads += 1

    # --- what the page reported -------------------------------------------------------------------

    @property
    def errors(self) -> list[Problem]:
        """Console errors, uncaught exceptions and error log entries (e.g. a blocked resource) so far."""
        return list(self._events.problems)

    @property
    def console(self) -> list[tuple[str, str]]:
        """Every console call so far, as (type, text)."""
        return list(self._events.console)

    @property
    def dialogs(self) -> list[dict[str, Any]]:
        """JavaScript dialogs (alert, confirm, prompt) the page opened; each was dismissed."""
        return list(self._events.dialogs)

    # --- pages ------------------------------------------------------------------------------------

    def navigate(self, target: Path | str, *, timeout: float | None = None) -> str:
        """Start loading a file (as a file:// URL) or URL, without waiting for it to load; returns the URL."""
        url = target.resolve().as_uri() if isinstance(target, Path) else target
        reply = self._call("Page.navigate", {"url": url}, timeout=timeout)
        if reply.get("errorText"):
            raise BrowserError(f"navigating to {url}: {reply['errorText']}")
        return url

    def open(self, target: Path | str, *, timeout: float | None = None) -> float:
        """Navigate to a file (as a file:// URL) or URL and wait for its load event; returns the seconds taken."""
        loads = self._events.loads
        started = time.perf_counter()
        url = self.navigate(target, timeout=timeout)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while self._events.loads == loads:
            self._read(deadline, f"load event of {url}")
        return time.perf_counter() - started

    def add_init_script(self, source: str) -> None:
        """Run ``source`` in every document this tab opens from now on, before the page's own scripts."""
        self._call("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    def evaluate(self, expression: str, *, await_promise: bool = False, timeout: float | None = None) -> Any:
        """The value (as JSON) of a JavaScript expression in the page; raises BrowserError if it throws."""
        reply = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise, "userGesture": True},
                           timeout=timeout)
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = _remote_text(details["exception"]) if details.get("exception") else details.get("text", "")
            raise BrowserError(f"evaluating {expression[:200]!r}: {text}")
        return reply.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout: float | None = None, interval: float = 0.01) -> Any:
        """Poll ``expression`` until it is truthy; returns its value. Raises BrowserError after ``timeout``."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            value = self.evaluate(expression, timeout=max(0.5, deadline - time.monotonic()))
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out after {limit} s waiting for {expression!r}")
            self._pump(interval)

    def settle(self, seconds: float = 0.1) -> None:
        """Let the page run for a moment, collecting its events (errors, dialogs)."""
        self._pump(seconds)

    # --- user actions -----------------------------------------------------------------------------

    def _centre(self, selector: str) -> tuple[float, float]:
        box = self.evaluate(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el) return null;
                el.scrollIntoView({{block: 'center', inline: 'center'}});
                const r = el.getBoundingClientRect();
                return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height];
            }})()"""
        )
        if box is None:
            raise BrowserError(f"no element matches {selector!r}")
        if box[2] <= 0 or box[3] <= 0:
            raise BrowserError(f"{selector!r} is not visible (size {box[2]}x{box[3]})")
        return box[0], box[1]

    def click(self, selector: str) -> None:
        """A real left click (mouse pressed and released) at the centre of the first match, scrolled into view.

        Whatever is on top at that point gets the click, as for a user: a covered element is not clicked.
        """
        x, y = self._centre(selector)
        self._call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self._call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def type_text(self, selector: str, text: str, *, clear: bool = True) -> None:
        """Focus the first match and type ``text`` into it (fires ``input`` events as typing does)."""
        found = self.evaluate(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el) return false;
                el.focus();
                if ({json.dumps(clear)}) {{ el.select && el.select(); }}
                return true;
            }})()"""
        )
        if not found:
            raise BrowserError(f"no element matches {selector!r}")
        if clear:
            self._call("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Backspace", "code": "Backspace",
                                                  "windowsVirtualKeyCode": 8})
            self._call("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Backspace", "code": "Backspace",
                                                  "windowsVirtualKeyCode": 8})
        if text:
            self._call("Input.insertText", {"text": text})

    def select(self, selector: str, value: str) -> None:
        """Set a ``<select>``'s value and dispatch ``input`` and ``change`` events, as a user's choice does."""
        ok = self.evaluate(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el) return 'missing';
                if (![...el.options].some(o => o.value === {json.dumps(value)})) return 'no such option';
                el.value = {json.dumps(value)};
                el.dispatchEvent(new Event('input', {{bubbles: true}}));
                el.dispatchEvent(new Event('change', {{bubbles: true}}));
                return 'ok';
            }})()"""
        )
        if ok != "ok":
            raise BrowserError(f"select {selector!r} = {value!r}: {ok}")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """Save a PNG of the viewport (or the whole page, up to 10,000 px high) to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": max(size[0], self.width),
                              "height": min(max(size[1], self.height), 10_000), "scale": 1}
            params["captureBeyondViewport"] = True
        data = self._call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


def _remote_text(obj: dict[str, Any]) -> str:
    """A readable text for a CDP ``RemoteObject`` (console argument or thrown exception)."""
    if "value" in obj:
        value = obj["value"]
        return value if isinstance(value, str) else json.dumps(value)
    if obj.get("unserializableValue"):
        return str(obj["unserializableValue"])
    return str(obj.get("description") or obj.get("type", ""))
