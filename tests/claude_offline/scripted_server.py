"""A scripted stand-in for the Anthropic Messages API, for driving the real Claude Code CLI offline.

Test-only, standard library only, loopback only. The real `claude` binary, pointed here through
`ANTHROPIC_BASE_URL`, behaves as a tiny deterministic agent that checks exactly one task per run:

- turn 1 (no assistant turn yet): a text block and a `Read` of the `tasks.md` whose absolute path
  appears in the first user message (the prompt);
- turn 2: an `Edit` that turns the first unchecked task line of that file (read from disk now)
  from `[ ]` into `[x]` (or, when none is left, a closing text);
- turn 3 and later: `end_turn` with the text "Done." (a review prompt: `scripted_review.py`; a
  planning prompt: `scripted_plan.py`).

The wire format is the Messages API's streaming one (server-sent events `message_start`,
`content_block_start`, `content_block_delta` with `text_delta` / `input_json_delta`,
`content_block_stop`, `message_delta`, `message_stop`). A request without `stream: true` (the
CLI re-sends a turn that way when a stream breaks off) gets the same message as plain JSON.

Failure modes, per server or switched at run time with `set_mode`:
`normal`; `rate_limit` (429 `rate_limit_error` with a `retry-after` header for the first N
message requests, then normal); `overloaded` (529 `overloaded_error` for the first N, then
normal); `auth` (401 `authentication_error`, always).

Every request is recorded (`requests`) so tests can assert what the CLI sent.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

try:  # imported as tests.claude_offline.scripted_server, or run as a script beside it
    from .scripted_plan import is_plan, plan_turn
    from .scripted_review import is_review, review_plan
except ImportError:
    from scripted_plan import is_plan, plan_turn  # type: ignore[no-redef]
    from scripted_review import is_review, review_plan  # type: ignore[no-redef]

MODES = ("normal", "rate_limit", "overloaded", "auth")

# An absolute path ending in tasks.md, as a prompt would name it (maybe in backticks or quotes).
TASKS_PATH_RE = re.compile(r"(/[^\s'\"`<>()\[\]{}]*tasks\.md)")
# An unchecked task line as the OpenSpec CLI counts it (enough for the scripted agent).
UNCHECKED_RE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]*\[ \]")


@dataclass
class RecordedRequest:
    method: str
    path: str
    stream: bool | None = None  # the body's `stream` (None: no JSON body)
    assistant_turns: int = 0  # assistant messages in `messages`
    n_tools: int | None = None  # len(body["tools"]) (0: a side request such as a title)
    model: str | None = None
    status: int = 0  # the HTTP status answered
    reply: str = ""  # what was answered: "read", "edit", "done", "error:<type>", …
    headers: dict[str, str] = field(default_factory=dict)
    body_keys: list[str] = field(default_factory=list)
    size: int = 0  # request body bytes
    text: str = field(default="", repr=False)  # the body itself (to look for what it carries)


def _text_of(content: Any) -> str:
    """All text of one message's `content` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "\n".join(parts)


def find_tasks_path(messages: list[dict[str, Any]]) -> str | None:
    """The first absolute path ending in tasks.md in the first user message that is a file
    (in a git work tree the CLI puts its git status before the prompt, where a relative
    ``openspec/changes/x/tasks.md`` would read as the absolute ``/changes/x/tasks.md``)."""
    for msg in messages:
        if msg.get("role") == "user":
            found = [m.group(1) for m in TASKS_PATH_RE.finditer(_text_of(msg.get("content")))]
            return next((p for p in found if Path(p).is_file()), found[0] if found else None)
    return None


def first_unchecked_line(path: str) -> str | None:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.split("\n"):
        if UNCHECKED_RE.match(line):
            return line.rstrip("\r")
    return None


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class ScriptedModel:
    """The scripted server. Use as a context manager, or call `start()` / `stop()`."""

    def __init__(
        self,
        mode: str = "normal",
        fail_count: int = 1,
        retry_after: int | None = 1,
        error_headers: dict[str, str] | None = None,
        break_streams: int = 0,
        run_commands: list[str] | None = None,
        unable: dict[str, str] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        # model → a word: that model never checks a task whose line holds the word (it answers
        # that it could not), as a small model fails a hard story (the escalation bench).
        self.unable = dict(unable or {})
        # Shell commands the agent runs through Bash, one a turn, after the Read and before the
        # Edit (e.g. the verification command the prompt names).
        self.run_commands = list(run_commands or [])
        self.break_streams = break_streams
        self.requests: list[RecordedRequest] = []
        self._serial = 0
        self.set_mode(
            mode, fail_count=fail_count, retry_after=retry_after, error_headers=error_headers
        )
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- control ----------------------------------------------------------------------------
    def set_mode(
        self,
        mode: str,
        *,
        fail_count: int = 1,
        retry_after: int | None = 1,
        error_headers: dict[str, str] | None = None,
    ) -> None:
        """Switch mode. `fail_count` is how many message requests fail before answering normally
        (for `rate_limit` and `overloaded`); `retry_after` is the 429's `retry-after` seconds
        (None: no such header); `error_headers` are sent with every error answer."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        with self._lock:
            self.mode = mode
            self.failures_left = fail_count
            self.retry_after = retry_after
            self.error_headers = dict(error_headers or {})

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def message_requests(self) -> list[RecordedRequest]:
        """The POSTs to /v1/messages (not HEAD /, not side requests without tools)."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == "POST" and r.path.split("?")[0] == "/v1/messages" and r.n_tools != 0
            ]

    def start(self) -> ScriptedModel:
        model = self

        class Handler(_Handler):
            scripted = model

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- behaviour --------------------------------------------------------------------------
    def _next_id(self) -> int:
        with self._lock:
            self._serial += 1
            return self._serial

    def _failure(self) -> tuple[int, str, str, dict[str, str]] | None:
        """(status, error type, message, extra headers) when this request must fail."""
        with self._lock:
            extra = dict(self.error_headers)
            if self.mode == "auth":
                return 401, "authentication_error", "invalid x-api-key", extra
            if self.mode in ("rate_limit", "overloaded") and self.failures_left > 0:
                self.failures_left -= 1
                if self.mode == "rate_limit":
                    if self.retry_after is not None:
                        extra["retry-after"] = str(self.retry_after)
                    return (
                        429,
                        "rate_limit_error",
                        "Number of request tokens has exceeded your per-minute rate limit",
                        extra,
                    )
                return 529, "overloaded_error", "Overloaded", extra
        return None

    def plan(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], str]:
        """(reply name, content blocks, stop_reason) for one turn."""
        messages = body.get("messages") or []
        if not body.get("tools"):
            # A side request (title, summary…): a short text, no tools.
            return "side", [{"type": "text", "text": "Scripted task"}], "end_turn"
        turns = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        path = find_tasks_path(messages)
        n = self._next_id()
        first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), {})
        prompt = _text_of(first.get("content"))
        if is_review(prompt):  # a review round (scripted_review.py)
            return review_plan(turns, path, n)
        if is_plan(prompt):  # a planning iteration (scripted_plan.py)
            return plan_turn(turns, prompt, n)
        if turns == 0:
            if path is None:
                return "no-path", [{"type": "text", "text": "No tasks.md path given."}], "end_turn"
            return (
                "read",
                [
                    {"type": "text", "text": "I'll read the task list first."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_scripted{n:06d}r",
                        "name": "Read",
                        "input": {"file_path": path},
                    },
                ],
                "tool_use",
            )
        if 1 <= turns <= len(self.run_commands):
            return (
                "bash",
                [
                    {
                        "type": "tool_use",
                        "id": f"toolu_scripted{n:06d}b",
                        "name": "Bash",
                        "input": {"command": self.run_commands[turns - 1]},
                    }
                ],
                "tool_use",
            )
        if turns == 1 + len(self.run_commands) and path is not None:
            line = first_unchecked_line(path)
            if line is None:
                return "none-left", [{"type": "text", "text": "Every task is checked."}], "end_turn"
            word = self.unable.get(str(body.get("model")))
            if word and word in line:
                return "unable", [{"type": "text", "text": "I could not do it."}], "end_turn"
            return (
                "edit",
                [
                    {
                        "type": "tool_use",
                        "id": f"toolu_scripted{n:06d}e",
                        "name": "Edit",
                        "input": {
                            "file_path": path,
                            "old_string": line,
                            "new_string": line.replace("[ ]", "[x]", 1),
                        },
                    }
                ],
                "tool_use",
            )
        return "done", [{"type": "text", "text": "Done."}], "end_turn"


def _usage(output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": 120,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedModel  # set on the subclass made by ScriptedModel.start

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _record(self, rec: RecordedRequest) -> None:
        with self.scripted._lock:
            self.scripted.requests.append(rec)

    def _send(
        self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", "req_scripted")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
            self.wfile.flush()

    def do_HEAD(self) -> None:
        self._record(RecordedRequest("HEAD", self.path, status=200, headers=dict(self.headers)))
        self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._record(RecordedRequest("GET", self.path, status=404, headers=dict(self.headers)))
        self._send(404, b'{"type":"error","error":{"type":"not_found_error"}}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        rec = RecordedRequest(
            "POST",
            self.path,
            stream=bool(body.get("stream")) if "stream" in body else False,
            assistant_turns=sum(
                1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
            ),
            n_tools=len(body["tools"]) if isinstance(body.get("tools"), list) else None,
            model=body.get("model"),
            headers=dict(self.headers),
            body_keys=sorted(body) if isinstance(body, dict) else [],
            size=len(raw),
            text=raw.decode("utf-8", "replace"),
        )
        if self.path.split("?")[0] != "/v1/messages":
            rec.status, rec.reply = 404, "not-found"
            self._record(rec)
            self._send(
                404,
                b'{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}',
                "application/json",
            )
            return

        failure = self._failure_for(body)
        if failure is not None:
            status, etype, message, extra = failure
            rec.status, rec.reply = status, f"error:{etype}"
            self._record(rec)
            payload = {
                "type": "error",
                "error": {"type": etype, "message": message},
                "request_id": "req_scripted",
            }
            self._send(status, json.dumps(payload).encode(), "application/json", extra)
            return

        reply, blocks, stop_reason = self.scripted.plan(body)
        rec.status, rec.reply = 200, reply
        self._record(rec)
        model = body.get("model") or "claude-scripted"
        msg_id = f"msg_scripted{self.scripted._next_id():06d}"
        out_tokens = 10 * len(blocks)
        if rec.stream:
            stream = self._stream(msg_id, model, blocks, stop_reason, out_tokens)
            if self._take_break():
                # Cut the stream off after message_start: the CLI must re-send the turn.
                rec.reply += "+broken"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(stream)))
                self.end_headers()
                self.wfile.write(stream[: stream.index(b"\n\n") + 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self._send(200, stream, "text/event-stream")
        else:
            message = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": _usage(out_tokens),
            }
            self._send(200, json.dumps(message).encode(), "application/json")

    def _take_break(self) -> bool:
        with self.scripted._lock:
            if self.scripted.break_streams > 0:
                self.scripted.break_streams -= 1
                return True
        return False

    def _failure_for(self, body: dict[str, Any]) -> tuple[int, str, str, dict[str, str]] | None:
        if not body.get("tools") and self.scripted.mode != "auth":
            return None  # side requests do not use up the scripted failures
        return self.scripted._failure()

    @staticmethod
    def _stream(
        msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str, out_tokens: int
    ) -> bytes:
        start = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(1),
        }
        parts = [_sse("message_start", {"type": "message_start", "message": start})]
        parts.append(_sse("ping", {"type": "ping"}))
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                head = {"type": "text", "text": ""}
                text = block["text"]
                # Two pieces, as a real stream would send more than one.
                cut = max(1, len(text) // 2)
                deltas = [
                    {"type": "text_delta", "text": piece}
                    for piece in (text[:cut], text[cut:])
                    if piece
                ]
            else:
                head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                js = json.dumps(block["input"])
                cut = max(1, len(js) // 2)
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in (js[:cut], js[cut:])
                    if piece
                ]
            parts.append(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": head},
                )
            )
            for d in deltas:
                parts.append(
                    _sse(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": d},
                    )
                )
            parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
        parts.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": out_tokens},
                },
            )
        )
        parts.append(_sse("message_stop", {"type": "message_stop"}))
        return b"".join(parts)


def main() -> None:
    """Serve until interrupted (for trying the CLI by hand); prints the base URL."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=MODES, default="normal")
    ap.add_argument("--fail-count", type=int, default=1)
    ap.add_argument("--retry-after", type=int, default=1)
    args = ap.parse_args()
    server = ScriptedModel(args.mode, fail_count=args.fail_count, retry_after=args.retry_after)
    server.start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
