"""Scripted model servers (standard library only) for the real Codex CLI (OpenAI Responses API,
SSE) and Gemini CLI (``streamGenerateContent?alt=sse``) on 127.0.0.1.

Each server plays a list of :class:`Step` s: the model's n-th turn is the n-th step, where n is
the number of tool calls already in the request's history (both CLIs send the whole history each
time). A step is one tool call (``shell``, ``write``, ``edit``) or a final text. ``mode`` makes
every request fail instead: ``401``, ``429`` (once, with retry-after 1 s, then the script), or
``429-always``.

With a ``planner`` instead of fixed steps, the model follows the prompt: on a session's first
turn the planner gets the request's prompt text and returns that session's steps
(:mod:`.prompt_model`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    kind: str  # "shell", "write", "edit", "patch" (Codex: ``new`` is the raw patch), "text"
    path: str = ""  # write/edit: relative to the project
    command: str = ""  # shell
    old: str = ""  # edit
    new: str = ""  # edit; write: the whole content
    text: str = "Done."  # text; shell (Codex): "escalate" asks to leave the sandbox


@dataclass
class Script:
    steps: list[Step]
    mode: str = "normal"
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures_left: int = 1
    #: (kind, prompt) → the session's steps; called on each session's first turn.
    planner: Callable[[str, str], list[Step]] | None = None
    #: the prompt of a session → its planned steps
    plans: dict[str, list[Step]] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: Script


class ScriptedServer:
    """``with ScriptedServer(kind, steps) as s: s.url``; kind ``codex`` or ``gemini``."""

    def __init__(
        self,
        kind: str,
        steps: list[Step],
        mode: str = "normal",
        planner: Callable[[str, str], list[Step]] | None = None,
    ) -> None:
        handler = _CodexHandler if kind == "codex" else _GeminiHandler
        self.kind = kind
        self.server = _Server(("127.0.0.1", 0), handler)
        self.server.script = Script(steps, mode, planner=planner)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        base = f"http://127.0.0.1:{self.port}"
        return base + "/v1" if self.kind == "codex" else base

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.script.requests

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        return body if isinstance(body, dict) else {}

    def _json(
        self, status: int, obj: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, chunks: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    def _failure(self) -> bool:
        """Answer with the scripted failure, if any; True when it did."""
        script = self.server.script
        if script.mode == "401":
            self._error(401)
            return True
        if script.mode == "429-always" or (script.mode == "429" and script.failures_left > 0):
            script.failures_left -= 1
            self._error(429)
            return True
        return False

    def _error(self, status: int) -> None:
        raise NotImplementedError

    kind = ""

    def _step(self, turn: int, body: dict[str, Any]) -> Step:
        script = self.server.script
        steps = script.steps
        if script.planner is not None:
            from .prompt_model import prompt_of

            prompt = prompt_of(self.kind, body)
            if turn == 0 or prompt not in script.plans:
                script.plans[prompt] = script.planner(self.kind, prompt)
            steps = script.plans[prompt]
        return steps[turn] if turn < len(steps) else Step("text", text="Done.")


# -- Codex: the Responses API ------------------------------------------------------------------


class _CodexHandler(_Handler):
    kind = "codex"

    def do_GET(self) -> None:
        self._json(404, {"error": {"message": "not here"}})

    def do_POST(self) -> None:
        body = self._body()
        self.server.script.requests.append(body)
        if self._failure():
            return
        items = body.get("input") or []
        turn = sum(
            1
            for it in items
            if isinstance(it, dict) and it.get("type") in ("function_call", "custom_tool_call")
        )
        self._sse(_codex_events(self._step(turn, body), turn))

    def _error(self, status: int) -> None:
        if status == 401:
            err = {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                   "code": "invalid_api_key"}  # fmt: skip
            self._json(401, {"error": err})
        else:
            err = {"message": "Rate limit reached for requests.", "type": "requests",
                   "code": "rate_limit_exceeded"}  # fmt: skip
            self._json(429, {"error": err}, {"retry-after": "1"})


def _codex_item(step: Step, turn: int) -> dict[str, Any]:
    call_id = f"call_{turn}"
    if step.kind == "shell":
        fields: dict[str, Any] = {"cmd": step.command, "yield_time_ms": 10000}
        if step.text == "escalate":  # ask to run outside the sandbox
            fields.update(sandbox_permissions="require_escalated", justification="needed")
        args = json.dumps(fields)
        return {"type": "function_call", "id": f"fc_{turn}", "call_id": call_id,
                "name": "exec_command", "arguments": args, "status": "completed"}  # fmt: skip
    if step.kind in ("write", "edit", "patch"):
        if step.kind == "patch":
            patch = step.new
        elif step.kind == "write":
            lines = "".join(f"+{ln}\n" for ln in step.new.splitlines())
            patch = f"*** Begin Patch\n*** Add File: {step.path}\n{lines}*** End Patch\n"
        else:
            patch = (
                f"*** Begin Patch\n*** Update File: {step.path}\n@@\n-{step.old}\n+{step.new}\n"
                "*** End Patch\n"
            )
        return {"type": "custom_tool_call", "id": f"ctc_{turn}", "call_id": call_id,
                "name": "apply_patch", "input": patch, "status": "completed"}  # fmt: skip
    return {"type": "message", "id": f"msg_{turn}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}]}  # fmt: skip


def _codex_events(step: Step, turn: int) -> list[bytes]:
    rid = f"resp_{turn}"
    item = _codex_item(step, turn)
    usage = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 100, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 1100}  # fmt: skip
    events = [
        {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed",
         "response": {"id": rid, "status": "completed", "output": [item], "usage": usage}},
    ]  # fmt: skip
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


# -- Gemini: streamGenerateContent --------------------------------------------------------------


class _GeminiHandler(_Handler):
    kind = "gemini"

    def do_GET(self) -> None:
        self._json(404, {"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}})

    def do_POST(self) -> None:
        body = self._body()
        self.server.script.requests.append(body)
        if self._failure():
            return
        turn = 0
        for content in body.get("contents") or []:
            for part in (content or {}).get("parts") or []:
                if isinstance(part, dict) and "functionCall" in part:
                    turn += 1
        self._sse(_gemini_chunks(self._step(turn, body)))

    def _error(self, status: int) -> None:
        if status == 401:
            err = {"code": 401, "message": "API key not valid. Please pass a valid API key.",
                   "status": "UNAUTHENTICATED"}  # fmt: skip
        else:
            err = {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                   "status": "RESOURCE_EXHAUSTED",
                   "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                "retryDelay": "1s"}]}  # fmt: skip
        self._json(status, {"error": err})


def _gemini_part(step: Step) -> dict[str, Any]:
    if step.kind == "shell":
        call = {"name": "run_shell_command", "args": {"command": step.command}}
    elif step.kind == "write":
        call = {"name": "write_file", "args": {"file_path": step.path, "content": step.new}}
    elif step.kind == "edit":
        args = {"file_path": step.path, "instruction": "tick", "old_string": step.old}
        call = {"name": "replace", "args": {**args, "new_string": step.new}}
    else:
        return {"text": step.text}
    return {"functionCall": call, "thoughtSignature": "skip_thought_signature_validator"}


def _gemini_chunks(step: Step) -> list[bytes]:
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [_gemini_part(step)]},
                        "index": 0, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 100,
                          "totalTokenCount": 1100},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1",
    }  # fmt: skip
    return [f"data: {json.dumps(chunk)}\r\n\r\n".encode()]
