"""Codex ``codex exec --json`` output (JSONL) → agent events.

- ``thread.started`` → an info line. ``turn.started`` is silent.
- ``item.started`` of a ``command_execution`` → ``$ <command>`` and an :class:`Activity` at once
  (a long test run shows while it runs); ``item.completed`` adds ``exit code N`` when it is not
  0 (and shows the command if its start was not seen).
- ``item.completed``: ``agent_message`` → its text; ``file_change`` → ``→ <kind> <path>`` per
  change plus an :class:`Activity`; ``mcp_tool_call`` / ``web_search`` → ``→ …`` plus an
  :class:`Activity`; an ``error`` item → an info line; ``reasoning`` and ``todo_list`` are
  skipped.
- ``turn.completed {usage}`` → :class:`ResultInfo` (usage, no cost: Codex reports none) and
  ``iteration summary: …`` with the time since the parser was made and the token counts.
- ``turn.failed {error}`` → a ``stderr`` line and an error :class:`ResultInfo`; a top-level
  ``error {message}`` → an ``info`` line when it is ``Reconnecting...``, else ``stderr``.

Refusals (SPEC §4 v2), as :class:`Refusal` events: a ``command_execution`` whose status is
``declined``, or ``failed`` with "Read-only file system" in its output (the workspace-write
sandbox stopped a write outside the project) → ``Bash(<command>)``; Codex's stderr lines
``codex_core::tools::router: error=patch rejected…`` → ``Edit`` and ``…reject command…`` (an
escalation the approval policy refuses) → ``Bash``: Codex 0.169 emits no JSON event for those
two, and their text names neither the file nor the command.

Failures (in error messages and on stderr; never in the agent's own messages): 401 /
unauthorized / not logged in / a bad API key → ``auth``; usage limit, rate limit, 429, too many
requests, quota, ``try again at …`` → ``rate_limit`` (with the reset time when named). While Codex
is still reconnecting on its own (and in its stderr log), only a 401 or a usage limit counts (a
transient 429 is retried by Codex itself). ``Reconnecting... waiting for network`` (Codex has
given up its quick retries and now waits for the network, however long that takes) →
``offline``, once. Outside a git repository (or a folder Codex trusts)
``codex exec`` refuses to start (``Not inside a trusted directory…``) → ``fatal``, with the two
ways out a Ralph user has.
"""

from __future__ import annotations

import re
import shlex
import time
from typing import Any

from ralph_lsp.agents._json import get_dict, get_int, get_list, get_str, parse_object
from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    LineParser,
    Refusal,
    ResultInfo,
    first_line,
    log_line,
    log_lines,
)
from ralph_lsp.agents.claude import ProblemGate, relative_path, summary_line
from ralph_lsp.agents.limits import RATE_LIMIT_WORDS, retry_at_from_text

_AUTH_RE = re.compile(
    r"unauthori[sz]ed|\bnot logged in\b|(?:invalid|incorrect|missing) api key"
    r"|\bstatus:? 401\b|\b401\b(?= unauthori)|codex login|token (?:has )?expired"
    r"|refresh token",
    re.IGNORECASE,
)
_USAGE_RE = re.compile(r"usage limit|hit your limit", re.IGNORECASE)
_RATE_RE = re.compile(RATE_LIMIT_WORDS + r"|try again (?:at|in)\b", re.IGNORECASE)
_OFFLINE_RE = re.compile(r"waiting for (?:the )?network", re.IGNORECASE)
# The API cannot be reached at all (refused, no route, DNS): retried, then ``turn.failed``.
# In a sandboxed run the egress proxy answers for a dead server: "502 Bad Gateway: ralph-lsp
# proxy: cannot reach host:port: …" (ralph_lsp/sandbox/proxy.py).
_UNREACHABLE_RE = re.compile(
    r"connection failed|error sending request|connection refused|dns error"
    r"|ralph-lsp proxy: cannot reach",
    re.IGNORECASE,
)
# ``Reconnecting... 2/5 (<the error>)``: Codex's retry notice around the real message.
_RECONNECT_RE = re.compile(r"^Reconnecting\.\.\.\s*(?:\d+/\d+\s*)?\((.*)\)\s*$", re.DOTALL)
_REQUEST_ID_RE = re.compile(r",\s*(?:url: \S+|request id: \S+)", re.IGNORECASE)
# Codex gives up on a 429 only after honouring its retry-after several times: try again soon.
_RETRIED_429_RE = re.compile(r"exceeded retry limit", re.IGNORECASE)
CODEX_RETRIED_WAIT_S = 5.0
_UNTRUSTED_RE = re.compile(r"not inside a trusted directory", re.IGNORECASE)
UNTRUSTED_HINT = (
    "Codex runs only inside a git repository (or a folder it trusts): make the project one"
    " (`git init`), or give Codex --skip-git-repo-check with the setting ralph.agentCommand,"
    ' e.g. ["codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check",'
    ' "{prompt}"] (CLI: --agent codex --agent-command'
    " 'codex exec --json --sandbox workspace-write --skip-git-repo-check {prompt}')"
)
_SHELL_WRAPPER = re.compile(r"^(?:/\S*/)?(?:ba|z|)sh$")
# Codex 0.169 refuses a patch or an escalation with no JSON event, only a stderr line:
# ``<time> ERROR codex_core::tools::router: error=patch rejected: writing outside of the
# project; …`` / ``error=approval policy is Never; reject command — …``. Neither names the file
# or the command.
_ROUTER_REFUSAL_RE = re.compile(
    r"codex_core::tools::router: error=(?:(patch rejected)|(?:approval policy is \w+; )?"
    r"(reject command))",
    re.IGNORECASE,
)
# A command the sandbox stopped writing outside the workspace: it ran, and failed with this.
_SANDBOX_DENIED_RE = re.compile(r"Read-only file system", re.IGNORECASE)


def _unwrap_command(command: Any) -> str:
    """The script of ``bash -lc '<script>'`` (how Codex runs commands), else the command as
    given; a list command is joined shell-style for display."""
    if isinstance(command, list):
        parts = [str(p) for p in command]
    elif isinstance(command, str):
        try:
            parts = shlex.split(command[:8000])
        except ValueError:
            return command
    else:
        return ""
    if len(parts) == 3 and _SHELL_WRAPPER.match(parts[0]) and parts[1] in ("-lc", "-c"):
        return parts[2]
    if isinstance(command, str):
        return command
    return shlex.join(parts)


class CodexParser(LineParser):
    """Parses ``codex exec --json`` JSONL. Never raises."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd
        self._problem = ProblemGate()
        self._started_commands: set[str] = set()
        self._started_tools: set[str] = set()
        self._last_message: str | None = None
        self._t0 = time.monotonic()
        self.saw_result = False

    # -- failure classification --------------------------------------------------------------

    def _classify(self, text: str, reconnecting: bool = False) -> list[AgentEvent]:
        text = text[:4000]
        reason = clean_reason(text)
        if _UNTRUSTED_RE.search(text):
            return self._problem("fatal", UNTRUSTED_HINT)
        if reconnecting and (_OFFLINE_RE.search(text) or _UNREACHABLE_RE.search(text)):
            return self._problem("offline", reason)
        if _AUTH_RE.search(text):
            return self._problem("auth", reason)
        if _USAGE_RE.search(text) or (not reconnecting and _RATE_RE.search(text)):
            retry_at = retry_at_from_text(text)
            if retry_at is None and _RETRIED_429_RE.search(text):
                retry_at = time.time() + CODEX_RETRIED_WAIT_S
            return self._problem("rate_limit", reason, retry_at)
        if not reconnecting and _UNREACHABLE_RE.search(text):
            return self._problem("fatal", "cannot reach the model API: " + reason)
        return []

    # -- streams -----------------------------------------------------------------------------

    def feed_stderr(self, line: str) -> list[AgentEvent]:
        # Codex logs its own retries on stderr: only what does not pass by retrying counts.
        refused = _ROUTER_REFUSAL_RE.search(line[:4000])
        if refused:
            return [log_line(line, "stderr"), Refusal("Edit" if refused.group(1) else "Bash")]
        return [log_line(line, "stderr"), *self._classify(line, reconnecting=True)]

    def feed_stdout(self, line: str) -> list[AgentEvent]:
        obj = parse_object(line)
        if obj is None:
            return [log_line(line, "raw")] if line.strip() else []
        kind = get_str(obj, "type")
        if kind == "thread.started":
            return [log_line("Codex session started", "info")]
        if kind == "item.started":
            return self._item_started(get_dict(obj, "item") or {})
        if kind == "item.completed":
            return self._item_completed(get_dict(obj, "item") or {})
        if kind == "turn.completed":
            return self._turn_completed(obj)
        if kind == "turn.failed":
            error = get_dict(obj, "error")
            message = get_str(error, "message") or get_str(obj, "message") or "turn failed"
            return self._turn_failed(message)
        if kind == "error":
            message = get_str(obj, "message") or ""
            reconnecting = message.startswith("Reconnecting")
            events: list[AgentEvent] = [
                log_line(message or "error", "info" if reconnecting else "stderr")
            ]
            return events + self._classify(message, reconnecting)
        return []

    # -- items -------------------------------------------------------------------------------

    def _command_line(self, item: dict[str, Any]) -> AgentEvent:
        command = _unwrap_command(item.get("command"))
        return log_line("$ " + first_line(command, 1000), "command")

    def _item_started(self, item: dict[str, Any]) -> list[AgentEvent]:
        itype = get_str(item, "type")
        item_id = get_str(item, "id") or ""
        if itype == "command_execution":
            self._started_commands.add(item_id)
            return [Activity(), self._command_line(item)]
        if itype in ("mcp_tool_call", "web_search"):
            self._started_tools.add(item_id)
            return [Activity(), self._tool_line(itype, item)]
        return []

    def _tool_line(self, itype: str, item: dict[str, Any]) -> AgentEvent:
        if itype == "web_search":
            return log_line(f"→ WebSearch {get_str(item, 'query') or ''}".rstrip(), "tool")
        server = get_str(item, "server") or ""
        tool = get_str(item, "tool") or "tool"
        return log_line(f"→ mcp {server + '.' if server else ''}{tool}", "tool")

    def _item_completed(self, item: dict[str, Any]) -> list[AgentEvent]:
        itype = get_str(item, "type")
        item_id = get_str(item, "id") or ""
        events: list[AgentEvent] = []
        if itype == "agent_message":
            text = get_str(item, "text") or ""
            if text.strip():
                self._last_message = text
            return log_lines(text, "text")
        if itype == "command_execution":
            if item_id not in self._started_commands or not item_id:
                events += [Activity(), self._command_line(item)]
            code = get_int(item, "exit_code")
            status = get_str(item, "status")
            output = get_str(item, "aggregated_output") or ""
            # the approval policy refused it, or the sandbox stopped it
            sandboxed = status == "failed" and _SANDBOX_DENIED_RE.search(output[-4000:])
            if status == "declined" or sandboxed:
                events.append(Refusal("Bash", _unwrap_command(item.get("command"))))
            if code not in (0, None):
                events.append(log_line(f"  exit code {code}", "command"))
            elif status in ("declined", "failed") and code is None:
                events.append(log_line(f"  {status}", "command"))
            return events
        if itype == "file_change":
            changes = [c for c in get_list(item, "changes") if isinstance(c, dict)]
            events.append(Activity())
            for change in changes[:100]:
                path = relative_path(get_str(change, "path") or "?", self.cwd)
                events.append(log_line(f"→ {get_str(change, 'kind') or 'change'} {path}", "tool"))
            if get_str(item, "status") == "failed":
                events.append(log_line("✗ file change failed", "tool"))
            return events
        if itype in ("mcp_tool_call", "web_search"):
            if item_id not in self._started_tools or not item_id:
                events += [Activity(), self._tool_line(itype, item)]
            if get_str(item, "status") == "failed":
                err = get_dict(item, "error")
                events.append(log_line(f"✗ {get_str(err, 'message') or 'failed'}", "tool"))
            return events
        if itype == "error":
            message = get_str(item, "message") or "error"
            return [log_line(message, "info"), *self._classify(message, reconnecting=True)]
        return []

    # -- turns -------------------------------------------------------------------------------

    def _elapsed_ms(self) -> float:
        return (time.monotonic() - self._t0) * 1000.0

    def _turn_completed(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self.saw_result = True
        usage = get_dict(obj, "usage")
        info = ResultInfo(
            is_error=False,
            cost_usd=None,
            num_turns=None,
            usage=usage,
            duration_ms=None,
            text=self._last_message,
        )
        extra: list[str] = []
        tokens_in = get_int(usage, "input_tokens")
        tokens_out = get_int(usage, "output_tokens")
        if tokens_in is not None or tokens_out is not None:
            extra.append(f"{tokens_in or 0:,} input / {tokens_out or 0:,} output tokens")
        return [info, summary_line(self._elapsed_ms(), None, None, extra)]

    def _turn_failed(self, message: str) -> list[AgentEvent]:
        self.saw_result = True
        message = clean_reason(message)
        info = ResultInfo(
            is_error=True, cost_usd=None, num_turns=None, usage=None, duration_ms=None, text=message
        )
        return [
            log_line(f"turn failed: {message}", "stderr"),
            info,
            summary_line(self._elapsed_ms(), None, None, ["failed: " + first_line(message, 160)]),
            *self._classify(message),
        ]


def clean_reason(text: str) -> str:
    """The error inside Codex's ``Reconnecting... n/m (…)`` notice, on one line, without the
    request id and URL it appends."""
    text = text.strip()
    m = _RECONNECT_RE.match(text)
    if m:
        text = m.group(1)
    text = _REQUEST_ID_RE.sub("", text)
    return " ".join(text.split())[:500]
