"""A small, synchronous LSP client over a real ``python -m ralph_lsp`` process, for fault tests.

Faults need what a typed client hides: raw JSON of any shape, killing the server with SIGKILL,
closing its stdin without ``shutdown``, and timing each answer while it is busy. A reader thread
parses frames as they come, answers the server's own requests (``workspace/configuration`` with
the settings given, everything else with null) and records every notification.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

SERVER = [sys.executable, "-m", "ralph_lsp"]

CAPABILITIES: dict[str, Any] = {
    "workspace": {
        "configuration": True,
        "didChangeConfiguration": {"dynamicRegistration": False},
        "workspaceFolders": True,
        "codeLens": {"refreshSupport": True},
    },
    "window": {"workDoneProgress": True},
    "textDocument": {
        "synchronization": {"didSave": True},
        "codeLens": {},
        "publishDiagnostics": {},
    },
}


class ServerGone(AssertionError):
    pass


class RawLsp:
    def __init__(
        self,
        root: Path,
        env: dict[str, str],
        *,
        settings: dict[str, Any] | None = None,
        init_options: Any = None,
        stderr_path: Path | None = None,
    ) -> None:
        self.root = root
        self.settings: dict[str, Any] = settings if settings is not None else {}
        self.init_options = init_options
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._answers: dict[int, dict[str, Any]] = {}
        self._answered = threading.Condition(self._lock)
        self.notifications: list[tuple[float, str, Any]] = []
        self.server_requests: list[str] = []
        self.closed = threading.Event()
        self.reading = threading.Event()  # cleared: the client stops reading (the pipe fills)
        self.reading.set()
        self._stderr: IO[bytes] | None = open(stderr_path, "wb") if stderr_path else None  # noqa: SIM115
        self.proc = subprocess.Popen(
            SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr if self._stderr else subprocess.DEVNULL,
            env=env,
            cwd=root,
        )
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- wire ----------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        assert self.proc.stdin is not None
        with self._write_lock:
            try:
                self.proc.stdin.write(frame)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:
                raise ServerGone(f"the server's stdin is closed: {exc!r}") from exc

    def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                self.reading.wait()
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                if length is None:
                    continue
                body = out.read(length)
                if len(body) < length:
                    return
                self._dispatch(json.loads(body))
        finally:
            self.closed.set()
            with self._answered:
                self._answered.notify_all()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # a request of the server's
            method = message["method"]
            self.server_requests.append(method)
            result: Any = None
            if method == "workspace/configuration":
                result = [self.settings for _ in message.get("params", {}).get("items", [])]
            with contextlib.suppress(ServerGone):
                self._send({"id": message["id"], "result": result})
        elif "method" in message:
            with self._lock:
                self.notifications.append(
                    (time.monotonic(), message["method"], message.get("params"))
                )
        else:
            with self._answered:
                self._answers[message["id"]] = message
                self._answered.notify_all()

    # -- API -----------------------------------------------------------------------------------
    def request(self, method: str, params: Any = None, timeout: float = 15.0) -> dict[str, Any]:
        """The whole response message (``result`` or ``error``); fails after ``timeout``."""
        rid = next(self._ids)
        self._send({"id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._answered:
            while rid not in self._answers:
                left = deadline - time.monotonic()
                if self.closed.is_set():
                    raise ServerGone(f"the server closed the connection during {method}")
                if left <= 0:
                    raise AssertionError(f"no answer to {method} within {timeout}s")
                self._answered.wait(left)
            return self._answers.pop(rid)

    def send_request(self, method: str, params: Any = None) -> int:
        """Send a request without waiting for its answer; returns its id."""
        rid = next(self._ids)
        self._send({"id": rid, "method": method, "params": params})
        return rid

    def result(self, method: str, params: Any = None, timeout: float = 15.0) -> Any:
        answer = self.request(method, params, timeout)
        assert "error" not in answer, answer["error"]
        return answer["result"]

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"method": method, "params": params})

    def command(self, name: str, *arguments: Any, timeout: float = 15.0) -> dict[str, Any]:
        params: dict[str, Any] = {"command": name}
        if arguments:
            params["arguments"] = list(arguments)
        return self.request("workspace/executeCommand", params, timeout)

    def initialize(self, timeout: float = 15.0) -> dict[str, Any]:
        result = self.result(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.root.as_uri(),
                "capabilities": CAPABILITIES,
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
                "initializationOptions": self.init_options,
            },
            timeout,
        )
        self.notify("initialized", {})
        return result  # type: ignore[no-any-return]

    def code_lens(self, uri: str, timeout: float = 15.0) -> Any:
        return self.result("textDocument/codeLens", {"textDocument": {"uri": uri}}, timeout)

    # -- notifications -------------------------------------------------------------------------
    def of(self, method: str) -> list[Any]:
        with self._lock:
            return [p for _, m, p in self.notifications if m == method]

    def logs(self) -> str:
        return "\n".join(str(p.get("message", "")) for p in self.of("window/logMessage"))

    def statuses(self, change: str | None = None) -> list[dict[str, Any]]:
        found = self.of("ralph/runStatus")
        return [s for s in found if change is None or s.get("change") == change]

    def final_status(self, change: str) -> dict[str, Any] | None:
        for status in reversed(self.statuses(change)):
            if status.get("state") != "running":
                return status
        return None

    def wait_final(self, change: str, timeout: float = 30.0) -> dict[str, Any]:
        return wait_for(lambda: self.final_status(change), timeout, f"the end of {change}'s run")

    # -- ending --------------------------------------------------------------------------------
    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with self._write_lock, contextlib.suppress(OSError):
            self.proc.stdin.close()

    def shutdown(self, timeout: float = 20.0) -> None:
        with contextlib.suppress(ServerGone):
            self.request("shutdown", None, timeout)
            self.notify("exit", None)

    def end(self) -> None:
        """Make sure the server is gone (polite first, then SIGKILL)."""
        if self.proc.poll() is None:
            polite = self.proc.stdin is not None and not self.proc.stdin.closed
            if polite and not self.closed.is_set():
                with contextlib.suppress(Exception):
                    self.shutdown(10)
            try:
                self.proc.wait(10 if polite else 1)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.close_stdin()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._reader.join(5)
        if self._stderr is not None:
            self._stderr.close()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)
