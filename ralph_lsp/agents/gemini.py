"""Gemini CLI ``-o stream-json`` output → agent events.

- ``init {model}`` → an info line.
- ``message {role: "assistant", content, delta}`` → text lines. Streamed pieces (``delta: true``)
  are joined: a line is shown once it is complete (its newline arrived), and what is left is
  shown when anything else happens (another event, the end of the output). User messages (the
  prompt echoed back) are not shown.
- ``tool_use {tool_name, tool_id, parameters}`` → ``→ <tool> <path>`` (``$ <command>`` for the
  shell tool) and an :class:`Activity`.
- ``tool_result`` with ``status: "error"`` → ``✗ <tool>: <message>``.
- ``error {severity, message}`` → ``info`` for a warning, ``stderr`` otherwise.
- ``result {status, error?, stats}`` → :class:`ResultInfo` (``stats`` as usage, its
  ``duration_ms``; no cost) and ``iteration summary: …``.

Failures: exit code 41 or the stderr text ``Please set an Auth method`` (also a missing or
invalid API key) → ``auth``; 429, ``RESOURCE_EXHAUSTED``, quota or rate-limit texts in errors and
on stderr → ``rate_limit`` (with the reset time when named: ``retry in 23.5s``, ``reset after
2h30m``); exit code 42 (bad input) or 52 (bad configuration) before any result → ``fatal``.
A folder Gemini does not trust (exit code 55, ``not running in a trusted directory``) →
``fatal``: headless, Gemini refuses to start there (earlier versions ran with edits needing an
approval nobody can give), so the run ends at once, saying how to trust the folder.
"""

from __future__ import annotations

import re
from typing import Any

from ralph_lsp.agents._json import get_bool, get_dict, get_int, get_str, parse_object, text_of
from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    Refusal,
    ResultInfo,
    Stream,
    first_line,
    log_line,
    log_lines,
    unparsed_line,
)
from ralph_lsp.agents.claude import ProblemGate, main_model, relative_path, summary_line
from ralph_lsp.agents.limits import RATE_LIMIT_WORDS, retry_at_from_text

EXIT_AUTH = 41
EXIT_INPUT = 42
EXIT_CONFIG = 52
EXIT_UNTRUSTED = 55  # FatalUntrustedWorkspaceError

_UNTRUSTED_RE = re.compile(r"not running in a trusted (?:directory|folder)", re.IGNORECASE)
UNTRUSTED_HINT = (
    "Gemini CLI does not trust this folder and will not run here headless: trust it in Gemini"
    " (run `gemini` in the folder once), or have Ralph pass GEMINI_CLI_TRUST_WORKSPACE=true"
    " with the setting ralph.env (CLI: --env GEMINI_CLI_TRUST_WORKSPACE=true)"
)

_AUTH_RE = re.compile(
    r"please set an auth method|api key not valid|invalid api key|api_key_invalid"
    r"|GEMINI_API_KEY (?:environment variable )?not (?:found|set)|UNAUTHENTICATED"
    r"|\b401\b|login required",
    re.IGNORECASE,
)
_RATE_RE = re.compile(
    RATE_LIMIT_WORDS + r"|RESOURCE_EXHAUSTED|exhausted your (?:capacity|quota)", re.IGNORECASE
)
# Gemini refuses a tool call by policy, or because the tool is not offered in this mode.
_REFUSED_TYPES = {"policy_violation", "tool_not_registered"}
# Gemini tool → the Claude tool name of a ralph.allowedTools rule.
_RULE_TOOLS = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit"}
# "[API Error: {json}]" or "[API Error: text]"; the rest of the message is Gemini's advice.
_API_ERROR_RE = re.compile(r"\[API Error: (.*?)\](?:\s|$)", re.DOTALL)
_UNREACHABLE_RE = re.compile(
    r"fetch failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|socket hang up",
    re.IGNORECASE,
)
_RETRYING_RE = re.compile(r"Attempt \d+ failed", re.IGNORECASE)
# Lines that name Gemini's temporary error report: never a reason.
_REPORT_RE = re.compile(r"Full report available at:?\s*\S+", re.IGNORECASE)
# Exit codes of API errors: the HTTP status modulo 256.
_EXIT_STATUS = {145: 401, 144: 400, 173: 429}
_SHELL_TOOLS = {"run_shell_command", "shell"}
_PATH_KEYS = ("file_path", "absolute_path", "path", "dir_path", "directory")
_PATTERN_KEYS = ("pattern", "query", "url", "prompt")
_MAX_PENDING = 16000


class GeminiParser:
    """Parses Gemini CLI stream-json. Never raises."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd
        self._problem = ProblemGate()
        self._tools: dict[str, str] = {}
        self._inputs: dict[str, str] = {}  # tool_id → the command or file, for refusals
        self._pending = ""  # streamed assistant text not shown yet (no newline seen)
        self.saw_result = False
        self.model: str | None = None  # the init event's model, until the result names one

    def feed(self, stream: Stream, line: str) -> list[AgentEvent]:
        try:
            if stream == "stderr":
                return [*self._flush(), *self.feed_stderr(line)]
            return self.feed_stdout(line)
        except Exception:  # the last line of defence: a parser must never raise
            return unparsed_line(stream, line)

    def finish(self, exit_code: int | None) -> list[AgentEvent]:
        try:
            events = self._flush()
            status = _EXIT_STATUS.get(exit_code or 0)
            if status == 429:
                events += self._problem(
                    "rate_limit", f"rate limited (HTTP 429, exit code {exit_code})"
                )
            elif status in (400, 401) and "auth" not in self._problem.kinds:
                events += self._problem(
                    "auth", f"the API refused the key (HTTP {status}, exit code {exit_code})"
                )
            if exit_code == EXIT_AUTH:
                events += self._problem("auth", "Gemini CLI is not authenticated (exit code 41)")
            elif exit_code == EXIT_UNTRUSTED and not self.saw_result:
                events += self._problem("fatal", f"{UNTRUSTED_HINT} (exit code 55)")
            elif exit_code in (EXIT_INPUT, EXIT_CONFIG) and not self.saw_result:
                what = "bad input or arguments" if exit_code == EXIT_INPUT else "bad configuration"
                events += self._problem(
                    "fatal", f"Gemini CLI refused to run: {what} (exit code {exit_code})"
                )
            return events
        except Exception:
            return []

    # -- helpers -----------------------------------------------------------------------------

    def _classify(self, text: str, retrying: bool = False) -> list[AgentEvent]:
        text = _REPORT_RE.sub("", text[:4000]).strip()
        if _UNREACHABLE_RE.search(text):
            if retrying:  # Gemini retries on its own, with back-off
                return self._problem("offline", clean_reason(text))
            return self._problem("fatal", "cannot reach the model API: " + clean_reason(text))
        if _UNTRUSTED_RE.search(text):
            return self._problem("fatal", UNTRUSTED_HINT)
        if _AUTH_RE.search(text):
            return self._problem("auth", clean_reason(text))
        if _RATE_RE.search(text):
            return self._problem("rate_limit", clean_reason(text), retry_at_from_text(text))
        return []

    def _flush(self) -> list[AgentEvent]:
        if not self._pending:
            return []
        text, self._pending = self._pending, ""
        return log_lines(text, "text")

    # -- streams -----------------------------------------------------------------------------

    def feed_stderr(self, line: str) -> list[AgentEvent]:
        if _REPORT_RE.search(line):  # names a temporary file; the result says it cleanly
            return [log_line(_REPORT_RE.sub("(report file)", line), "stderr")]
        retrying = bool(_RETRYING_RE.search(line))
        return [log_line(line, "stderr"), *self._classify(line, retrying)]

    def feed_stdout(self, line: str) -> list[AgentEvent]:
        obj = parse_object(line)
        if obj is None:
            return [*self._flush(), log_line(line, "raw")] if line.strip() else []
        kind = get_str(obj, "type")
        if kind == "message":
            return self._message(obj)
        events = self._flush()
        if kind == "init":
            model = get_str(obj, "model")
            self.model = model or self.model
            events.append(
                log_line(
                    "agent started: Gemini CLI" + (f", model {model}" if model else ""), "info"
                )
            )
        elif kind == "tool_use":
            events += self._tool_use(obj)
        elif kind == "tool_result":
            events += self._tool_result(obj)
        elif kind == "error":
            message = get_str(obj, "message") or "error"
            if get_str(obj, "severity") == "warning":
                events.append(log_line(f"warning: {message}", "info"))
            else:
                events.append(log_line(message, "stderr"))
                events += self._classify(message)
        elif kind == "result":
            events += self._result(obj)
        return events

    def _message(self, obj: dict[str, Any]) -> list[AgentEvent]:
        if get_str(obj, "role") != "assistant":
            return []
        content = get_str(obj, "content") or ""
        if get_bool(obj, "delta") is not True:
            return [*self._flush(), *log_lines(content, "text")]
        self._pending += content
        if "\n" not in self._pending and len(self._pending) < _MAX_PENDING:
            return []
        if len(self._pending) >= _MAX_PENDING:
            return self._flush()
        complete, _, self._pending = self._pending.rpartition("\n")
        return log_lines(complete, "text")

    def _tool_use(self, obj: dict[str, Any]) -> list[AgentEvent]:
        name = get_str(obj, "tool_name") or "tool"
        tool_id = get_str(obj, "tool_id")
        if tool_id:
            self._tools[tool_id] = name
        params = get_dict(obj, "parameters") or {}
        if tool_id:
            what = get_str(params, "command") if name in _SHELL_TOOLS else None
            what = what or next((get_str(params, k) for k in _PATH_KEYS if get_str(params, k)), "")
            self._inputs[tool_id] = (
                relative_path(what, self.cwd) if what and name not in _SHELL_TOOLS else (what or "")
            )
        if name in _SHELL_TOOLS:
            command = get_str(params, "command") or ""
            return [Activity(), log_line("$ " + first_line(command, 1000), "command")]
        detail = next((get_str(params, k) for k in _PATH_KEYS if get_str(params, k)), None)
        if detail is not None:
            detail = relative_path(detail, self.cwd)
        else:
            detail = next((get_str(params, k) for k in _PATTERN_KEYS if get_str(params, k)), None)
        line = f"→ {name}" + (f" {first_line(detail, 500)}" if detail else "")
        return [Activity(), log_line(line, "tool")]

    def _tool_result(self, obj: dict[str, Any]) -> list[AgentEvent]:
        if get_str(obj, "status") != "error":
            return []
        tool_id = get_str(obj, "tool_id") or ""
        name = self._tools.get(tool_id, "tool")
        error = get_dict(obj, "error")
        detail = get_str(error, "message") or text_of(obj.get("output"))
        events: list[AgentEvent] = [
            log_line(f"✗ {name}: {first_line(detail, 300) or 'failed'}", "tool")
        ]
        if get_str(error, "type") in _REFUSED_TYPES:
            events.append(Refusal(_RULE_TOOLS.get(name, name), self._inputs.get(tool_id, "")))
        return events

    def _result(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self.saw_result = True
        status = get_str(obj, "status")
        is_error = status != "success"
        stats = get_dict(obj, "stats")
        error = get_dict(obj, "error")
        text = get_str(error, "message")
        text = clean_reason(text) if text else text
        info = ResultInfo(
            is_error=is_error,
            cost_usd=None,
            num_turns=None,
            usage=stats,
            duration_ms=get_int(stats, "duration_ms"),
            text=text,
            model=main_model(get_dict(stats, "models")) or self.model,
        )
        extra: list[str] = []
        calls = get_int(stats, "tool_calls")
        if calls is not None:
            extra.append(f"{calls} tool call" + ("" if calls == 1 else "s"))
        tokens_in = get_int(stats, "input_tokens")
        tokens_out = get_int(stats, "output_tokens")
        if tokens_in is not None or tokens_out is not None:
            extra.append(f"{tokens_in or 0:,} input / {tokens_out or 0:,} output tokens")
        if is_error:
            extra.append("error" + (f": {first_line(text, 160)}" if text else ""))
        events: list[AgentEvent] = [info, summary_line(info.duration_ms, None, None, extra)]
        if is_error and text:
            events += self._classify(text)
        return events


def clean_reason(text: str) -> str:
    """The message inside Gemini's ``[API Error: …]`` (the ``error.message`` of a JSON body),
    on one line, without the temporary report path and the retry chatter."""
    text = _REPORT_RE.sub("", text)
    m = _API_ERROR_RE.search(text)
    inner = m.group(1).strip() if m else text.strip()
    body = parse_object(inner) if inner.startswith("{") else None
    err = get_dict(body, "error") if body else None
    if err is not None:
        code = get_int(err, "code")
        message = get_str(err, "message") or get_str(err, "status") or inner
        inner = f"HTTP {code}: {message}" if code else message
    inner = re.sub(r"^exception\s+", "", inner)
    inner = re.sub(r"^Attempt \d+ failed[^:]*:\s*(?:Error:\s*)?", "", inner)
    return " ".join(inner.split())[:500]
